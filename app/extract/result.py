"""What every extractor returns, and the checks every result passes before it leaves."""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any

from app.domain.text import TextError, normalize
from app.extract.errors import ExtractionRefused
from app.extract.layout import Layout
from app.extract.limits import MAX_TEXT_CHARS

__all__ = ["Extracted", "finish", "library_version"]


@dataclass(frozen=True, kw_only=True)
class Extracted:
    """Text extracted from a PDF, HTML or DOCX document, ready to become a version.

    ``text`` is already in the form ``app.domain.text.normalize`` produces (NFC, LF, no
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


def library_version(name: str) -> str:
    """Installed version of a distribution, for provenance."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - vendored copies
        return "unknown"


def finish(text: str, *, layout: Layout, media_type: str, source_media_type: str,
           provenance: dict[str, Any], empty_reason: str) -> Extracted:
    """Check the text is a valid version (``empty_reason`` if it is blank) and wrap it."""
    if len(text) > MAX_TEXT_CHARS:
        raise ExtractionRefused("file", f"the document yields {len(text)} characters of "
                                f"text, more than the limit of {MAX_TEXT_CHARS}", limit=True)
    try:
        normalized = normalize(text)
    except TextError:
        raise ExtractionRefused("file", empty_reason) from None
    if normalized != text:  # pragma: no cover - the builder cleans every piece
        raise AssertionError("extracted text is not in normal form")
    return Extracted(text=text, media_type=media_type, source_media_type=source_media_type,
                     layout=layout, provenance=provenance)
