"""Derived indexes follow PostgreSQL through the outbox (docs/architecture.md, data flows).

This room owns every write to a derived index; searches and answers only read.
- *lexical*: apply outbox rows after the index's applied sequence to the tenant's tantivy
  directory, one commit per batch that also records the batch's last sequence number;
  after a crash the index resumes from there.
- *embeddings*: embed passages that have no vector of the current model yet; each
  distinct passage text is embedded once per tenant.

``fresh`` gives a reader its own writes: it waits until the index has applied every
outbox row committed before the call. In the server the background worker
(``app.index.worker``) applies them and ``fresh`` only waits; a process without a worker
(the CLI, a test) applies them in the caller's thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol
from uuid import UUID

from app.domain.asof import AsOf
from app.domain.passages import PATH_SEPARATOR
from app.domain.records import IndexStatus
from app.domain.retrieval import PlacementKey
from app.domain.salience import InForce
from app.index.analyzer import ANALYZER_ID
from app.index.ranges import micros
from app.index.tantivy_index import IndexedPassage, TenantIndex
from app.ports import Embedder, IndexFeed, PassageStore

LEXICAL_BATCH = 200
# Passages per embedding round: the embedder sorts a round by length before batching by
# 32, so a large round wastes far less on padding than 32 passages in id order.
EMBED_BATCH = 512
# With ``should_stop`` a round is embedded in slices of this many passages (shortest
# first, so padding stays as small as in one call) and shutdown is checked between
# slices: a round of 512 long passages takes over a minute on two cores, longer than
# stop() waits, and a worker left inside onnxruntime at interpreter exit aborts it.
EMBED_SLICE = 32
FRESH_TIMEOUT = 30.0
"""Seconds a reader waits for the worker to apply its own writes before it reads what is
applied (the run records the applied sequence either way)."""


class Background(Protocol):
    """The node's worker threads, while they run (``app.index.worker.Worker``)."""

    def submit(self, tenant_id: UUID) -> None:
        """Bring both of a tenant's indexes up to date soon."""
        ...


