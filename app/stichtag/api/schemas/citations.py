"""Bodies of citation resolution and re-anchoring."""

from __future__ import annotations

from typing import Literal

import msgspec

from stichtag.api.schemas.answers import CitationOut, Selector


class ResolveResponse(msgspec.Struct):
    """A citation, its context, and where it stands in the document's current version."""

    citation: CitationOut
    context_before: str
    context_after: str
    current_version_id: str | None
    status: str
    similarity: float
    current: CitationOut | None


class AnchorBody(msgspec.Struct, forbid_unknown_fields=True):
    """A W3C selector to find in the document's current version: ``source`` is the
    version it was taken from (or name the ``document``). The list needs a
    TextQuoteSelector; a TextPositionSelector only breaks ties between equal matches."""

    selector: list[Selector]
    source: str | None = None
    document: str | None = None


class AnchorResponse(msgspec.Struct):
    """Where a TextQuoteSelector stands in the document's current version.

    ``matched``: ``exact`` (its only occurrence), ``context`` (of several occurrences, the
    one its prefix and suffix surround best), ``fuzzy`` (the most similar sentence, with
    ``similarity``) or ``none`` (``current`` is then null).
    """

    document: str
    source: str | None
    current_version_id: str | None
    matched: Literal["exact", "context", "fuzzy", "none"]
    similarity: float
    occurrences: int
    current: CitationOut | None
