"""DOCX extraction: the VVG as a Word document, footnotes, zip bombs, corrupt files."""

from __future__ import annotations

import io
import zipfile

import docx
import pytest

from stichtag.domain.prepared import prepare
from stichtag.extract import DOCX_MEDIA_TYPE, ExtractionRefused, extract
from stichtag.extract.docx import extract_docx
from tests.conftest import shared_path
from tests.extract_docs import (
    LAW,
    TABLE,
    law_blocks,
    law_docx,
    sentences,
    shared_share,
    source_markdown,
)

_FOOTNOTES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<w:footnotes xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
    '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:t>---</w:t></w:r></w:p></w:footnote>'
    '<w:footnote w:id="1"><w:p><w:r><w:t>Amtlicher Hinweis: </w:t></w:r>'
    "<w:r><w:t>Richtlinie 2016/97/EU.</w:t></w:r></w:p></w:footnote></w:footnotes>"
)


def _with_member(data: bytes, name: str, content: bytes) -> bytes:
    """The DOCX with one more zip member (python-docx writes no footnotes)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item.filename))
        dst.writestr(name, content, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


@pytest.fixture(scope="module")
def law() -> tuple[list[str], bytes]:
    blocks = law_blocks(shared_path(*LAW), 30_000)
    source = [s for *_, s in sentences(source_markdown(blocks), "text/markdown")]
    return source, law_docx(blocks)


def test_law_docx_sentences_headings_and_table(law: tuple[list[str], bytes]) -> None:
    source, data = law
    result = extract(data, DOCX_MEDIA_TYPE)
    got = sentences(result.text, result.media_type)
    share = shared_share(source, [s for *_, s in got])
    print(f"VVG as DOCX: {share:.2%} of {len(source)} source sentences")
    assert share >= 0.99
    assert result.media_type == "text/markdown"
    assert "# § 1a - Vertriebstätigkeit des Versicherers\n" in result.text
    assert "| " + " | ".join(TABLE[2]) + " |" in result.text
    prepared = prepare(result.text, result.media_type)
    assert ("§ 2 - Rückwärtsversicherung", "(1)") in prepared.paths
    for start, end, _ in got:
        regions = result.layout.locate(start, end)
        assert regions and all(r.path and r.path.startswith("body/") for r in regions)
    assert result.provenance["headings"] > 10 and result.provenance["tables"] == 1


def test_footnotes_follow_the_body(law: tuple[list[str], bytes]) -> None:
    data = _with_member(law[1], "word/footnotes.xml", _FOOTNOTES.encode())
    result = extract_docx(data)
    assert result.text.endswith("[1] Amtlicher Hinweis: Richtlinie 2016/97/EU.\n")
    at = result.text.index("Amtlicher Hinweis")
    assert result.layout.locate(at, at + 5)[0].path == "footnotes/footnote[1]"
    assert "---" not in result.text


def test_zip_bomb_is_refused_before_decompressing(law: tuple[list[str], bytes]) -> None:
    bomb = _with_member(law[1], "word/media/padding.bin", b"\0" * (4 * 1024 * 1024))
    with pytest.raises(ExtractionRefused) as refused:
        extract(bomb, None)
    assert refused.value.limit and "zip bomb" in refused.value.reason
    assert "padding.bin" in refused.value.reason


def test_too_many_members_are_refused(law: tuple[list[str], bytes]) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("word/document.xml", b"<x/>")
        for i in range(10_001):
            z.writestr(f"m/{i}", b"")
    with pytest.raises(ExtractionRefused, match="members"):
        extract(out.getvalue(), DOCX_MEDIA_TYPE)


def test_corrupt_and_foreign_zips_are_refused(law: tuple[list[str], bytes]) -> None:
    with pytest.raises(ExtractionRefused, match="corrupt"):
        extract(law[1][: len(law[1]) // 2], None)
    broken = _with_member(law[1], "word/footnotes.xml", b"<w:footnotes><unclosed>")
    with pytest.raises(ExtractionRefused, match="corrupt"):
        extract(broken, None)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("content.xml", b"<office/>")
    with pytest.raises(ExtractionRefused) as refused:
        extract(out.getvalue(), DOCX_MEDIA_TYPE)
    assert refused.value.field == "media_type"


def test_empty_docx_is_refused() -> None:
    buf = io.BytesIO()
    docx.Document().save(buf)
    with pytest.raises(ExtractionRefused, match="no text"):
        extract(buf.getvalue(), None)
