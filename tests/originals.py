"""Files for the end-to-end tests of originals (docs/extraction.md, "How the server uses it"): law
editions as PDF, DOCX and
HTML (typeset from the real law corpus by tests/extract_docs.py), bad files of every
kind the ingest refuses, and a re-read of a citation's boxes with pdfium."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import pypdfium2 as pdfium
from fpdf import FPDF

from tests.conftest import shared_path
from tests.extract_docs import LAW, LawBlock, law_blocks, law_docx, law_html, law_pdf, strip_key

# Passwords of generated test PDFs, not secrets.
USER_PASSWORD = "lesen"  # noqa: S105
OWNER_PASSWORD = "eigentuemer"  # noqa: S105
LETTER_2COL: dict[str, Any] = {"columns": 2, "size": 9, "page": (612.0, 792.0)}
DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def vvg_blocks(max_chars: int = 6_000) -> list[LawBlock]:
    """The first paragraphs of the VVG (the shared law corpus)."""
    return law_blocks(shared_path(*LAW), max_chars)


def vvg_pdf(max_chars: int = 6_000, **kwargs: Any) -> bytes:
    """The VVG typeset as a PDF (A4, one column, 10 pt unless told otherwise)."""
    return law_pdf(vvg_blocks(max_chars), **kwargs)


def vvg_docx(max_chars: int = 6_000) -> bytes:
    """The VVG as a Word document."""
    return law_docx(vvg_blocks(max_chars))


def vvg_html(max_chars: int = 6_000) -> bytes:
    """The VVG as an article page inside navigation, scripts and hidden nodes."""
    return law_html(vvg_blocks(max_chars))


def simple_pdf(pages: list[str], *, password: str | None = None) -> bytes:
    """One line of text per page; an empty string is a page with a drawing and no text."""
    pdf = FPDF(unit="pt", format="A4")
    if password is not None:
        pdf.set_encryption(owner_password=OWNER_PASSWORD, user_password=password)
    pdf.set_font("Helvetica", "", 11)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.text(72, 100, text)
        else:
            pdf.rect(72, 72, 200, 100, style="F")
    return bytes(pdf.output())


def zip_bomb_docx(docx: bytes) -> bytes:
    """A DOCX with a member that inflates 4 MiB of zeros from a few KiB."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(docx)) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item.filename))
        dst.writestr("word/media/padding.bin", b"\0" * (4 * 1024 * 1024),
                     compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def reread(pdf: bytes, boxes: list[dict[str, Any]]) -> str:
    """The text pdfium finds inside a citation's boxes (API boxes: points from the page
    box's bottom-left corner), in the boxes' order."""
    doc = pdfium.PdfDocument(pdf)
    try:
        out = []
        for b in boxes:
            page = doc[b["page"] - 1]
            x0, y0, _, _ = page.get_bbox()
            text = page.get_textpage()
            out.append(text.get_text_bounded(x0 + b["x0"], y0 + b["y0"], x0 + b["x1"],
                                             y0 + b["y1"]))
            text.close()
            page.close()
        return "".join(out)
    finally:
        doc.close()


def quote_in_boxes(pdf: bytes, citation: dict[str, Any]) -> bool:
    """Whether the citation's boxes re-read its quote (whitespace and hyphens aside)."""
    return strip_key(citation["quote"]) in strip_key(reread(pdf, citation["boxes"]))
