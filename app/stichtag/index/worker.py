"""The background worker of one node: threads that keep the derived indexes current.

The lexical thread applies outbox rows as soon as a tenant is named (a write on this
node, a reader waiting for its own writes, a write another process committed): it is
fast and never waits behind the embedding thread, whose rounds take seconds. Both catch
up the tenants whose index directories exist on this node when they start. The listening
thread hears every commit that grew an outbox (PostgreSQL LISTEN/NOTIFY) and names the
tenants this node keeps a replica of to both threads, so a write through another process
or node is applied and embedded here at once, not when the next reader here waits for it
(readers do not wait for a bulk load at all). Embedding has one owner per tenant across
processes (``IndexFeed.embedding_owner``): a CLI ``index sync`` takes it and this node
steps aside.
"""

from __future__ import annotations

import queue
import threading
from uuid import UUID

import structlog

from stichtag.index.applier import EmbeddingBusy, Indexer

log = structlog.get_logger("stichtag.indexer")
BUSY_RETRY = 5.0
"""Seconds between looks at a tenant whose embedding work another process owns."""
LISTEN_RETRY = 1.0
"""Seconds before the listening thread connects again after losing its connection."""


class Worker:
    """Starts and stops the lexical and embedding threads around an :class:`Indexer`."""

    def __init__(self, indexer: Indexer) -> None:
        self.indexer = indexer
        self._lexical: queue.Queue[UUID | None] = queue.Queue()
        self._embed: queue.Queue[UUID | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    def submit(self, tenant_id: UUID) -> None:
        """Bring a tenant's indexes up to date soon."""
        self._lexical.put(tenant_id)
        self._embed.put(tenant_id)

    def start(self) -> None:
        """Start both threads; they first catch up tenants indexed on this node."""
        if self._threads:
            return
        self._stop.clear()
        self._threads = [
            threading.Thread(target=self._run_lexical, name="stichtag-lexical", daemon=True),
            threading.Thread(target=self._run_embed, name="stichtag-embed", daemon=True),
            threading.Thread(target=self._run_listen, name="stichtag-listen", daemon=True)]
        for thread in self._threads:
            thread.start()
        self.indexer.background = self
        for tenant in self._held():
            self.submit(tenant)

    def stop(self) -> None:
        """Stop both threads (an embedding round stops at its next slice)."""
        if not self._threads:
            return
        self.indexer.background = None
        self._stop.set()
        self._lexical.put(None)
        self._embed.put(None)
        for thread in self._threads:
            thread.join(timeout=30)
        self._threads = []

    @property
    def running(self) -> bool:
        """Whether the threads were started and not stopped."""
        return bool(self._threads)

    def _run_listen(self) -> None:
        caught_up = True
        while not self._stop.is_set():
            try:
                if not caught_up:  # notifications were missed while not listening
                    self._catch_up_held()
                caught_up = True
                for tenant in self.indexer.feed.listen(self._stop.is_set):
                    if self.indexer.holds(tenant):
                        # Both: the write may bring passages to embed, and no reader
                        # names a tenant whose new rows it does not wait for (a bulk
                        # load's). The embedding thread applies the lexical rows first.
                        self.submit(tenant)
            except Exception:
                log.warning("indexer_listen_lost", exc_info=True)
            caught_up = False
            self._stop.wait(LISTEN_RETRY)

    def _catch_up_held(self) -> None:
        for tenant in self._held():
            self._lexical.put(tenant)

    def _held(self) -> list[UUID]:
        """The tenants whose replicas this node keeps (their directories)."""
        return self.indexer.held()

    def _run_lexical(self) -> None:
        while not self._stop.is_set():
            item = self._lexical.get()
            if item is None:
                return
            try:
                self.indexer.sync_lexical(item)
            except Exception:
                log.exception("indexer_error", tenant=str(item), job="lexical")

    def _run_embed(self) -> None:
        pending: set[UUID] = set()
        busy: set[UUID] = set()  # another process embeds them: retried when the queue idles
        while not self._stop.is_set():
            try:
                item = self._embed.get(timeout=0.5 if pending else BUSY_RETRY)
                if item is not None:
                    pending.add(item)
            except queue.Empty:
                pending |= busy
                busy.clear()
            for tenant_id in list(pending):
                if self._stop.is_set():
                    return
                try:
                    # After the tenant's lexical rounds, not beside them: a catch-up held
                    # a lexical round's documents and an embedding round's batches at
                    # once, the sum of both peaks (docs/benchmarks.md, #19 item 4). The
                    # tenant's lock makes this wait for the lexical thread's round, or
                    # apply what that thread has not reached yet.
                    self.indexer.sync_lexical(tenant_id)
                    embedded = self.indexer.embed_pending(
                        tenant_id, max_batches=1, should_yield=lambda: not self._embed.empty(),
                        should_stop=self._stop.is_set, wait=False)
                    if embedded == 0:
                        pending.discard(tenant_id)
                except EmbeddingBusy:
                    # The CLI (or another node) embeds the tenant: stay out of its way and
                    # look again at the next wake-up, in case it stopped half-way.
                    busy.add(tenant_id)
                    pending.discard(tenant_id)
                except Exception:
                    log.exception("indexer_error", tenant=str(tenant_id), job="embeddings")
                    pending.discard(tenant_id)
