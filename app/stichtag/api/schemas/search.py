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
    wait_for_index: bool = False
    """Wait (at most STICHTAG_INDEX_WAIT seconds) until every passage visible at the
    as-of pair is in both indexes; the response's ``index`` says whether it got there."""


class IndexOut(msgspec.Struct):
    """Whether the derived indexes held everything visible at the as-of pair when the
    read ran (docs/api.md, "Index status"): while ``complete`` is false, the ranking
    used the lexical hits and the vectors present, and may differ once the backlog is
    gone."""

    complete: bool
    pending: int
    """Passages visible at the pair (within the key's clearance) with no vector yet."""
    lexical_pending: int
    """Outbox rows (a bulk load's) the lexical index had not applied yet."""


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
    index: IndexOut | None = None


class IndexStatusResponse(msgspec.Struct):
    """The caller's tenant's derived indexes against PostgreSQL, as this server process
    sees them (docs/api.md, "Index status"). ``complete`` is what an answer's ``index``
    would say at the newest as-of pair."""

    outbox_seq: int
    """The tenant's newest outbox position (its newest write)."""
    lexical_seq: int
    """The outbox position this process's lexical index has applied."""
    lexical_pending: int
    pending_embeddings: int
    """Passages (of every version, visible or not) with no vector of ``model`` yet."""
    complete: bool
    embed_rate: float | None
    """Passages embedded per second over the last two minutes of looks at this endpoint
    (null until two looks a second apart)."""
    eta_seconds: float | None
    """Seconds until no embedding is pending at that rate (null while not draining)."""
    model: str | None
    """The embedding model's hash (null on a node without the models)."""
