"""The connection pool and the one way a transaction starts (row-level security per tx).

Every transaction sets ``app.tenant_id`` with ``set_config(..., true)`` (local to the
transaction), so a pooled connection never carries one tenant's setting into the next
request; without it, row-level security shows nothing at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import psycopg
from pgvector.psycopg import register_vector
from psycopg import Connection
from psycopg_pool import ConnectionPool, PoolTimeout


class DatabaseUnavailable(RuntimeError):
    """PostgreSQL cannot be reached or refuses the connection (down, wrong URL, login)."""


def probe(url: str, *, timeout: int = 5) -> None:
    """One connection attempt that fails within ``timeout`` seconds with libpq's reason.

    The pool retries for its whole wait before it gives up, and says only that it timed
    out; a command line should say at once why it cannot connect. libpq's messages name
    host and port, never the password.
    """
    try:
        psycopg.connect(url, connect_timeout=timeout).close()
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(str(exc).strip().splitlines()[0]) from exc


def open_pool(url: str, *, min_size: int = 1, max_size: int = 8,
              name: str = "stichtag") -> ConnectionPool:
    """A pool of autocommit connections; transactions are explicit blocks.

    Each connection is checked (an empty query) when it leaves the pool: after PostgreSQL
    restarts (a crash, a failover, an operator's restart) the idle connections are dead,
    and without the check each one would fail one request with a 500 before the pool
    noticed. The check costs one round trip per checkout.
    """
    pool = ConnectionPool(url, min_size=min_size, max_size=max_size, open=False, name=name,
                          kwargs={"autocommit": True}, configure=register_vector,
                          check=ConnectionPool.check_connection)
    try:
        pool.open(wait=True, timeout=30)
    except PoolTimeout as exc:
        pool.close()
        raise DatabaseUnavailable(f"no connection within 30 s ({exc})") from exc
    return pool


def open_standby_pool(url: str, *, max_size: int = 8) -> ConnectionPool:
    """A pool on a hot standby, opened without waiting: a node starts while its standby is
    down or still recovering, and its reads go to the primary until the standby answers
    (stichtag/store/replica.py)."""
    pool = ConnectionPool(url, min_size=1, max_size=max_size, open=False, name="stichtag-read",
                          kwargs={"autocommit": True}, configure=register_vector,
                          check=ConnectionPool.check_connection, timeout=2)
    pool.open(wait=False)
    return pool


class Database:
    """A pool and tenant-scoped transactions over it (used by the adapters only)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self.transactions = 0
        """Transactions opened by this process (a counter for benchmarks and tests)."""

    @contextmanager
    def session(self) -> Iterator[Connection[Any]]:
        """An autocommit connection of its own, outside the pool, closed after the block:
        for a session-level lock held (or waited for) longer than a request, which must not
        take a pooled connection from the work it waits for."""
        info = self.pool.conninfo
        with psycopg.connect(info() if callable(info) else info, autocommit=True) as conn:
            yield conn

    @contextmanager
    def tx(self, tenant_id: UUID | None, **settings: str) -> Iterator[Connection[Any]]:
        """A transaction with the tenant (and any extra ``app.*`` settings) set locally."""
        self.transactions += 1
        with self.pool.connection() as conn, conn.transaction():
            if tenant_id is not None:
                conn.execute("SELECT set_config('app.tenant_id', %s, true)", (str(tenant_id),))
            for name, value in settings.items():
                conn.execute("SELECT set_config(%s, %s, true)", (f"app.{name}", value))
            yield conn
