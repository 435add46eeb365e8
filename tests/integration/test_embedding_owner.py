"""One owner of a tenant's embedding work at a time (docs/operations.md, "Derived indexes"): the
server's
background worker and the CLI's ``index sync`` run at once on the same tenant and every
passage is embedded exactly once.

Each side gets its own :class:`Indexer`, as two processes would, over the real database;
the owner lock is a PostgreSQL advisory lock, so it does not care that both live in one
process here. The worker's model stalls inside its first call until the CLI side has
either finished (which it would without the lock: it re-embeds the very passages the
worker holds) or is seen waiting for the lock in ``pg_locks``; nothing in the test waits
on a clock for its verdict.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
import pytest

from stichtag.index.applier import EmbeddingBusy, Indexer
from stichtag.index.worker import Worker
from stichtag.ports import Vector
from stichtag.services.documents import IngestRequest
from stichtag.store.database import Database, open_pool
from stichtag.store.outbox import PgIndexFeed
from stichtag.store.retrieval import PgRetrieval

DIMS = 384
STALL_LIMIT = 120.0
"""Seconds the stalled model gives the other side before failing the test as hung."""


class CountingEmbedder:
    """Hash vectors of the right width; counts every passage text it embeds."""

    model_hash = "counting-1"

    def __init__(self, seen: Counter[str], before: Callable[[], None] | None = None) -> None:
        self.seen = seen
        self.before = before

    def embed_queries(self, texts: list[str]) -> Vector:
        """Unused by the indexer; here for the port."""
        return self.embed_passages(texts)

    def embed_passages(self, texts: list[str]) -> Vector:
        """One unit vector per text, derived from its hash."""
        if self.before is not None:
            before, self.before = self.before, None
            before()
        self.seen.update(texts)
        out = np.empty((len(texts), DIMS), dtype=np.float32)
        for row, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest())
            vec = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
            out[row] = vec / np.linalg.norm(vec)
        return out


def _waiting_for_advisory_lock(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchone()
    return bool(row and row[0])


def _ingest(services: Any, tenant: Any) -> int:
    text = "# Rundschreiben\n\n" + "".join(
        f"## § {i}\n\n({i}) Abschnitt {i} regelt den Fall Nummer {i} im Einzelnen.\n\n"
        for i in range(1, 121))
    services.documents.ingest(tenant, "rundschreiben", IngestRequest(
        text=text, valid_from=datetime(2024, 1, 1, tzinfo=UTC), doc_class="note"))
    with services.store.tx(tenant.tenant_id) as conn:
        row = conn.execute("SELECT count(*) FROM passages").fetchone()
    assert row is not None
    return int(row[0])


def test_worker_and_cli_sync_embed_each_passage_once(services: Any, tenant: Any) -> None:
    services.worker.stop()  # the two indexers below are the only embedders
    passages = _ingest(services, tenant)
    assert passages >= 100
    seen: Counter[str] = Counter()
    cli_started = threading.Event()
    cli_done = threading.Event()
    url = services.settings.database_url

    def stall() -> None:
        # Inside the worker's first model call: let the CLI side run into it.
        assert cli_started.wait(STALL_LIMIT)
        deadline = time.monotonic() + STALL_LIMIT
        while not cli_done.is_set() and not _waiting_for_advisory_lock(url):
            assert time.monotonic() < deadline, "the CLI side neither ran nor waited"
            time.sleep(0.05)

    root = services.settings.index_dir
    served = Indexer(services.store.feed, services.store.retrieval, root / "server",
                     CountingEmbedder(seen, before=stall))
    cli = Indexer(services.store.feed, services.store.retrieval, root / "cli",
                  CountingEmbedder(seen))
    worker = Worker(served)
    worker.start()
    result: dict[str, Any] = {}

    def sync() -> None:
        cli_started.set()
        try:
            result["status"] = cli.catch_up(tenant.tenant_id)
        finally:
            cli_done.set()

    try:
        worker.submit(tenant.tenant_id)
        thread = threading.Thread(target=sync)
        thread.start()
        thread.join(2 * STALL_LIMIT)
        assert cli_done.is_set()
    finally:
        worker.stop()
        served.close()
        cli.close()
    assert result["status"].pending_embeddings == 0
    assert sum(seen.values()) == passages
    assert set(seen.values()) == {1}


def test_the_worker_steps_aside_while_another_process_owns_the_tenant(
        services: Any, tenant: Any) -> None:
    services.worker.stop()
    _ingest(services, tenant)
    seen: Counter[str] = Counter()
    indexer = Indexer(services.store.feed, services.store.retrieval,
                      services.settings.index_dir / "other", CountingEmbedder(seen))
    try:
        with services.store.feed.embedding_owner(tenant.tenant_id, wait=False) as owned:
            assert owned
            with pytest.raises(EmbeddingBusy):
                indexer.embed_pending(tenant.tenant_id, wait=False)
        assert not seen
        # released: the next try owns it and embeds
        assert indexer.embed_pending(tenant.tenant_id, wait=False) > 0
    finally:
        indexer.close()


def test_the_owner_lock_takes_no_pooled_connection(services: Any, tenant: Any) -> None:
    # With a pool of one, an owner holding its lock on a pooled connection could never
    # read its pending passages (the pool would time out after 30 s).
    services.worker.stop()
    passages = _ingest(services, tenant)
    seen: Counter[str] = Counter()
    pool = open_pool(services.settings.database_url, min_size=1, max_size=1)
    db = Database(pool)
    indexer = Indexer(PgIndexFeed(db), PgRetrieval(db), services.settings.index_dir / "one",
                      CountingEmbedder(seen))
    try:
        assert indexer.catch_up(tenant.tenant_id).pending_embeddings == 0
    finally:
        indexer.close()
        pool.close()
    assert sum(seen.values()) == passages
