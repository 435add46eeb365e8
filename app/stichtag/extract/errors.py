"""The one error the extraction room raises: a document it will not turn into text.

It is defined in the domain (``stichtag.domain.extraction``), because the ingest use case and
the API handle it without importing this room; re-exported here for the extractors.
"""

from __future__ import annotations

from stichtag.domain.extraction import ExtractionRefused

__all__ = ["ExtractionRefused"]
