"""The connection pool and the one way a transaction starts (row-level security per tx).

Every transaction sets ``app.tenant_id`` with ``set_config(..., true)`` (local to the
transaction), so a pooled connection never carries one tenant's setting into the next
request; without it, row-level security shows nothing at all.

A transaction costs two round trips besides its statements: ``BEGIN`` and the settings
travel as one simple query, and ``COMMIT``. The pool does not test a connection when it
leaves the pool (that was a third round trip); the ``BEGIN`` is the test. A connection
that died while idle (PostgreSQL restarted, failed over) fails at ``BEGIN``, before any
statement ran, so the transaction is started again on another connection and the pool
discards the dead one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any
from uuid import UUID

import psycopg
from pgvector.psycopg import register_vector
from psycopg import Connection, sql
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
    """A pool of autocommit connections; transactions are explicit blocks (``Database.tx``).

    No check on checkout: ``Database.tx`` finds a dead connection at its ``BEGIN`` and
    starts over on another one (module docstring).
    """
    pool = ConnectionPool(url, min_size=min_size, max_size=max_size, open=False, name=name,
                          kwargs={"autocommit": True}, configure=register_vector)
    try:
        pool.open(wait=True, timeout=30)
    except PoolTimeout as exc:
        pool.close()
        raise DatabaseUnavailable(f"no connection within 30 s ({exc})") from exc
    return pool


def open_standby_pool(url: str, *, max_size: int = 8) -> ConnectionPool:
    """A pool on a hot standby, opened without waiting: a node starts while its standby is
    down or still recovering, and its reads go to the primary until the standby answers
    (app/stichtag/store/replica.py)."""
    pool = ConnectionPool(url, min_size=1, max_size=max_size, open=False, name="stichtag-read",
                          kwargs={"autocommit": True}, configure=register_vector,
                          check=ConnectionPool.check_connection, timeout=2)
    pool.open(wait=False)
    return pool


class Database:
    """A pool and tenant-scoped transactions over it (used by the adapters only)."""

    def __init__(self, pool: ConnectionPool, *, lock_wait: float | None = None) -> None:
        self.pool = pool
        self.lock_wait = lock_wait
        """Seconds a statement waits for a row lock (``lock_timeout``; a tenant's write
        in flight holds its clock row) before it fails with LockNotAvailable; None: no
        bound."""
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
        conn = self._begin(tenant_id, settings)
        try:
            try:
                yield conn
            except BaseException:
                if not conn.broken:
                    # a failed ROLLBACK must not hide the error; the pool rolls back or
                    # discards a connection returned inside a transaction
                    with suppress(psycopg.Error):
                        conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            self.pool.putconn(conn)

    def _begin(self, tenant_id: UUID | None, settings: dict[str, str]) -> Connection[Any]:
        """A pooled connection inside ``BEGIN`` with the settings made, in one round trip.

        Literal values, not parameters: only a query without parameters goes as a simple
        query, which may hold several statements. ``sql.Literal`` quotes them.
        """
        pairs = ([("app.tenant_id", str(tenant_id))] if tenant_id is not None else [])
        pairs += [(f"app.{name}", value) for name, value in settings.items()]
        if self.lock_wait is not None:
            pairs.append(("lock_timeout", f"{max(1, round(self.lock_wait * 1000))}ms"))
        begin: sql.SQL | sql.Composed = sql.SQL("BEGIN")
        if pairs:
            calls = sql.SQL(", ").join(sql.SQL("set_config({}, {}, true)").format(
                sql.Literal(name), sql.Literal(value)) for name, value in pairs)
            begin = sql.SQL("BEGIN; SELECT {}").format(calls)
        # Each retry takes another pooled connection; past max_size + 1 dead ones the
        # server is down, not the connections stale, and the error is the answer.
        for attempt in range(self.pool.max_size + 1):
            conn = self.pool.getconn()
            try:
                conn.execute(begin)
            except psycopg.OperationalError:
                self.pool.putconn(conn)  # closed or broken: the pool discards it
                if (not conn.broken and not conn.closed) or attempt == self.pool.max_size:
                    raise
                continue
            except BaseException:
                self.pool.putconn(conn)
                raise
            return conn
        raise AssertionError("unreachable")  # the loop returns or raises
