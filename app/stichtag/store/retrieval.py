"""PostgreSQL adapter of the VectorIndex and PassageStore ports (pgvector).

Vector search is filtered by the same visibility predicate and clearance as every other
read, inside the SQL; which plan runs depends on how many placements are visible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from uuid import UUID

from psycopg.rows import dict_row

from stichtag.domain.asof import AsOf
from stichtag.domain.passages import passage_body
from stichtag.domain.records import IndexBacklog
from stichtag.domain.retrieval import Placement, PlacementKey
from stichtag.ports import Vector
from stichtag.store.database import Database
from stichtag.store.replica import PrimaryReads, Reads
from stichtag.store.sqlfiles import query

BACKLOG_CAP = 10_000
"""The index flag counts pending visible passages up to here (``pending`` reads "at least"
beyond it): the count runs on every search and answer during a backlog."""
HNSW_RATIO = 180.0
"""The HNSW index drives the vector search from ``sqrt(HNSW_RATIO x passages)`` visible
placements up (never below ``HNSW_MIN``); below, filtering first and sorting exactly is
faster (and exact). Filtering first costs about 7 us per visible placement; the HNSW scan
with the per-candidate check about 1.3 ms x passages / visible + 6 ms, because the share
of candidates that pass falls with the visible share. The two are equal where visible^2 =
(1.3 ms / 7 us) x passages. Measured on bench_scale's 100k tenant after 0015
(docs/benchmarks.md): crossover between 1,071 visible (5 vs 130 ms) and 6,177 (32 vs 26
ms), the rule puts it at 4.3k; at 103k visible 1,015 vs 9 ms."""

HNSW_MIN = 2_000


def hnsw_from_for(passages: int) -> int:
    """Visible placements from which the HNSW plan is the faster one (see HNSW_RATIO)."""
    return max(HNSW_MIN, int(math.sqrt(HNSW_RATIO * passages)))


class PgRetrieval:
    """Nearest visible passages, visible placements and stored passage vectors."""

    def __init__(self, db: Database, reads: Reads | None = None) -> None:
        self.db = db
        self.reads: Reads = reads or PrimaryReads(db)

    def nearest(self, tenant_id: UUID, query_vector: Vector, *, as_of: AsOf, clearance: int,
                k: int, model_hash: str, exact: bool = False,
                hnsw_from: int | None = None) -> list[tuple[PlacementKey, float]]:
        """Cosine-ranked (assertion, ordinal) keys of passages embedded with ``model_hash``.

        Only vectors of the current model are comparable with the query's: after a model
        upgrade, passages not re-embedded yet are found lexically only, like new ones.
        """
        params = {"query": query_vector, "valid_at": as_of.valid_at,
                  "known_at": as_of.known_at, "clearance": clearance, "k": k,
                  "model_hash": model_hash}
        with self.reads.read_tx(tenant_id, as_of.known_at) as conn:
            # pgvector >= 0.8: keep scanning the HNSW graph until k rows pass the filter.
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            conn.execute("SET LOCAL hnsw.ef_search = 200")
            if exact:
                plan = "vector_search_exact"
            else:
                row = conn.execute(query("visible_placement_count"), params).fetchone()
                visible, passages = (int(row[0]), int(row[1])) if row else (0, 0)
                limit = hnsw_from_for(passages) if hnsw_from is None else hnsw_from
                plan = "vector_search_hnsw" if visible >= limit else "vector_search"
            nearest = conn.execute(query(plan), params).fetchall()
            placements = conn.execute(query("visible_placements"), {
                "passage_ids": [pid for pid, _ in nearest], "valid_at": as_of.valid_at,
                "known_at": as_of.known_at, "clearance": clearance}).fetchall()
        where: dict[int, list[PlacementKey]] = {}
        for pid, aid, ordinal in placements:
            where.setdefault(pid, []).append((aid, ordinal))
        ranked: list[tuple[PlacementKey, float]] = []
        # relaxed_order may return rows slightly out of order: sort by distance again.
        for pid, distance in sorted(nearest, key=lambda r: (r[1], r[0])):
            ranked.extend((key, 1.0 - float(distance)) for key in sorted(where.get(pid, [])))
        return ranked

    def backlog(self, tenant_id: UUID, *, as_of: AsOf, clearance: int) -> IndexBacklog:
        """Outbox head and visible passages without a vector, counted up to
        ``BACKLOG_CAP`` (one round trip; its cost follows the backlog, not the corpus).
        Read on the primary: the backlog is the primary's, and a standby's lag would show
        as a smaller one."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("index_backlog"), {
                "valid_at": as_of.valid_at, "known_at": as_of.known_at,
                "clearance": clearance, "cap": BACKLOG_CAP}).fetchone()
        head, unembedded = (int(row[0]), int(row[1])) if row else (0, 0)
        return IndexBacklog(outbox_head=head, unembedded=unembedded)

    def placements(self, tenant_id: UUID, keys: Sequence[PlacementKey], *, as_of: AsOf,
                   clearance: int) -> list[Placement]:
        """The visible placements among ``keys`` with their passage text (re-checked)."""
        if not keys:
            return []
        with self.reads.read_tx(tenant_id, as_of.known_at) as conn:
            rows = conn.cursor(row_factory=dict_row).execute(query("hits_for_keys"), {
                "assertion_ids": [a for a, _ in keys], "ordinals": [o for _, o in keys],
                "valid_at": as_of.valid_at, "known_at": as_of.known_at,
                "clearance": clearance}).fetchall()
        return [Placement(
            document=r["document"], version_id=r["version_id"], start=r["start_cp"],
            end=r["end_cp"], utf16_start=r["start_u16"], utf16_end=r["end_u16"],
            quote=passage_body(r["passage_text"], tuple(r["path"])),
            heading_path=tuple(r["path"]), assertion_id=r["assertion_id"],
            passage_ordinal=r["ordinal"], passage_id=r["passage_id"],
            valid_from=r["valid_from"], valid_to=r["valid_to"], doc_class=r["doc_class"],
            title=r["title"]) for r in rows]

    def vectors(self, tenant_id: UUID, passage_ids: Sequence[int], *,
                model_hash: str) -> dict[int, Vector]:
        """Stored vectors of ``model_hash``; a vector of another model (before re-embedding
        after an upgrade) is not comparable with the query's and counts as missing."""
        with self.db.tx(tenant_id) as conn:
            rows = conn.execute(query("passage_vectors"), {"ids": list(passage_ids)}).fetchall()
        return {int(pid): vec.to_numpy() for pid, vec, model in rows
                if vec is not None and model == model_hash}

    def store_vectors(self, tenant_id: UUID, passage_ids: Sequence[int], vectors: Vector,
                      model_hash: str) -> None:
        """Store passage vectors of ``model_hash``; a passage that already has one keeps
        it (first writer wins, see ``passage_embed``), so a vector never changes once a run
        may have used it. Rows are locked in passage-id order: the background worker,
        ``catch_up`` and answers write overlapping sets concurrently, and any other order
        can deadlock."""
        rows = sorted(zip(passage_ids, vectors, strict=True), key=lambda row: row[0])
        with self.db.tx(tenant_id) as conn, conn.cursor() as cur:
            cur.executemany(query("passage_embed"), [
                {"passage_id": pid, "embedding": vec, "model_hash": model_hash}
                for pid, vec in rows])
