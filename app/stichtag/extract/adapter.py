"""The extraction room behind its ports: ``Extractor`` (text and layout from bytes) and
``PageRenderer`` (a PDF page as a PNG, for the console's citation view).

Both are blocking and CPU-bound; pdfium calls hold ``PDFIUM_LOCK`` (one pdfium per
process, not thread-safe). The server calls them from worker threads, never from the
event loop, and the ingest use case extracts before it opens any transaction.
"""

from __future__ import annotations

import struct
import zlib

import pypdfium2 as pdfium

from stichtag.domain.extraction import Extracted, ExtractionRefused
from stichtag.extract import extract as _extract
from stichtag.extract.pdf_read import PDFIUM_LOCK, open_pdf
from stichtag.extract.sniff import sniff as _sniff

__all__ = ["PdfiumPageRenderer", "RoomExtractor", "png"]


class RoomExtractor:
    """``stichtag.ports.Extractor`` over ``stichtag.extract.extract`` (PDF, HTML, DOCX, text)."""

    def sniff(self, data: bytes) -> str | None:
        """The media type of the bytes by their magic, or None."""
        return _sniff(data)

    def extract(self, data: bytes, media_type: str | None, *,
                password: str | None = None) -> Extracted:
        """See ``stichtag.extract.extract``."""
        return _extract(data, media_type, password=password)


class PdfiumPageRenderer:
    """``stichtag.ports.PageRenderer``: one page rendered by pdfium, encoded as PNG here."""

    def render_png(self, data: bytes, page: int, *, max_pixels: int) -> bytes:
        """Page ``page`` (1-based) unrotated, its longer side ``max_pixels`` pixels."""
        with PDFIUM_LOCK:
            doc = open_pdf(data, None)
            try:
                if not 1 <= page <= len(doc):
                    raise ExtractionRefused("page", f"the PDF has {len(doc)} pages")
                pdf_page = doc[page - 1]
                try:
                    x0, y0, x1, y1 = pdf_page.get_bbox()
                    longer = max(x1 - x0, y1 - y0, 1.0)
                    # pdfium adds ``rotation`` to the page's /Rotate: cancel it, so the
                    # image is in the frame the layout map's boxes use (x right, y up).
                    turn = (360 - pdf_page.get_rotation()) % 360
                    bitmap = pdf_page.render(scale=max_pixels / longer, rotation=turn,
                                             rev_byteorder=True, may_draw_forms=True)
                    try:
                        raw = bytes(bitmap.buffer)
                        width, height, stride = bitmap.width, bitmap.height, bitmap.stride
                        channels = bitmap.n_channels
                    finally:
                        bitmap.close()
                finally:
                    pdf_page.close()
            except pdfium.PdfiumError:
                raise ExtractionRefused("page", "the page cannot be rendered (corrupt)") from None
            finally:
                doc.close()
        return png(raw, width=width, height=height, stride=stride, channels=channels)


_COLOUR_TYPES = {1: 0, 3: 2, 4: 6}  # channels -> PNG colour type (grey, RGB, RGBA)


def png(raw: bytes, *, width: int, height: int, stride: int, channels: int) -> bytes:
    """A PNG of a top-down 8-bit pixel buffer (stdlib only: no imaging library needed)."""
    row = width * channels
    lines = b"".join(b"\x00" + raw[y * stride:y * stride + row] for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPES[channels], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(lines, 6)) + chunk(b"IEND", b""))
