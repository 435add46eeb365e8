"""Hybrid retrieval as of a Stichtag: BM25 (tantivy) + vectors (pgvector), fused by RRF.

Both lists are filtered by the same visibility predicate and the key's clearance inside
their engines; the fused hits are then re-read from PostgreSQL with that predicate once
more, so nothing invisible can reach a response even if an index were stale.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg.rows import dict_row

from app.domain.errors import Invalid
from app.domain.fusion import RRF_K, rrf
from app.domain.passages import passage_body
from app.domain.segment import SEGMENTER_ID
from app.domain.timeutil import format_time, to_micros
from app.index.analyzer import ANALYZER_ID
from app.index.tantivy_index import INF_US
from app.services.access import Principal
from app.services.indexer import Indexer
from app.services.runlog import RunLog
from app.store.pg import PgStore
from app.store.sqlfiles import query

MAX_K = 100
MAX_QUERY_CHARS = 2000
CANDIDATES = 50  # per list, before fusion
HNSW_FROM = 20_000
"""Visible passage placements from which the HNSW index drives the vector search; below
it, filtering first and sorting exactly is faster (and exact). Measured in
bench/bench_scale.py: at ~106k visible passages the filtered exact sort took 1.4 s p50,
the HNSW-driven form 9 ms at recall@10 0.997."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Hit:
    """One retrieved passage with its place in the exact version and all its scores."""

    document: str
    version_id: str
    assertion_id: int
    passage_ordinal: int
    passage_id: int
    start: int
    end: int
    utf16_start: int
    utf16_end: int
    heading_path: list[str]
    text: str
    valid_from: datetime
    valid_to: datetime | None
    doc_class: str
    title: str | None
    bm25: float | None
    vector: float | None
    fused: float
    bm25_rank: int | None
    vector_rank: int | None


@dataclass(frozen=True, kw_only=True)
class SearchResult:
    """Hits, the as-of pair used, the run id and what the indexes had applied."""

    run_id: uuid.UUID
    valid_at: datetime
    known_at: datetime
    hits: list[Hit]
    lexical_seq: int
    timings_ms: dict[str, float] = field(default_factory=dict)


