"""Derived indexes follow PostgreSQL through the outbox (DESIGN.md section 5.4).

Two jobs per tenant, both idempotent:
- *lexical*: apply outbox rows after the index's applied sequence to the tenant's tantivy
  directory, one commit per batch that also records the batch's last sequence number;
  after a crash the index resumes from there.
- *embeddings*: embed passages that have no embedding (for the current model) yet, in
  batches; each distinct passage text is embedded once per tenant.

A background thread runs both for tenants it is told about (writes on this node, searches,
and the tenants whose index directories exist here). Searches call ``sync_lexical`` first,
so a client always reads its own writes lexically; vector search covers embedded passages.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from uuid import UUID

import numpy as np
import numpy.typing as npt
import structlog
from psycopg import Connection
from psycopg.rows import dict_row

from app.domain.passages import PATH_SEPARATOR
from app.domain.timeutil import to_micros
from app.index.tantivy_index import INF_US, IndexedPassage, TenantIndex
from app.store.pg import PgStore
from app.store.sqlfiles import query

log = structlog.get_logger("stichtag.indexer")
LEXICAL_BATCH = 200
# Passages per embedding round: the embedder sorts a round by length before batching by
# 32, so a large round wastes far less on padding than 32 passages in id order.
EMBED_BATCH = 512
# The background worker embeds a round in slices of this many passages (shortest first,
# so padding stays as small as in one call) and checks for shutdown between slices: a
# round of 512 long passages takes over a minute on two cores, longer than stop() waits,
# and a worker left inside onnxruntime when the interpreter exits aborts the process.
EMBED_SLICE = 32


class Embedder(Protocol):
    """The embedding port (an ONNX e5 model in production)."""

    @property
    def model_hash(self) -> str: ...

    def embed_queries(self, texts: list[str]) -> npt.NDArray[np.float32]: ...

    def embed_passages(self, texts: list[str]) -> npt.NDArray[np.float32]: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexStatus:
    """How far a tenant's derived indexes are behind PostgreSQL."""

    outbox_seq: int
    lexical_seq: int
    pending_embeddings: int


def _micros(value: Any) -> int:
    return to_micros(value, infinity=INF_US)