class Indexer:
    """Per-tenant tantivy replicas and passage vectors, kept in step with the outbox."""

    def __init__(self, feed: IndexFeed, vectors: PassageStore, index_root: Path,
                 embedder: Embedder | None) -> None:
        self.feed = feed
        self.vectors = vectors
        self.root = index_root
        self.embedder = embedder
        self.analyzer_id = ANALYZER_ID
        self._indexes: dict[UUID, TenantIndex] = {}
        self._locks: dict[UUID, threading.Lock] = {}
        self._guard = threading.Lock()
        self._applied = threading.Condition()
        self.background: Background | None = None
        """Set by the worker while it runs."""

    # -- lexical -----------------------------------------------------------------------

    def _lock(self, tenant_id: UUID) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(tenant_id, threading.Lock())

    def index(self, tenant_id: UUID) -> TenantIndex:
        """The tenant's tantivy index, opened once per process."""
        with self._guard:
            found = self._indexes.get(tenant_id)
            if found is None:
                directory = self.root / str(tenant_id)
                directory.mkdir(parents=True, exist_ok=True)
                found = TenantIndex(directory)
                self._indexes[tenant_id] = found
            return found

    def search(self, tenant_id: UUID, text: str, *, as_of: AsOf, clearance: int,
               k: int) -> list[tuple[PlacementKey, float]]:
        """BM25-ranked (assertion, ordinal) keys, filtered inside tantivy."""
        hits = self.index(tenant_id).search(text, valid_at=micros(as_of.valid_at),
                                            known_at=micros(as_of.known_at),
                                            clearance=clearance, k=k)
        return [((h.assertion_id, h.passage_id), h.bm25) for h in hits]

    def in_force(self, tenant_id: UUID, *, as_of: AsOf, clearance: int) -> InForce:
        """What is in force at the as-of pair, as question salience looks it up."""
        counter = self.index(tenant_id).counter(valid_at=micros(as_of.valid_at),
                                                known_at=micros(as_of.known_at),
                                                clearance=clearance)
        return InForce(passages=counter.passages, df=counter.df, vocabulary=counter.known,
                       co_df=counter.co_df)

    def fresh(self, tenant_id: UUID) -> int:
        """Read-your-writes: the index at least at the outbox head as of this call."""
        head = self.feed.outbox_head(tenant_id)
        index = self.index(tenant_id)
        applied = index.applied_seq()
        if applied >= head:
            return applied
        background = self.background
        if background is None:
            return self.sync_lexical(tenant_id)
        # New outbox rows may bring new passages (a CLI ingest, another node): embed them too.
        background.submit(tenant_id)
        with self._applied:
            self._applied.wait_for(lambda: index.applied_seq() >= head, timeout=FRESH_TIMEOUT)
        return index.applied_seq()

    def sync_lexical(self, tenant_id: UUID) -> int:
        """Apply every pending outbox row; returns the applied sequence."""
        with self._lock(tenant_id):
            index = self.index(tenant_id)
            applied = index.applied_seq()
            while True:
                rows, docs = self.feed.outbox_after(tenant_id, applied, LEXICAL_BATCH)
                if not rows:
                    return applied
                closes = [(r["assertion_id"], micros(r["tx_to"])) for r in rows
                          if r["kind"] == "close" and r["tx_to"] is not None]
                index.apply(upserts=[_doc(d) for d in docs], close=closes,
                            seq=rows[-1]["seq"])
                applied = rows[-1]["seq"]
                with self._applied:
                    self._applied.notify_all()

    def rebuild(self, tenant_id: UUID) -> int:
        """Recreate the tenant's lexical index from PostgreSQL."""
        with self._lock(tenant_id):
            self.index(tenant_id).clear()
        return self.sync_lexical(tenant_id)

    def check(self, tenant_id: UUID) -> dict[str, Any]:
        """Compare the lexical index with PostgreSQL: missing, extra and stale documents."""
        self.sync_lexical(tenant_id)
        expected = {(a, o, micros(t)) for a, o, t in self.feed.indexable(tenant_id)}
        index = self.index(tenant_id)
        actual = index.doc_ids()
        missing = expected - actual
        extra = actual - expected
        return {"expected": len(expected), "indexed": len(actual),
                "documents": index.doc_count(), "missing": len(missing), "extra": len(extra),
                "differences": len(missing) + len(extra),
                "sample": sorted(missing | extra)[:10]}

    # -- embeddings --------------------------------------------------------------------

    def embed_pending(self, tenant_id: UUID, *, max_batches: int | None = None,
                      should_yield: Callable[[], bool] | None = None,
                      should_stop: Callable[[], bool] | None = None) -> int:
        """Embed passages without a current vector; returns how many were embedded.

        With ``should_stop`` a round is embedded in slices of ``EMBED_SLICE`` and the
        call returns as soon as it says so (what is embedded so far is stored).
        """
        if self.embedder is None:
            return 0
        done = batches = 0
        model = self.embedder.model_hash
        while max_batches is None or batches < max_batches:
            rows = self.feed.pending_passages(tenant_id, model_hash=model, limit=EMBED_BATCH)
            if not rows:
                break
            step = len(rows)
            if should_stop is not None:
                rows = sorted(rows, key=lambda row: len(row[1]))
                step = EMBED_SLICE
            for at in range(0, len(rows), step):
                if should_stop is not None and should_stop():
                    return done
                part = rows[at:at + step]
                vectors = self.embedder.embed_passages([text for _, text in part])
                self.vectors.store_vectors(tenant_id, [pid for pid, _ in part], vectors, model)
                done += len(part)
            batches += 1
            if should_yield is not None and should_yield():
                break
        return done

    def status(self, tenant_id: UUID) -> IndexStatus:
        """Outbox head, applied lexical sequence and embeddings still pending."""
        model = self.embedder.model_hash if self.embedder else ""
        return IndexStatus(outbox_seq=self.feed.outbox_head(tenant_id),
                           lexical_seq=self.index(tenant_id).applied_seq(),
                           pending_embeddings=self.feed.pending_count(tenant_id,
                                                                      model_hash=model))

    def catch_up(self, tenant_id: UUID) -> IndexStatus:
        """Bring both indexes fully up to date (tests, CLI, benchmarks)."""
        self.sync_lexical(tenant_id)
        self.embed_pending(tenant_id)
        return self.status(tenant_id)

    def notify(self, tenant_id: UUID) -> None:
        """Wake the background worker for a tenant (no-op without one)."""
        background = self.background
        if background is not None:
            background.submit(tenant_id)

    def close(self) -> None:
        """Close the open indexes (the worker is stopped first by its owner)."""
        with self._guard:
            for index in self._indexes.values():
                index.close()
            self._indexes.clear()


def _doc(row: dict[str, Any]) -> IndexedPassage:
    # The index key is (assertion, ordinal): one passage text may occur twice in a version.
    return IndexedPassage(
        assertion_id=row["assertion_id"], passage_id=row["ordinal"], document=row["document"],
        version_id=row["version_id"], start=row["start_cp"], end=row["end_cp"],
        text=row["text"], heading_path=PATH_SEPARATOR.join(row["path"]),
        valid_from=micros(row["valid_from"]), valid_to=micros(row["valid_to"]),
        tx_from=micros(row["tx_from"]), tx_to=micros(row["tx_to"]),
        confidentiality=row["confidentiality"])