class SearchService:
    """Retrieval for one principal at one as-of pair."""

    def __init__(self, store: PgStore, indexer: Indexer, runlog: RunLog) -> None:
        self.store = store
        self.indexer = indexer
        self.runlog = runlog
        self._qcache: OrderedDict[str, Any] = OrderedDict()
        self._qlock = threading.Lock()

    def query_vector(self, text: str) -> Any:
        """The query's embedding, cached: retrieval and reranking embed it once. Queries are
        embedded alone, so a cached vector equals a fresh one (replay stays exact)."""
        embedder = self.indexer.embedder
        assert embedder is not None
        with self._qlock:
            found = self._qcache.get(text)
            if found is not None:
                self._qcache.move_to_end(text)
                return found
        vec = embedder.embed_queries([text])[0]
        with self._qlock:
            self._qcache[text] = vec
            while len(self._qcache) > 256:
                self._qcache.popitem(last=False)
        return vec

    def lexical_candidates(self, principal: Principal, text: str, *, valid_at: datetime,
                           known_at: datetime, k: int) -> list[tuple[tuple[int, int], float]]:
        """BM25-ranked (assertion, ordinal) keys, filtered inside tantivy."""
        hits = self.indexer.index(principal.tenant_id).search(
            text, valid_at=to_micros(valid_at, infinity=INF_US),
            known_at=to_micros(known_at, infinity=INF_US), clearance=principal.clearance, k=k)
        return [((h.assertion_id, h.passage_id), h.bm25) for h in hits]

    def vector_candidates(self, principal: Principal, text: str, *, valid_at: datetime,
                          known_at: datetime, k: int, exact: bool = False,
                          hnsw_from: int | None = None) -> list[tuple[tuple[int, int], float]]:
        """Cosine-ranked (assertion, ordinal) keys from pgvector, filtered in SQL."""
        embedder = self.indexer.embedder
        if embedder is None:
            return []
        qvec = self.query_vector(text)
        # Only vectors of the current model are comparable with the query's: after a model
        # upgrade, passages not re-embedded yet are found lexically only, like new ones.
        params = {"query": qvec, "valid_at": valid_at, "known_at": known_at,
                  "clearance": principal.clearance, "k": k, "model_hash": embedder.model_hash}
        with self.store.tx(principal.tenant_id) as conn:
            # pgvector >= 0.8: keep scanning the HNSW graph until k rows pass the filter.
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            conn.execute("SET LOCAL hnsw.ef_search = 200")
            if exact:
                plan = "vector_search_exact"
            else:
                row = conn.execute(query("visible_placement_count"), params).fetchone()
                visible = int(row[0]) if row else 0
                limit = HNSW_FROM if hnsw_from is None else hnsw_from
                plan = "vector_search_hnsw" if visible >= limit else "vector_search"
            nearest = conn.execute(query(plan), params).fetchall()
            placements = conn.execute(query("visible_placements"), {
                "passage_ids": [pid for pid, _ in nearest], "valid_at": valid_at,
                "known_at": known_at, "clearance": principal.clearance}).fetchall()
        where: dict[int, list[tuple[int, int]]] = {}
        for pid, aid, ordinal in placements:
            where.setdefault(pid, []).append((aid, ordinal))
        ranked: list[tuple[tuple[int, int], float]] = []
        # relaxed_order may return rows slightly out of order: sort by distance again.
        for pid, distance in sorted(nearest, key=lambda r: (r[1], r[0])):
            ranked.extend((key, 1.0 - float(distance)) for key in sorted(where.get(pid, [])))
        return ranked

    def retrieve(self, principal: Principal, text: str, *, valid_at: datetime,
                 known_at: datetime, k: int, candidates: int = CANDIDATES
                 ) -> tuple[list[Hit], dict[str, float], int]:
        """Fused hits (without recording a run): used by search and answer."""
        timings: dict[str, float] = {}
        started = time.perf_counter()
        lexical_seq = self.indexer.sync_lexical(principal.tenant_id)
        self.indexer.notify(principal.tenant_id)  # embeddings may be pending (e.g. CLI ingest)
        timings["sync"] = _ms(started)
        t = time.perf_counter()
        lexical = self.lexical_candidates(principal, text, valid_at=valid_at,
                                          known_at=known_at, k=candidates)
        timings["lexical"] = _ms(t)
        t = time.perf_counter()
        vector = self.vector_candidates(principal, text, valid_at=valid_at,
                                        known_at=known_at, k=candidates)
        timings["vector"] = _ms(t)
        lexical_keys = [key for key, _ in lexical]
        vector_keys = [key for key, _ in vector]
        fused = rrf([lexical_keys, vector_keys])
        order = sorted(fused, key=lambda key: (-fused[key], key))[:k]
        t = time.perf_counter()
        hits = self._details(principal, order, valid_at=valid_at, known_at=known_at,
                             bm25=dict(lexical), cosine=dict(vector), fused=fused,
                             lexical_rank={key: i + 1 for i, key in enumerate(lexical_keys)},
                             vector_rank={key: i + 1 for i, key in enumerate(vector_keys)})
        timings["details"] = _ms(t)
        return hits, timings, lexical_seq

    def search(self, principal: Principal, text: str, *, valid_at: datetime,
               known_at: datetime, k: int = 10) -> SearchResult:
        """Search and record the run (request, as-of pair, candidates with all scores)."""
        principal.require("read")
        if not text.strip():
            raise Invalid("query", "must not be empty")
        if len(text) > MAX_QUERY_CHARS:
            raise Invalid("query", f"at most {MAX_QUERY_CHARS} characters")
        if not 1 <= k <= MAX_K:
            raise Invalid("k", f"must be between 1 and {MAX_K}")
        started = time.perf_counter()
        hits, timings, seq = self.retrieve(principal, text, valid_at=valid_at,
                                           known_at=known_at, k=k)
        timings["total"] = _ms(started)
        run_id = uuid.uuid4()
        record = {
            "kind": "search", "run_id": str(run_id), "request": {"query": text, "k": k},
            "as_of": {"valid_at": format_time(valid_at), "known_at": format_time(known_at)},
            "tenant": str(principal.tenant_id), "key_id": principal.key_id,
            "clearance": principal.clearance, "segmenter_id": SEGMENTER_ID,
            "analyzer_id": ANALYZER_ID, "rrf_k": RRF_K, "lexical_seq": seq,
            "embedding_model": getattr(self.indexer.embedder, "model_hash", None),
            "candidates": [_hit_record(h) for h in hits], "timings_ms": timings,
        }
        with self.store.tx(principal.tenant_id) as conn:
            self.runlog.append(conn, principal.tenant_id, run_id=run_id, kind="search",
                               key_id=principal.key_id, record=record)
        return SearchResult(run_id=run_id, valid_at=valid_at, known_at=known_at, hits=hits,
                            lexical_seq=seq, timings_ms=timings)

    def _details(self, principal: Principal, order: list[tuple[int, int]], *,
                 valid_at: datetime, known_at: datetime, bm25: dict[tuple[int, int], float],
                 cosine: dict[tuple[int, int], float], fused: dict[tuple[int, int], float],
                 lexical_rank: dict[tuple[int, int], int],
                 vector_rank: dict[tuple[int, int], int]) -> list[Hit]:
        if not order:
            return []
        with self.store.tx(principal.tenant_id) as conn:
            rows = conn.cursor(row_factory=dict_row).execute(query("hits_for_keys"), {
                "assertion_ids": [a for a, _ in order], "ordinals": [o for _, o in order],
                "valid_at": valid_at, "known_at": known_at,
                "clearance": principal.clearance}).fetchall()
        found = {(r["assertion_id"], r["ordinal"]): r for r in rows}
        hits: list[Hit] = []
        for key in order:
            r = found.get(key)
            if r is None:  # not visible after all: never returned
                continue
            hits.append(Hit(
                document=r["document"], version_id=r["version_id"],
                assertion_id=r["assertion_id"], passage_ordinal=r["ordinal"],
                passage_id=r["passage_id"], start=r["start_cp"], end=r["end_cp"],
                utf16_start=r["start_u16"], utf16_end=r["end_u16"], heading_path=list(r["path"]),
                text=passage_body(r["passage_text"], tuple(r["path"])),
                valid_from=r["valid_from"], valid_to=r["valid_to"], doc_class=r["doc_class"],
                title=r["title"], bm25=bm25.get(key), vector=cosine.get(key), fused=fused[key],
                bm25_rank=lexical_rank.get(key), vector_rank=vector_rank.get(key)))
        return hits


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)


def _hit_record(hit: Hit) -> dict[str, Any]:
    return {"document": hit.document, "version_id": hit.version_id,
            "assertion_id": hit.assertion_id, "passage": hit.passage_ordinal,
            "start": hit.start, "end": hit.end, "bm25": hit.bm25, "vector": hit.vector,
            "fused": hit.fused, "bm25_rank": hit.bm25_rank, "vector_rank": hit.vector_rank}
