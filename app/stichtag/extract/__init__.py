"""The document extraction room: PDF, HTML and DOCX bytes to a version's text plus a
layout map from its offsets back into the original.

One entry point, ``extract``; deterministic (same bytes, same text and layout). The
room is an adapter (it uses pypdfium2, lxml and python-docx); ``stichtag.domain`` stays
pure. Nothing here stores, indexes or serves: the ingest service calls ``extract``
and stores ``text`` as the version (segmented as ``media_type``) and
``layout.dumps()`` beside it. See docs/extraction.md.
"""

from __future__ import annotations

from stichtag.domain.text import TextError, normalize
from stichtag.extract.docx import DOCX_EXTRACTOR_ID, DOCX_MEDIA_TYPE, extract_docx
from stichtag.extract.errors import ExtractionRefused
from stichtag.extract.html import HTML_EXTRACTOR_ID, extract_html
from stichtag.extract.layout import LAYOUT_FORMAT, Box, Layout, Page, Region
from stichtag.extract.limits import MAX_INPUT_BYTES
from stichtag.extract.pdf import PDF_EXTRACTOR_ID, extract_pdf
from stichtag.extract.result import Extracted
from stichtag.extract.sniff import HTML, PDF, resolve, sniff

__all__ = [
    "DOCX_MEDIA_TYPE",
    "EXTRACTOR_IDS",
    "LAYOUT_FORMAT",
    "TEXT_EXTRACTOR_ID",
    "Box",
    "Extracted",
    "ExtractionRefused",
    "Layout",
    "Page",
    "Region",
    "extract",
    "resolve",
    "sniff",
]

TEXT_EXTRACTOR_ID = "text-1"
"""Markdown and plain text pass through ``normalize`` unchanged otherwise."""

EXTRACTOR_IDS: dict[str, str] = {
    PDF: PDF_EXTRACTOR_ID,
    HTML: HTML_EXTRACTOR_ID,
    DOCX_MEDIA_TYPE: DOCX_EXTRACTOR_ID,
    "text/markdown": TEXT_EXTRACTOR_ID,
    "text/plain": TEXT_EXTRACTOR_ID,
}
"""Extractor id per source media type; a change of any id changes extracted text."""


def extract(data: bytes, media_type: str | None, *, password: str | None = None) -> Extracted:
    """Extract the text of a PDF, HTML, DOCX (or markdown/plain text) document.

    The type comes from the bytes (``sniff``); a declared ``media_type`` must agree.
    ``password`` opens encrypted PDFs. Raises ``ExtractionRefused`` (``field``,
    ``reason``, ``limit``) for anything that cannot become a version.
    """
    if not data:
        raise ExtractionRefused("file", "the file is empty")
    if len(data) > MAX_INPUT_BYTES:
        raise ExtractionRefused("file", f"the file has {len(data)} bytes, more than the limit "
                                f"of {MAX_INPUT_BYTES}", limit=True)
    kind = resolve(data, media_type)
    if kind == PDF:
        return extract_pdf(data, password=password)
    if kind == HTML:
        return extract_html(data, media_type=media_type)
    if kind == DOCX_MEDIA_TYPE:
        return extract_docx(data)
    try:
        text = normalize(data, field="file")
    except TextError as exc:
        raise ExtractionRefused("file", exc.reason) from None
    kind = "text/markdown" if kind == "text/x-markdown" else kind
    return Extracted(text=text, media_type=kind, source_media_type=kind, layout=Layout(),
                     provenance={"extractor_id": TEXT_EXTRACTOR_ID})
