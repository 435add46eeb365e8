"""Text normalization, content addresses and offset conversion.

The normalized text *is* the stored version: every offset the system ever hands
out is a code-point offset into exactly this string, so normalization happens
once on ingest and never again when serving.
"""

from __future__ import annotations

import bisect
import re
import unicodedata

import blake3

__all__ = [
    "TextError",
    "Utf16Map",
    "normalize",
    "text_hash",
    "utf16_len",
    "version_id",
]

_BOM = "\ufeff"
# A lone CR (old Mac line ends) and CRLF both become LF; one regex pass keeps
# "\r\r\n" from turning into three line breaks.
_NEWLINES = re.compile(r"\r\n?")
# Surrogates cannot be encoded as UTF-8, so a str carrying them could never get
# a version id; NUL cannot be stored in a PostgreSQL text column.
_FORBIDDEN = re.compile("[\ud800-\udfff\x00]")
# Code points outside the BMP take two UTF-16 code units.
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


class TextError(ValueError):
    """Input text that cannot become a version; names the field and the reason."""

    field: str
    reason: str

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def normalize(raw: bytes | str, *, field: str = "text") -> str:
    """Return the canonical form of ingested text.

    Bytes are decoded as strict UTF-8; one leading BOM is removed; CRLF and lone
    CR become LF; the result is NFC. Nothing else is stripped or rewritten.
    Raises TextError (with ``field``) for invalid UTF-8, surrogates, NUL, or
    text that is empty or whitespace only.
    """
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:
            raise TextError(field, f"invalid UTF-8 at byte {exc.start}") from None
    else:
        text = raw
    bad = _FORBIDDEN.search(text)
    if bad is not None:
        what = "NUL character" if bad.group() == "\x00" else "lone surrogate"
        raise TextError(field, f"{what} at code point {bad.start()}")
    if text.startswith(_BOM):
        text = text[1:]
    text = unicodedata.normalize("NFC", _NEWLINES.sub("\n", text))
    if not text.strip():
        raise TextError(field, "empty text")
    return text


def version_id(text: str) -> str:
    """Content address of a normalized text: ``b3:`` + blake3 hex of its UTF-8."""
    return "b3:" + blake3.blake3(text.encode("utf-8")).hexdigest()


def text_hash(text: str) -> bytes:
    """32-byte blake3 digest of the UTF-8 text (sentence and block hashes)."""
    return blake3.blake3(text.encode("utf-8")).digest()


def utf16_len(s: str) -> int:
    """Length of ``s`` in UTF-16 code units (astral characters count two)."""
    return len(s) + sum(1 for _ in _ASTRAL.finditer(s))


class Utf16Map:
    """Converts code-point offsets of one text to UTF-16 offsets and back.

    Only astral characters make the two differ, and they are rare, so the map
    stores just their positions and answers each query with one bisect.
    """

    __slots__ = ("_astral_cp", "_astral_u16", "_cp_len", "_u16_len")

    def __init__(self, text: str) -> None:
        """Index the astral characters of ``text``."""
        self._astral_cp = [m.start() for m in _ASTRAL.finditer(text)]
        # UTF-16 start of the k-th astral char: every earlier one added a unit.
        self._astral_u16 = [cp + k for k, cp in enumerate(self._astral_cp)]
        self._cp_len = len(text)
        self._u16_len = len(text) + len(self._astral_cp)

    def to_utf16(self, cp_offset: int) -> int:
        """UTF-16 offset of code-point offset ``cp_offset`` (0..len(text))."""
        if not 0 <= cp_offset <= self._cp_len:
            raise ValueError(f"code-point offset {cp_offset} outside 0..{self._cp_len}")
        return cp_offset + bisect.bisect_left(self._astral_cp, cp_offset)

    def to_codepoint(self, u16_offset: int) -> int:
        """Code-point offset of a UTF-16 offset; ValueError inside a surrogate pair."""
        if not 0 <= u16_offset <= self._u16_len:
            raise ValueError(f"UTF-16 offset {u16_offset} outside 0..{self._u16_len}")
        before = bisect.bisect_left(self._astral_u16, u16_offset)
        # The astral char just before starts one unit earlier: we are between
        # its high and low surrogate.
        if before and self._astral_u16[before - 1] == u16_offset - 1:
            raise ValueError(f"UTF-16 offset {u16_offset} splits a surrogate pair")
        return u16_offset - before
