"""Normalization, content addresses and UTF-16 offsets (DESIGN section 4)."""

from __future__ import annotations

import unicodedata

import blake3
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stichtag.domain.text import TextError, Utf16Map, normalize, text_hash, utf16_len, version_id

# Text without lone surrogates: those cannot be encoded, so no stored text has them.
_TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=60)


def _reference_u16(text: str, cp: int) -> int:
    return len(text[:cp].encode("utf-16-le")) // 2


class TestNormalize:
    def test_strips_one_leading_bom_from_bytes_and_str(self) -> None:
        assert normalize(b"\xef\xbb\xbfAbs. 1") == "Abs. 1"
        assert normalize("\ufeffAbs. 1") == "Abs. 1"
        # Only one BOM is a marker; a second one is content and stays.
        assert normalize("\ufeff\ufeffx") == "\ufeffx"

    def test_bom_inside_text_is_kept(self) -> None:
        assert normalize("a\ufeffb") == "a\ufeffb"

    def test_crlf_and_lone_cr_become_lf(self) -> None:
        assert normalize(b"a\r\nb\rc\n") == "a\nb\nc\n"
        assert normalize("x\r\r\ny") == "x\n\ny"

    def test_nfd_becomes_nfc(self) -> None:
        nfd = unicodedata.normalize("NFD", "Höchstzinssatz für Verträge")
        assert nfd != "Höchstzinssatz für Verträge"
        assert normalize(nfd) == "Höchstzinssatz für Verträge"
        assert normalize(nfd.encode("utf-8")) == "Höchstzinssatz für Verträge"

    def test_other_content_is_untouched(self) -> None:
        raw = "  (1) Satz\t eins.  \n\n\n  Zwei.  "
        assert normalize(raw) == raw

    def test_invalid_utf8_names_field_and_byte(self) -> None:
        with pytest.raises(TextError) as info:
            normalize(b"abc\xffdef", field="body")
        assert info.value.field == "body"
        assert info.value.reason == "invalid UTF-8 at byte 3"
        assert "body" in str(info.value)
        assert "byte 3" in str(info.value)

    def test_truncated_multibyte_sequence_is_rejected(self) -> None:
        with pytest.raises(TextError, match="invalid UTF-8 at byte 2"):
            normalize("ab€".encode()[:-1])

    @pytest.mark.parametrize("raw", [b"", "", " \n\t ", b"\xef\xbb\xbf", "\ufeff\r\n"])
    def test_empty_or_whitespace_only_is_rejected(self, raw: bytes | str) -> None:
        with pytest.raises(TextError) as info:
            normalize(raw, field="text")
        assert info.value.reason == "empty text"
        assert info.value.field == "text"

    def test_surrogates_and_nul_are_rejected(self) -> None:
        with pytest.raises(TextError, match="lone surrogate at code point 1"):
            normalize("a\ud800b")
        with pytest.raises(TextError, match="NUL character at code point 2"):
            normalize("ab\x00")

    def test_text_error_is_a_value_error(self) -> None:
        assert issubclass(TextError, ValueError)

    @given(_TEXT)
    def test_idempotent(self, raw: str) -> None:
        try:
            once = normalize(raw)
        except TextError:
            return
        assert normalize(once) == once
        assert "\r" not in once


class TestHashes:
    def test_version_id_is_blake3_of_utf8(self) -> None:
        text = "§ 2 Höchstzinssatz 0,25 %"
        assert version_id(text) == "b3:" + blake3.blake3(text.encode("utf-8")).hexdigest()
        assert version_id(text) == version_id(str(text))
        assert len(version_id(text)) == 3 + 64

    def test_version_id_known_value(self) -> None:
        # Pinned so an accidental change of encoding or prefix cannot go unnoticed.
        assert version_id("") == (
            "b3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        )

    def test_version_id_separates_nfc_and_nfd(self) -> None:
        assert version_id("ü") != version_id(unicodedata.normalize("NFD", "ü"))

    def test_text_hash_is_32_byte_digest(self) -> None:
        digest = text_hash("Satz.")
        assert isinstance(digest, bytes)
        assert len(digest) == 32
        assert digest.hex() == version_id("Satz.")[3:]
        assert text_hash("Satz!") != digest


class TestUtf16:
    def test_utf16_len(self) -> None:
        assert utf16_len("") == 0
        assert utf16_len("abc") == 3
        assert utf16_len("\U0001d518") == 2
        assert utf16_len("a😀b\U0001d518") == 6
        assert utf16_len("e\u0301") == 2  # a combining mark is one unit

    def test_map_round_trip_on_astral_chars(self) -> None:
        text = "\U0001d518 ist 😀, é und e\u0301."
        m = Utf16Map(text)
        assert [m.to_utf16(i) for i in range(4)] == [0, 2, 3, 4]
        for i in range(len(text) + 1):
            assert m.to_utf16(i) == _reference_u16(text, i)
            assert m.to_codepoint(m.to_utf16(i)) == i
        assert m.to_utf16(len(text)) == utf16_len(text)

    def test_offset_inside_surrogate_pair_is_rejected(self) -> None:
        m = Utf16Map("a😀b")
        assert m.to_codepoint(1) == 1
        with pytest.raises(ValueError, match="surrogate pair"):
            m.to_codepoint(2)
        assert m.to_codepoint(3) == 2

    def test_out_of_range_offsets_are_rejected(self) -> None:
        m = Utf16Map("😀")
        with pytest.raises(ValueError):
            m.to_utf16(2)
        with pytest.raises(ValueError):
            m.to_utf16(-1)
        with pytest.raises(ValueError):
            m.to_codepoint(3)
        assert m.to_codepoint(2) == 1

    def test_quote_slices_match_javascript_view(self) -> None:
        # A JS client slices UTF-16 units; both views must select the same quote.
        text = "Vorwort 😀😀. (1) Der Satz \U0001d518 gilt."
        start = text.index("(1)")
        end = len(text)
        m = Utf16Map(text)
        units = text.encode("utf-16-le")
        quote = units[2 * m.to_utf16(start) : 2 * m.to_utf16(end)].decode("utf-16-le")
        assert quote == text[start:end]

    @given(_TEXT, st.data())
    def test_property_round_trip(self, text: str, data: st.DataObject) -> None:
        m = Utf16Map(text)
        i = data.draw(st.integers(0, len(text)))
        u = m.to_utf16(i)
        assert u == _reference_u16(text, i)
        assert m.to_codepoint(u) == i

    @given(_TEXT)
    def test_property_every_unit_offset(self, text: str) -> None:
        m = Utf16Map(text)
        boundaries = {_reference_u16(text, i): i for i in range(len(text) + 1)}
        for u in range(utf16_len(text) + 1):
            if u in boundaries:
                assert m.to_codepoint(u) == boundaries[u]
            else:
                with pytest.raises(ValueError):
                    m.to_codepoint(u)
