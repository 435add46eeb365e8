"""Extracted documents as the use cases see them: the result of an extractor and its refusal.

The extraction room (``app/stichtag/extract``, pypdfium2, lxml, python-docx) produces these; the
ingest use case (``stichtag.services.documents``) consumes them through the ``Extractor``
port, so both are plain data here. See docs/extraction.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import blake3

from stichtag.domain.layout import Layout

__all__ = ["DOCX", "HTML", "PDF", "Extracted", "ExtractionRefused", "base_media_type",
           "json_safe", "original_id"]

PDF = "application/pdf"
HTML = "text/html"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
SOURCE_TYPES = (PDF, HTML, DOCX)
"""Media types whose files are kept as originals beside the version extracted from them."""


def original_id(data: bytes) -> str:
    """Content address of an uploaded file: ``b3:`` + blake3 hex of its exact bytes."""
    return "b3:" + blake3.blake3(data).hexdigest()


def base_media_type(media_type: str) -> str:
    """``Text/HTML; charset=utf-8`` -> ``text/html``."""
    return media_type.split(";", 1)[0].strip().lower()


@dataclass(frozen=True, kw_only=True)
class Extracted:
    """Text extracted from a PDF, HTML or DOCX document, ready to become a version.

    ``text`` is already in the form ``stichtag.domain.text.normalize`` produces (NFC, LF, no
    BOM), so ``normalize(text) == text`` and its offsets are the version's offsets.
    ``media_type`` is what to segment it as (``text/markdown`` when headings or table
    rows were written as markdown, else ``text/plain``); ``source_media_type`` is the
    original's. ``layout`` maps offsets back into the original; ``provenance`` (treat
    as read-only, JSON-ready) names the extractor id, the libraries and their versions,
    page counts and what was removed.
    """

    text: str
    media_type: str
    source_media_type: str
    layout: Layout
    provenance: dict[str, Any]


# The brief and the API name it for what happens (a refusal), not for a fault: N818 off.
class ExtractionRefused(ValueError):
    """A document that cannot be extracted: encrypted, no text layer, corrupt, too big.

    ``field`` names the request part at fault (``file``, ``media_type``, ``password``) and
    ``reason`` says why in words a user can act on; the API maps it to a 4xx (422 for
    content it cannot read, 413 for documents over a limit, which ``limit`` marks).
    """

    field: str
    reason: str
    limit: bool

    def __init__(self, field: str, reason: str, *, limit: bool = False) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason
        self.limit = limit


def json_safe(value: Any) -> Any:
    """``value`` with every string storable in PostgreSQL ``jsonb``: NUL and lone
    surrogates (a PDF's metadata may hold either) become U+FFFD; the rest is unchanged."""
    if isinstance(value, str):
        if "\x00" in value or any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            return "".join("\ufffd" if c == "\x00" or 0xD800 <= ord(c) <= 0xDFFF else c
                           for c in value)
        return value
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
