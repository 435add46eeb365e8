"""Hybrid retrieval as of a Stichtag: BM25 (tantivy) + vectors (pgvector), fused by RRF.

Both lists are filtered by the same visibility predicate and the key's clearance inside
their engines; the fused hits are then re-read from PostgreSQL with that predicate once
more, so nothing invisible can reach a response even if an index were stale. Retrieval
only reads: the index room (app/stichtag/index) applies the outbox, and ``fresh`` waits for it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

from stichtag.domain.asof import AsOf
from stichtag.domain.errors import Invalid
from stichtag.domain.fusion import RRF_K, rrf
from stichtag.domain.records import IndexState
from stichtag.domain.retrieval import Hit, PlacementKey
from stichtag.domain.segment import SEGMENTER_ID
from stichtag.domain.timeutil import format_time
from stichtag.domain.txclock import cap_known_at
from stichtag.ports import Embedder, LexicalIndex, PassageStore, Transactions, Vector, VectorIndex
from stichtag.services.access import Principal
from stichtag.services.runlog import RunLog

MAX_K = 100
MAX_QUERY_CHARS = 2000
CANDIDATES = 50  # per list, before fusion
INDEX_POLL = 0.25
"""Seconds between looks at the backlog while a read waits for the index."""


@dataclass(frozen=True, kw_only=True)
class SearchResult:
    """Hits, the as-of pair used, the run id and what the indexes had applied."""

    run_id: uuid.UUID
    valid_at: datetime
    known_at: datetime
    hits: list[Hit]
    lexical_seq: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    index: IndexState | None = None
    """Whether every passage visible at the pair was in both indexes (docs/api.md)."""


class SearchObserver(Protocol):
    """Counts searches (the Prometheus metrics in the server)."""

    def observe_search(self, timings_ms: Mapping[str, float]) -> None:
        """One recorded search run's stage times."""
        ...


@dataclass(frozen=True, kw_only=True)
class Scores:
    """What the candidate lists said about each placement (for ``SearchService.hits``)."""

    bm25: Mapping[PlacementKey, float]
    vector: Mapping[PlacementKey, float]
    fused: Mapping[PlacementKey, float]
    bm25_rank: Mapping[PlacementKey, int]
    vector_rank: Mapping[PlacementKey, int]


