"""The checks every extraction result passes before it leaves (``Extracted`` itself is
plain data in ``stichtag.domain.extraction``)."""

from __future__ import annotations

import importlib.metadata
from typing import Any

from stichtag.domain.extraction import Extracted, ExtractionRefused
from stichtag.domain.layout import Layout
from stichtag.domain.text import TextError, normalize
from stichtag.extract.limits import MAX_TEXT_CHARS

__all__ = ["Extracted", "finish", "library_version"]


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
