"""PDF extraction with pypdfium2: pages to fragments, reading order, text with layout.

The steps are separate modules so each rule can be read (and tested) alone:
``pdf_read`` (glyphs to line fragments), ``pdf_layout`` (furniture, blocks, tables,
columns), ``pdf_text`` (headings, paragraphs, hyphenation, flow across pages).
"""

from __future__ import annotations

import time
from typing import Any

import pypdfium2 as pdfium

from stichtag.extract.builder import TextBuilder
from stichtag.extract.errors import ExtractionRefused
from stichtag.extract.layout import Page, quantize
from stichtag.extract.limits import MAX_CHARS_PER_PAGE, MAX_PDF_PAGES, MAX_SECONDS
from stichtag.extract.pdf_layout import find_furniture, line_gap, page_blocks
from stichtag.extract.pdf_read import PDFIUM_LOCK, Frag, open_pdf, read_page
from stichtag.extract.pdf_text import PageBlocks, body_size, emit, heading_levels
from stichtag.extract.result import Extracted, finish, library_version

__all__ = ["PDF_EXTRACTOR_ID", "extract_pdf"]

PDF_EXTRACTOR_ID = "pdf-layout-1"
"""Bump on any change to the reading-order, heading or joining rules: text changes."""


def _ranges(pages: list[int]) -> str:
    """1, 2, 3, 5 -> '1-3, 5'."""
    out: list[str] = []
    for p in pages:
        if out and out[-1].split("-")[-1] == str(p - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{p}"
        else:
            out.append(str(p))
    return ", ".join(out)


def _read(data: bytes, password: str | None) -> tuple[list[list[Frag]], list[Page], str]:
    """Every page's fragments and geometry, and the producer named in the metadata."""
    deadline = time.monotonic() + MAX_SECONDS
    with PDFIUM_LOCK:
        doc = open_pdf(data, password)
        try:
            n = len(doc)
            if n > MAX_PDF_PAGES:
                raise ExtractionRefused("file", f"the PDF has {n} pages, more than the "
                                        f"limit of {MAX_PDF_PAGES}", limit=True)
            frags: list[list[Frag]] = []
            pages: list[Page] = []
            for i in range(n):
                if time.monotonic() > deadline:
                    raise ExtractionRefused("file", f"extraction took longer than "
                                            f"{MAX_SECONDS:g} s", limit=True)
                frags.append(_page(doc, i, pages, deadline))
            producer = doc.get_metadata_value("Producer") or ""
        finally:
            doc.close()
    return frags, pages, producer


def _page(doc: pdfium.PdfDocument, i: int, pages: list[Page], deadline: float) -> list[Frag]:
    try:
        page = doc[i]
    except pdfium.PdfiumError:
        raise ExtractionRefused("file", f"page {i + 1} of the PDF cannot be read "
                                "(corrupt)") from None
    try:
        x0, y0, x1, y1 = page.get_bbox()
        pages.append(Page(number=i + 1, x0=quantize(x0) / 10, y0=quantize(y0) / 10,
                          width=quantize(x1 - x0) / 10, height=quantize(y1 - y0) / 10,
                          rotation=page.get_rotation()))
        textpage = page.get_textpage()
        try:
            return read_page(textpage, deadline=deadline, page_no=i + 1)
        finally:
            textpage.close()
    except pdfium.PdfiumError:
        raise ExtractionRefused("file", f"the text of page {i + 1} cannot be read "
                                "(corrupt)") from None
    finally:
        page.close()


def extract_pdf(data: bytes, *, password: str | None = None) -> Extracted:
    """Extract a PDF's text in reading order, with a page/box layout map.

    Refuses (``ExtractionRefused``) encrypted PDFs without the right password, corrupt
    files, documents over the limits in ``stichtag.extract.limits`` and PDFs without any text
    layer (scans: no OCR here); pages without text are listed in ``empty_pages``.
    """
    frags, pages, producer = _read(data, password)
    empty = [p.number for p, f in zip(pages, frags, strict=True) if not f]
    if len(empty) == len(pages):
        raise ExtractionRefused("file", "the PDF has no text layer (pages without text: "
                                f"{_ranges(empty)}); it needs OCR, which this server does "
                                "not do")
    boxes = [(p.x0, p.y0, p.x0 + p.width, p.y0 + p.height) for p in pages]
    furniture = find_furniture(frags, boxes)
    bodies = [[f for i, f in enumerate(page_frags) if i not in removed]
              for page_frags, removed in zip(frags, furniture, strict=True)]
    usual_gap = line_gap(bodies)
    builder = TextBuilder()
    ordered: list[PageBlocks] = []
    for page, page_frags, removed, body in zip(pages, frags, furniture, bodies, strict=True):
        builder.page(page)
        for i, kind in sorted(removed.items()):
            f = page_frags[i]
            builder.furniture(kind, page.number, (quantize(f.x0), quantize(f.y0),
                                                  quantize(f.x1), quantize(f.y1)), f.text)
        ordered.append(PageBlocks(page=page.number, blocks=tuple(page_blocks(body, usual_gap)),
                                  y0=page.y0, height=page.height))
    levels = heading_levels(ordered)
    tables = sum(1 for p in ordered for b in p.blocks if b.kind == "table")
    markdown = bool(levels) or tables > 0
    emit(builder, ordered, levels, markdown=markdown, body=body_size(ordered))
    text, layout = builder.build()
    text = text.rstrip("\n") + "\n" if text.strip() else text
    provenance: dict[str, Any] = {
        "extractor_id": PDF_EXTRACTOR_ID,
        "libraries": {"pypdfium2": library_version("pypdfium2"),
                      "pdfium": str(pdfium.PDFIUM_INFO)},
        "pages": len(pages),
        "empty_pages": empty,
        "furniture": {kind: sum(1 for r in furniture for k in r.values() if k == kind)
                      for kind in ("header", "footer", "page_number")},
        "headings": len(levels),
        "tables": tables,
        "producer": producer,
        "limits": {"max_pages": MAX_PDF_PAGES, "max_chars_per_page": MAX_CHARS_PER_PAGE,
                   "max_seconds": MAX_SECONDS},
    }
    return finish(text, layout=layout, media_type="text/markdown" if markdown else "text/plain",
                  source_media_type="application/pdf", provenance=provenance,
                  empty_reason="the PDF yields no text")
