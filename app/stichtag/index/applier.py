"""Derived indexes follow PostgreSQL through the outbox (docs/architecture.md, data flows).

This room owns every write to a derived index; searches and answers only read.
- *lexical*: apply outbox rows after the index's applied sequence to the tenant's tantivy
  directory, one commit per batch that also records the batch's last sequence number;
  after a crash the index resumes from there.
- *embeddings*: embed passages that have no vector of the current model yet; each
  distinct passage text is embedded once per tenant, by one process at a time (the
  owner lock of ``IndexFeed.embedding_owner``: the CLI and every server's worker would
  otherwise select and embed the same pending passages at once).

``fresh`` gives a reader its own writes: it waits until the index has applied every
awaited outbox row committed before the call, and the position of a consistency token
the reader sent. A bulk load's rows are not awaited (0014_outbox_awaited.sql): readers
see its versions as the index applies them, instead of all waiting for the whole load.
In the server the background worker (``stichtag.index.worker``) applies the rows and
``fresh`` only waits; a process without a worker (the CLI, a test) applies them all in
the caller's thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol
from uuid import UUID

from stichtag.domain.asof import AsOf
from stichtag.domain.errors import IndexBusy
from stichtag.domain.passages import PATH_SEPARATOR
from stichtag.domain.records import IndexStatus
from stichtag.domain.retrieval import PlacementKey
from stichtag.domain.salience import InForce
from stichtag.index import heap
from stichtag.index.analyzer import ANALYZER_ID
from stichtag.index.fields import IndexedPassage
from stichtag.index.ranges import micros
from stichtag.index.tantivy_index import TenantIndex
from stichtag.index.vector_writer import VectorWriter
from stichtag.ports import BatchEmbedder, Embedder, IndexFeed, PassageStore, Progress, Vector

LEXICAL_BATCH = 64
"""Outbox rows per lexical round: its sequence is committed once, at its end (and the
CLI's bar moves once per round)."""
LEXICAL_PART = 5000
"""Index documents per tantivy commit: one outbox row opens a whole version (thousands
of passages), and a round of 200 rows held ~0.3 million documents in memory at once."""
EMBED_BATCH = 2048
"""Passages per embedding round, read by id and embedded shortest first: the embedder
sorts the round by token length and batches to a token budget, so a round this large
pads about as little as sorting the whole backlog, in bounded memory."""
TRIM_AFTER = 1000
"""Index documents or passages a call must have handled before it trims the heap: a trim
walks the whole heap under the allocator's lock, which a write of a few passages (every
API write wakes the worker) should not pay for."""
FOLLOW_POLL = 0.25
"""Seconds between looks at an index another process is writing (``sync_lexical``)."""
FRESH_TIMEOUT = 30.0
"""Seconds a reader waits for the worker to apply its own writes before it reads what is
applied (the run records the applied sequence either way)."""


class EmbeddingBusy(RuntimeError):
    """Another process owns the tenant's embedding work right now."""


class Background(Protocol):
    """The node's worker threads, while they run (``stichtag.index.worker.Worker``)."""

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

    def held(self) -> list[UUID]:
        """The tenants whose replicas this process keeps (their directories)."""
        found = []
        if self.root.is_dir():
            for child in self.root.iterdir():
                try:
                    found.append(UUID(child.name))
                except ValueError:
                    continue
        return found

    def holds(self, tenant_id: UUID) -> bool:
        """Whether this process keeps a replica of the tenant (its directory exists)."""
        return (self.root / str(tenant_id)).is_dir()

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

    def fresh(self, tenant_id: UUID, *, at_least: int = 0) -> int:
        """Read-your-writes: the index at least at the newest awaited outbox row as of this
        call and at ``at_least`` (a consistency token; one beyond the head is read as
        the head), bounded by ``FRESH_TIMEOUT``. Returns the applied sequence."""
        index = self.index(tenant_id)
        background = self.background
        if background is None:  # applies up to the head here, which covers any token
            if index.applied_seq() >= self.feed.outbox_head(tenant_id):
                return index.applied_seq()
            return self.sync_lexical(tenant_id)
        head, awaited = self.feed.outbox_positions(tenant_id)
        target = max(awaited, min(at_least, head))
        if index.applied_seq() >= target:
            return index.applied_seq()
        # New outbox rows may bring new passages (a CLI ingest, another node): embed them too.
        background.submit(tenant_id)
        with self._applied:
            self._applied.wait_for(lambda: index.applied_seq() >= target, timeout=FRESH_TIMEOUT)
        return index.applied_seq()

    def outbox_head(self, tenant_id: UUID) -> int:
        """The tenant's newest outbox position (a consistency token after a write)."""
        return self.feed.outbox_head(tenant_id)

    def sync_lexical(self, tenant_id: UUID, *, progress: Progress | None = None) -> int:
        """Apply every pending outbox row; returns the applied sequence.

        A round's documents are committed ``LEXICAL_PART`` at a time; the parts before
        the last keep the applied sequence where it was, so after a crash the round is
        applied again from its start (upserts are idempotent) and ``fresh`` never sees
        a sequence whose documents are not all in.
        """
        with self._lock(tenant_id):
            index = self.index(tenant_id)
            applied = start = index.applied_seq()
            head = self.feed.outbox_head(tenant_id) if progress is not None else 0
            documents = 0
            while True:
                rows = self.feed.outbox_rows(tenant_id, applied, LEXICAL_BATCH)
                if not rows:
                    if documents >= TRIM_AFTER:  # its documents are freed: pages back
                        heap.release()
                    return applied
                try:
                    index.take_writer()
                except IndexBusy:
                    applied = self._follow(tenant_id, index, start=start, progress=progress)
                    continue  # at the head, or the writer is ours now: look again
                closes = [(r["assertion_id"], micros(r["tx_to"])) for r in rows
                          if r["kind"] == "close" and r["tx_to"] is not None]
                opened = sorted({r["assertion_id"] for r in rows if r["kind"] == "open"})
                # An erased version's documents go and never come back (docs/operations.md,
                # "GDPR erasure"); the feed no longer returns documents of erased versions.
                erased = sorted({r["assertion_id"] for r in rows if r["kind"] == "erase"})
                last: list[IndexedPassage] = []
                for part in self.feed.index_docs(tenant_id, opened, part=LEXICAL_PART):
                    if last:
                        index.apply(upserts=last, close=[], seq=applied)
                    last = [_doc(d) for d in part]
                    documents += len(last)
                index.apply(upserts=last, close=closes, seq=rows[-1]["seq"], erase=erased)
                applied = rows[-1]["seq"]
                with self._applied:
                    self._applied.notify_all()
                if progress is not None:
                    progress("lexical", applied - start, max(head, applied) - start)

    def _follow(self, tenant_id: UUID, index: TenantIndex, *, start: int,
                progress: Progress | None) -> int:
        """Another process writes this replica (a server and the CLI share ``index/``):
        both read the same outbox, so wait for its commits instead of applying them
        twice. Returns at the outbox head, or once the writer is free and taken here."""
        while True:
            head = self.feed.outbox_head(tenant_id)
            index.refresh()
            seen = index.applied_seq()
            with self._applied:
                self._applied.notify_all()
            if progress is not None:
                progress("lexical", seen - start, max(head, seen) - start)
            if seen >= head:
                return seen
            try:
                index.take_writer()
            except IndexBusy:
                time.sleep(FOLLOW_POLL)
            else:
                return seen

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
                      should_stop: Callable[[], bool] | None = None, wait: bool = True,
                      progress: Progress | None = None) -> int:
        """Embed passages without a current vector; returns how many were embedded.

        Owns the tenant's embedding work for the call: with ``wait`` it waits for another
        owner (the CLI), else it raises :class:`EmbeddingBusy` (the worker tries later).
        Rounds of ``EMBED_BATCH`` passages walk the backlog by id; the vectors of each
        model batch go to a writer thread while the model computes the next. With
        ``should_stop`` the call returns between model batches as soon as it says so
        (what is embedded so far is stored): a round of long passages takes minutes on
        two cores, longer than ``Worker.stop`` waits, and a thread left inside
        onnxruntime at interpreter exit aborts it.
        """
        embedder = self.embedder
        if embedder is None:
            return 0
        model = embedder.model_hash
        with self.feed.embedding_owner(tenant_id, wait=wait) as owned:
            if not owned:
                raise EmbeddingBusy(f"tenant {tenant_id}: another process embeds its passages")
            total = (self.feed.pending_count(tenant_id, model_hash=model)
                     if progress is not None else 0)
            with VectorWriter(self.vectors, tenant_id, model) as writer:
                after = batches = done = 0
                while max_batches is None or batches < max_batches:
                    rows = self.feed.pending_passages(tenant_id, model_hash=model,
                                                      limit=EMBED_BATCH, after=after)
                    if not rows:
                        break
                    after = rows[-1][0]
                    for positions, vectors in _batches(embedder, [t for _, t in rows]):
                        writer.put([rows[i][0] for i in positions], vectors)
                        done += len(positions)
                        if progress is not None:
                            progress("embeddings", done, max(total, done))
                        if should_stop is not None and should_stop():
                            break  # stopping: out of both loops
                    else:  # the round is done: the next one, unless told to yield
                        batches += 1
                        if len(rows) >= TRIM_AFTER:  # its token ids and batches are freed
                            heap.release()
                        if should_yield is None or not should_yield():
                            continue
                    break
        return writer.written

    def status(self, tenant_id: UUID) -> IndexStatus:
        """Outbox head, applied lexical sequence and embeddings still pending."""
        model = self.embedder.model_hash if self.embedder else ""
        return IndexStatus(outbox_seq=self.feed.outbox_head(tenant_id),
                           lexical_seq=self.index(tenant_id).applied_seq(),
                           pending_embeddings=self.feed.pending_count(tenant_id,
                                                                      model_hash=model))

    def catch_up(self, tenant_id: UUID, *, progress: Progress | None = None) -> IndexStatus:
        """Bring both indexes fully up to date (tests, CLI, benchmarks)."""
        self.sync_lexical(tenant_id, progress=progress)
        self.embed_pending(tenant_id, progress=progress)
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


def _batches(embedder: Embedder, texts: list[str]) -> Iterator[tuple[list[int], Vector]]:
    """The embedder's own batches when it hands them out, else the whole list at once."""
    if isinstance(embedder, BatchEmbedder):
        yield from embedder.embed_batches(texts)
    else:
        yield list(range(len(texts))), embedder.embed_passages(texts)


def _doc(row: dict[str, Any]) -> IndexedPassage:
    # The index key is (assertion, ordinal): one passage text may occur twice in a version.
    return IndexedPassage(
        assertion_id=row["assertion_id"], passage_id=row["ordinal"], document=row["document"],
        version_id=row["version_id"], start=row["start_cp"], end=row["end_cp"],
        text=row["text"], heading_path=PATH_SEPARATOR.join(row["path"]),
        valid_from=micros(row["valid_from"]), valid_to=micros(row["valid_to"]),
        tx_from=micros(row["tx_from"]), tx_to=micros(row["tx_to"]),
        confidentiality=row["confidentiality"])
