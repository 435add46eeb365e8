"""Media type sniffing from magic bytes and the declared-type check."""

from __future__ import annotations

import io
import zipfile

import pytest

from stichtag.extract import DOCX_MEDIA_TYPE, ExtractionRefused, extract, resolve, sniff


def _zip(names: list[str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in names:
            z.writestr(name, b"<x/>")
    return out.getvalue()


@pytest.mark.parametrize(("data", "kind"), [
    (b"%PDF-1.7\n...", "application/pdf"),
    (b"\r\n%%junk\n%PDF-1.4\n", "application/pdf"),
    (_zip(["[Content_Types].xml", "word/document.xml"]), DOCX_MEDIA_TYPE),
    (_zip(["content.xml"]), None),
    (b"<!DOCTYPE html><html><body>x</body></html>", "text/html"),
    (b"\xef\xbb\xbf  \n<!-- c -->\n<HTML lang=de>", "text/html"),
    ("<!doctype html>".encode("utf-16"), "text/html"),
    (b"# \xc3\x9cberschrift\n\nText.", "text/plain"),
    (b"<p>a fragment is text, not a page</p>", "text/plain"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", None),
    (b"\xff\xfe\x00\x00garbage\x00", None),
])
def test_sniff(data: bytes, kind: str | None) -> None:
    assert sniff(data) == kind


def test_declared_type_must_agree_with_the_bytes() -> None:
    pdf = b"%PDF-1.7\n"
    assert resolve(pdf, "application/pdf") == "application/pdf"
    assert resolve(pdf, "Application/PDF; x=y") == "application/pdf"
    assert resolve(b"<!doctype html><p>x", "text/markdown") == "text/markdown"
    assert resolve(b"<title>t</title><p>x", "text/html") == "text/html"  # no <html> tag
    with pytest.raises(ExtractionRefused) as refused:
        resolve(pdf, "text/html")
    assert refused.value.field == "media_type" and "application/pdf" in refused.value.reason
    with pytest.raises(ExtractionRefused, match="declared 'application/pdf'"):
        resolve(b"<!doctype html><p>x", "application/pdf")
    with pytest.raises(ExtractionRefused, match="unsupported media type"):
        resolve(pdf, "image/png")
    with pytest.raises(ExtractionRefused) as unknown:
        resolve(b"\x89PNG\r\n\x1a\n\x00", None)
    assert unknown.value.field == "file"


def test_text_passes_through_normalized() -> None:
    result = extract("\ufeff# Titel\r\n\r\nSatz.".encode(), "text/x-markdown")
    assert result.text == "# Titel\n\nSatz."
    assert result.media_type == "text/markdown"
    with pytest.raises(ExtractionRefused, match="empty"):
        extract(b"", None)
    with pytest.raises(ExtractionRefused, match="empty text"):
        extract(b"   \n", "text/plain")
