"""Ports of the extraction room (app/stichtag/extract): turning files into text, rendering pages."""

from __future__ import annotations

from typing import Protocol

from stichtag.domain.extraction import Extracted


class Extractor(Protocol):
    """Turns the bytes of a PDF, HTML page or DOCX into a version's text and layout map
    (app/stichtag/extract). CPU-bound and blocking: call it outside any transaction."""

    def sniff(self, data: bytes) -> str | None:
        """The media type the bytes are (magic bytes, never a file name), or None."""
        ...

    def extract(self, data: bytes, media_type: str | None, *,
                password: str | None = None) -> Extracted:
        """The extracted document; raises ExtractionRefused (``field``, ``reason``,
        ``limit``) for anything that cannot become a version. A declared ``media_type``
        must agree with the bytes; None sniffs it."""
        ...


class PageRenderer(Protocol):
    """Renders one page of a PDF original as a PNG (pdfium), for the console."""

    def render_png(self, data: bytes, page: int, *, max_pixels: int) -> bytes:
        """Page ``page`` (1-based), unrotated (the frame of the layout map's boxes), scaled
        so that its longer side has at most ``max_pixels`` pixels. Raises ExtractionRefused
        when the PDF cannot be opened (for example, it is encrypted)."""
        ...
