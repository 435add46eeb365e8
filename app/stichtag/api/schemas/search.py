"""Bodies of POST /v1/search."""

from __future__ import annotations

import msgspec

from stichtag.api.schemas.documents import AsOf


class SearchBody(msgspec.Struct, forbid_unknown_fields=True):
    """A search as of a Stichtag (defaults: both now)."""

    query: str
    valid_at: str | None = None
    known_at: str | None = None
    k: int = 10


class Scores(msgspec.Struct):
    """Every score a hit carried through retrieval (null = not in that list)."""

    bm25: float | None
    vector: float | None
    fused: float
    bm25_rank: int | None
    vector_rank: int | None


class SearchHit(msgspec.Struct):
    """A passage of an exact version, with offsets into that version's text."""

    document: str
    version_id: str
    assertion_id: int
    start: int
    end: int
    utf16_start: int
    utf16_end: int
    heading_path: list[str]
    text: str
    valid_from: str
    valid_to: str | None
    scores: Scores


class SearchResponse(msgspec.Struct):
    """Hits at the as-of pair used, with the run id that recorded them."""

    run_id: str
    as_of: AsOf
    hits: list[SearchHit]
    lexical_seq: int