class Indexer:
    """Per-tenant tantivy replicas and passage embeddings, kept in step with the outbox."""

    def __init__(self, store: PgStore, index_root: Path, embedder: Embedder | None) -> None:
        self.store = store
        self.root = index_root
        self.embedder = embedder
        self._indexes: dict[UUID, TenantIndex] = {}
        self._locks: dict[UUID, threading.Lock] = {}
        self._guard = threading.Lock()
        self._queue: queue.Queue[UUID | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

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

    def sync_lexical(self, tenant_id: UUID) -> int:
        """Apply every pending outbox row; returns the applied sequence."""
        with self._lock(tenant_id):
            index = self.index(tenant_id)
            applied = index.applied_seq()
            while True:
                with self.store.tx(tenant_id) as conn:
                    rows = conn.cursor(row_factory=dict_row).execute(
                        query("outbox_after"), {"after": applied, "limit": LEXICAL_BATCH}).fetchall()
                    if not rows:
                        return applied
                    opened = sorted({r["assertion_id"] for r in rows if r["kind"] == "open"})
                    docs = conn.cursor(row_factory=dict_row).execute(
                        query("index_docs_for_assertions"), {"ids": opened}).fetchall()
                closes = [(r["assertion_id"], _micros(r["tx_to"])) for r in rows
                          if r["kind"] == "close" and r["tx_to"] is not None]
                index.apply(upserts=[self._doc(d) for d in docs], close=closes,
                            seq=rows[-1]["seq"])
                applied = rows[-1]["seq"]

    @staticmethod
    def _doc(row: dict[str, Any]) -> IndexedPassage:
        # The index key is (assertion, ordinal): one passage text may occur twice in a version.
        return IndexedPassage(
            assertion_id=row["assertion_id"], passage_id=row["ordinal"], document=row["document"],
            version_id=row["version_id"], start=row["start_cp"], end=row["end_cp"],
            text=row["text"], heading_path=PATH_SEPARATOR.join(row["path"]),
            valid_from=_micros(row["valid_from"]), valid_to=_micros(row["valid_to"]),
            tx_from=_micros(row["tx_from"]), tx_to=_micros(row["tx_to"]),
            confidentiality=row["confidentiality"])

    def rebuild(self, tenant_id: UUID) -> int:
        """Recreate the tenant's lexical index from PostgreSQL."""
        with self._lock(tenant_id):
            self.index(tenant_id).clear()
        return self.sync_lexical(tenant_id)

    def check(self, tenant_id: UUID) -> dict[str, Any]:
        """Compare the lexical index with PostgreSQL: missing, extra and stale documents."""
        self.sync_lexical(tenant_id)
        with self.store.tx(tenant_id) as conn:
            rows = conn.execute(query("visible_index_docs")).fetchall()
        expected = {(int(a), int(o), _micros(t)) for a, o, t in rows}
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
        """Embed passages without a current embedding; returns how many were embedded.

        With ``should_stop`` a round is embedded in slices of ``EMBED_SLICE`` and the
        call returns as soon as it says so (what is embedded so far is stored).
        """
        if self.embedder is None:
            return 0
        done = batches = 0
        model = self.embedder.model_hash
        while max_batches is None or batches < max_batches:
            with self.store.tx(tenant_id) as conn:
                rows = conn.execute(query("passages_pending"),
                                    {"model_hash": model, "limit": EMBED_BATCH}).fetchall()
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
                with self.store.tx(tenant_id) as conn:
                    store_vectors(conn, [pid for pid, _ in part], vectors, model)
                done += len(part)
            batches += 1
            if should_yield is not None and should_yield():
                break
        return done

    def status(self, tenant_id: UUID) -> IndexStatus:
        """Outbox head, applied lexical sequence and embeddings still pending."""
        model = self.embedder.model_hash if self.embedder else ""
        with self.store.tx(tenant_id) as conn:
            head = conn.execute(query("outbox_head")).fetchone()
            pending = conn.execute(query("passages_pending_count"), {"model_hash": model}).fetchone()
        return IndexStatus(outbox_seq=int(head[0]) if head else 0,
                           lexical_seq=self.index(tenant_id).applied_seq(),
                           pending_embeddings=int(pending[0]) if pending else 0)

    def catch_up(self, tenant_id: UUID) -> IndexStatus:
        """Bring both indexes fully up to date (tests, CLI, benchmarks)."""
        self.sync_lexical(tenant_id)
        self.embed_pending(tenant_id)
        return self.status(tenant_id)

    # -- background --------------------------------------------------------------------

    def notify(self, tenant_id: UUID) -> None:
        """Ask the background worker to bring a tenant's indexes up to date."""
        self._queue.put(tenant_id)

    def start(self) -> None:
        """Start the background worker; it first catches up tenants indexed on this node."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="stichtag-indexer", daemon=True)
        self._thread.start()
        if self.root.is_dir():
            for child in self.root.iterdir():
                try:
                    self.notify(UUID(child.name))
                except ValueError:
                    continue

    def stop(self) -> None:
        """Stop the worker and close the indexes."""
        if self._thread is not None:
            self._stop.set()
            self._queue.put(None)
            self._thread.join(timeout=30)
            self._thread = None
        with self._guard:
            for index in self._indexes.values():
                index.close()
            self._indexes.clear()

    def _run(self) -> None:
        pending: set[UUID] = set()
        while not self._stop.is_set():
            try:
                item = self._queue.get(timeout=0.5 if pending else 5)
                if item is not None:
                    pending.add(item)
            except queue.Empty:
                pass
            for tenant_id in list(pending):
                if self._stop.is_set():
                    return
                try:
                    self.sync_lexical(tenant_id)
                    embedded = self.embed_pending(tenant_id, max_batches=4,
                                                  should_yield=lambda: not self._queue.empty(),
                                                  should_stop=self._stop.is_set)
                    if embedded == 0:
                        pending.discard(tenant_id)
                except Exception:
                    log.exception("indexer_error", tenant=str(tenant_id))
                    pending.discard(tenant_id)


def store_vectors(conn: Connection[Any], passage_ids: Sequence[int],
                  vectors: npt.NDArray[np.float32], model_hash: str) -> None:
    """Store passage vectors of ``model_hash``; a passage that already has one keeps it
    (first writer wins, see ``passage_embed``), so a vector never changes once a run may
    have used it. Rows are locked in passage-id order: the background worker, ``catch_up``
    and answers write overlapping sets concurrently, and any other order can deadlock."""
    rows = sorted(zip(passage_ids, vectors, strict=True), key=lambda row: row[0])
    with conn.cursor() as cur:
        cur.executemany(query("passage_embed"), [
            {"passage_id": pid, "embedding": vec, "model_hash": model_hash}
            for pid, vec in rows])
