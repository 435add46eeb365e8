"""What a document is, from its bytes alone; and whether a declared type agrees.

Never from a file name: the extension is whatever the uploader typed. Rules:

* PDF: ``%PDF-`` within the first 1,024 bytes (the PDF spec lets junk precede it,
  and pdfium reads such files).
* DOCX: a ZIP (``PK\\x03\\x04``) with a ``word/document.xml`` member (a damaged zip
  that names that member is a DOCX too, so its refusal can say "corrupt").
* HTML: after a BOM, whitespace and comments, ``<!doctype html`` or ``<html`` (case
  ignored) within the first 1,024 bytes.
* Text: strict UTF-8 without NUL bytes (then the declared markdown/plain type holds).
"""

from __future__ import annotations

import io
import re
import zipfile

from stichtag.extract.docx import DOCX_MEDIA_TYPE
from stichtag.extract.errors import ExtractionRefused

__all__ = ["HTML", "PDF", "SUPPORTED", "TEXT_TYPES", "canonical", "resolve", "sniff"]

PDF = "application/pdf"
HTML = "text/html"
TEXT_TYPES = frozenset({"text/markdown", "text/x-markdown", "text/plain"})
SUPPORTED = frozenset({PDF, HTML, DOCX_MEDIA_TYPE}) | TEXT_TYPES
_ALIASES = {"application/xhtml+xml": HTML, "application/x-pdf": PDF}
_HEAD = 1024
_HTML_START = re.compile(rb"(?:\s|<!--.*?-->)*<(?:!doctype\s+html|html)[\s>]",
                         re.IGNORECASE | re.DOTALL)
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def canonical(media_type: str) -> str:
    """``Text/HTML; charset=utf-8`` -> ``text/html`` (aliases mapped)."""
    base = media_type.split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def _looks_html(head: bytes) -> bool:
    for bom, codec in _BOMS:
        if head.startswith(bom):
            head = head[len(bom):]
            if codec != "utf-8":  # re-read as ASCII-compatible bytes for the pattern
                head = head.decode(codec, errors="ignore").encode("utf-8", errors="ignore")
            break
    return _HTML_START.match(head) is not None


def _zip_kind(data: bytes) -> str | None:
    try:
        names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    except (zipfile.BadZipFile, ValueError, OSError):
        # A damaged DOCX still names its part in a local header: call it a DOCX, so
        # the refusal says "corrupt" rather than "unknown format".
        return DOCX_MEDIA_TYPE if b"word/document.xml" in data else None
    return DOCX_MEDIA_TYPE if "word/document.xml" in names else None


def _is_text(data: bytes) -> bool:
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def sniff(data: bytes) -> str | None:
    """The media type the bytes are, or None when they are none of the supported ones."""
    head = data[:_HEAD]
    if b"%PDF-" in head:
        return PDF
    if head.startswith(b"PK\x03\x04"):
        return _zip_kind(data)
    if _looks_html(head):
        return HTML
    return "text/plain" if _is_text(data) else None


def resolve(data: bytes, declared: str | None) -> str:
    """The media type to extract as: the sniffed one, checked against ``declared``.

    Refuses (field ``media_type``) an unsupported declared type and a declared type the
    bytes contradict; (field ``file``) bytes of no supported type. Declared markdown or
    plain text stays as declared when the bytes are text (HTML source is text too), and
    declared HTML holds for text bytes (a page may omit ``<html>`` and the doctype).
    """
    found = sniff(data)
    if declared is None:
        if found is None:
            raise ExtractionRefused("file", "the bytes are not PDF, DOCX, HTML or UTF-8 text")
        return found
    want = canonical(declared)
    if want not in SUPPORTED:
        raise ExtractionRefused("media_type", f"unsupported media type {want!r} (supported: "
                                f"{', '.join(sorted(SUPPORTED))})")
    if want in TEXT_TYPES and found in ("text/plain", HTML):
        return want
    if want == HTML and found == "text/plain":
        return want  # HTML may omit <html> and the doctype; declared and text, so parse it
    if found != want:
        raise ExtractionRefused("media_type", f"declared {want!r}, but the bytes are "
                                f"{found or 'none of the supported formats'}")
    return want
