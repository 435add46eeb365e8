"""The PostgreSQL adapters over one pool, built together (app/stichtag/bootstrap.py wires them).

Each attribute implements ports of ``stichtag.ports``; ``tx`` is for operator code and tests
that inspect the database directly, never for the use cases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from psycopg import Connection
from psycopg_pool import ConnectionPool

from stichtag.store.database import Database, open_pool
from stichtag.store.documents import PgDocumentStore
from stichtag.store.outbox import PgIndexFeed
from stichtag.store.replica import Count, PrimaryReads, ReadRouter, Reads
from stichtag.store.retrieval import PgRetrieval
from stichtag.store.review import PgReview
from stichtag.store.runs import PgRuns
from stichtag.store.sources import PgSources
from stichtag.store.tenancy import PgTenancy
from stichtag.store.units import PgTransactions

__all__ = ["PgStore", "open_pool"]


class PgStore:
    """Every PostgreSQL adapter of one database."""

    def __init__(self, pool: ConnectionPool, *, read_pool: ConnectionPool | None = None,
                 read_wait: float = 0.5, count: Count | None = None,
                 waited: Callable[[float], None] | None = None,
                 lock_wait: float | None = None) -> None:
        self.db = Database(pool, lock_wait=lock_wait)
        self.pool = pool
        self.read_pool = read_pool
        self.replica = (ReadRouter(self.db, Database(read_pool), wait_seconds=read_wait,
                                   count=count, waited=waited)
                        if read_pool is not None else None)
        """The standby router (``STICHTAG_READ_DATABASE_URL``), else ``None``."""
        reads: Reads = self.replica or PrimaryReads(self.db)
        self.documents = PgDocumentStore(self.db, reads)
        self.tenancy = PgTenancy(self.db)
        self.retrieval = PgRetrieval(self.db, reads)
        self.feed = PgIndexFeed(self.db)
        self.runs = PgRuns(self.db)
        self.sources = PgSources(self.db)
        self.review = PgReview(self.db)
        self.units = PgTransactions(self.db)

    @contextmanager
    def tx(self, tenant_id: UUID | None, **settings: str) -> Iterator[Connection[Any]]:
        """A raw tenant transaction (operators and tests only)."""
        with self.db.tx(tenant_id, **settings) as conn:
            yield conn

    def close(self) -> None:
        """Release both pools."""
        if self.read_pool is not None:
            self.read_pool.close()
        self.pool.close()