class SearchService:
    """Retrieval for one principal at one as-of pair."""

    # The ports, passed positionally in the one place that wires them (bootstrap).
    def __init__(self, lexical: LexicalIndex, vectors: VectorIndex,  # noqa: PLR0917
                 passages: PassageStore, embedder: Embedder | None, runlog: RunLog,
                 units: Transactions, metrics: SearchObserver | None = None, *,
                 index_wait: float = 30.0) -> None:
        self.lexical = lexical
        self.index_wait = index_wait
        self.metrics = metrics
        self.vectors = vectors
        self.passages = passages
        self.embedder = embedder
        self.runlog = runlog
        self.units = units
        self._qcache: OrderedDict[str, Vector] = OrderedDict()
        self._qlock = threading.Lock()

    def query_vector(self, text: str) -> Vector:
        """The query's embedding, cached: retrieval and reranking embed it once. Queries are
        embedded alone, so a cached vector equals a fresh one (replay stays exact)."""
        embedder = self.embedder
        assert embedder is not None
        with self._qlock:
            found = self._qcache.get(text)
            if found is not None:
                self._qcache.move_to_end(text)
                return found
        vec: Vector = embedder.embed_queries([text])[0]
        with self._qlock:
            self._qcache[text] = vec
            while len(self._qcache) > 256:
                self._qcache.popitem(last=False)
        return vec

    def lexical_candidates(self, principal: Principal, text: str, *, valid_at: datetime,
                           known_at: datetime, k: int) -> list[tuple[PlacementKey, float]]:
        """BM25-ranked placements, filtered inside the lexical index."""
        return self.lexical.search(principal.tenant_id, text,
                                   as_of=AsOf(valid_at=valid_at, known_at=known_at),
                                   clearance=principal.clearance, k=k)

    def vector_candidates(self, principal: Principal, text: str, *, valid_at: datetime,
                          known_at: datetime, k: int, exact: bool = False,
                          hnsw_from: int | None = None) -> list[tuple[PlacementKey, float]]:
        """Cosine-ranked placements from pgvector (none without an embedder)."""
        if self.embedder is None:
            return []
        return self.vectors.nearest(principal.tenant_id, self.query_vector(text),
                                    as_of=AsOf(valid_at=valid_at, known_at=known_at),
                                    clearance=principal.clearance, k=k,
                                    model_hash=self.embedder.model_hash, exact=exact,
                                    hnsw_from=hnsw_from)

    def retrieve(self, principal: Principal, text: str, *, valid_at: datetime,
                 known_at: datetime, k: int, candidates: int = CANDIDATES
                 ) -> tuple[list[Hit], dict[str, float], int]:
        """Fused hits (without recording a run): used by search and answer."""
        as_of = AsOf(valid_at=valid_at, known_at=known_at)
        timings: dict[str, float] = {}
        started = time.perf_counter()
        lexical_seq = self.lexical.fresh(principal.tenant_id, at_least=principal.read_after)
        timings["sync"] = _ms(started)
        t = time.perf_counter()
        lexical = self.lexical_candidates(principal, text, valid_at=valid_at,
                                          known_at=known_at, k=candidates)
        timings["lexical"] = _ms(t)
        t = time.perf_counter()
        vector = self.vector_candidates(principal, text, valid_at=valid_at, known_at=known_at,
                                        k=candidates)
        timings["vector"] = _ms(t)
        lexical_keys = [key for key, _ in lexical]
        vector_keys = [key for key, _ in vector]
        fused = rrf([lexical_keys, vector_keys])
        order = sorted(fused, key=lambda key: (-fused[key], key))[:k]
        t = time.perf_counter()
        hits = self.hits(principal, order, as_of=as_of, scores=Scores(
            bm25=dict(lexical), vector=dict(vector), fused=fused,
            bm25_rank={key: i + 1 for i, key in enumerate(lexical_keys)},
            vector_rank={key: i + 1 for i, key in enumerate(vector_keys)}))
        timings["details"] = _ms(t)
        return hits, timings, lexical_seq

    def index_state(self, principal: Principal, *, valid_at: datetime, known_at: datetime,
                    lexical_seq: int) -> IndexState:
        """Whether the indexes held everything visible at the pair when a read ran there
        with the lexical index at ``lexical_seq`` (``index`` of a search or answer)."""
        backlog = self.vectors.backlog(principal.tenant_id,
                                       as_of=AsOf(valid_at=valid_at, known_at=known_at),
                                       clearance=principal.clearance)
        if self.embedder is None:  # no vector list at all: only the lexical index counts
            backlog = replace(backlog, unembedded=0)
        return IndexState.of(backlog, lexical_seq=lexical_seq)

    def wait_for_index(self, principal: Principal, *, valid_at: datetime,
                       known_at: datetime) -> IndexState:
        """Wait until the index is complete at the pair, at most ``index_wait`` seconds
        (``wait_for_index``); returns the last state seen, complete or not."""
        deadline = time.monotonic() + self.index_wait
        while True:
            seq = self.lexical.fresh(principal.tenant_id, at_least=principal.read_after)
            state = self.index_state(principal, valid_at=valid_at, known_at=known_at,
                                     lexical_seq=seq)
            if state.complete or time.monotonic() >= deadline:
                return state
            if state.lexical_pending:  # a bulk load's rows: ask for them explicitly
                self.lexical.fresh(principal.tenant_id,
                                   at_least=seq + state.lexical_pending)
            time.sleep(min(INDEX_POLL, max(0.0, deadline - time.monotonic())))

    def hits(self, principal: Principal, order: Sequence[PlacementKey], *, as_of: AsOf,
             scores: Scores) -> list[Hit]:
        """The placements of ``order`` that are visible at ``as_of``, in that order, with
        their scores (an invisible one is dropped: never returned)."""
        found = {p.key: p for p in self.passages.placements(
            principal.tenant_id, order, as_of=as_of, clearance=principal.clearance)}
        return [Hit.of(found[key], bm25=scores.bm25.get(key), vector=scores.vector.get(key),
                       fused=scores.fused[key], bm25_rank=scores.bm25_rank.get(key),
                       vector_rank=scores.vector_rank.get(key))
                for key in order if key in found]

    def search(self, principal: Principal, text: str, *, valid_at: datetime,
               known_at: datetime, k: int = 10, wait_for_index: bool = False) -> SearchResult:
        """Search and record the run (request, as-of pair, candidates with all scores, and
        whether the index was complete at the pair); ``wait_for_index`` waits (bounded)
        for the backlog at the pair first."""
        principal.require("read")
        if not text.strip():
            raise Invalid("query", "must not be empty")
        if len(text) > MAX_QUERY_CHARS:
            raise Invalid("query", f"at most {MAX_QUERY_CHARS} characters")
        if not 1 <= k <= MAX_K:
            raise Invalid("k", f"must be between 1 and {MAX_K}")
        known_at = cap_known_at(known_at, self.runlog.clock.now())
        with self.units.unit(principal.tenant_id) as uow:
            self.runlog.observe(uow, known_at)
        started = time.perf_counter()
        if wait_for_index:
            self.wait_for_index(principal, valid_at=valid_at, known_at=known_at)
            timings_wait = _ms(started)
        hits, timings, seq = self.retrieve(principal, text, valid_at=valid_at,
                                           known_at=known_at, k=k)
        t = time.perf_counter()
        index = self.index_state(principal, valid_at=valid_at, known_at=known_at,
                                 lexical_seq=seq)
        timings["index"] = _ms(t)
        if wait_for_index:
            timings["index_wait"] = timings_wait
        timings["total"] = _ms(started)
        run_id = uuid.uuid4()
        record = {
            "kind": "search", "run_id": str(run_id), "request": {"query": text, "k": k},
            "as_of": {"valid_at": format_time(valid_at), "known_at": format_time(known_at)},
            "tenant": str(principal.tenant_id), "key_id": principal.key_id,
            "clearance": principal.clearance, "segmenter_id": SEGMENTER_ID,
            "analyzer_id": self.lexical.analyzer_id, "rrf_k": RRF_K, "lexical_seq": seq,
            "embedding_model": self.embedder.model_hash if self.embedder else None,
            "candidates": [_hit_record(h) for h in hits], "timings_ms": timings,
            "index": index.record(),
        }
        with self.units.unit(principal.tenant_id) as uow:
            self.runlog.append(uow, principal.tenant_id, run_id=run_id, kind="search",
                               key_id=principal.key_id, record=record)
        if self.metrics is not None:
            self.metrics.observe_search(timings)
        return SearchResult(run_id=run_id, valid_at=valid_at, known_at=known_at, hits=hits,
                            lexical_seq=seq, timings_ms=timings, index=index)


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)


def _hit_record(hit: Hit) -> dict[str, Any]:
    return {"document": hit.document, "version_id": hit.version_id,
            "assertion_id": hit.assertion_id, "passage": hit.passage_ordinal,
            "start": hit.start, "end": hit.end, "bm25": hit.bm25, "vector": hit.vector,
            "fused": hit.fused, "bm25_rank": hit.bm25_rank, "vector_rank": hit.vector_rank}
