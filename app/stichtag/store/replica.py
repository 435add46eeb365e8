"""Reads from a streaming standby, exact as of their Stichtag (docs/architecture.md, "Reads
from a standby"; docs/operations.md, "Read replicas").

A node with ``STICHTAG_READ_DATABASE_URL`` opens a second pool on a hot standby. Writes, run
log appends and every read not listed in the architecture section stay on the primary; the
as-of reads of search, answers and documents ask ``ReadRouter.read_tx``, which uses the
standby only where its answer equals the primary's:

1. **Stable past.** The standby's own copy of the tenant's transaction clock proves that
   nothing it lacks can be visible at ``known_at``: ``known_at <= observed_to`` (no write
   lands at or before an observation) or ``known_at < last_tx`` (no write lands before the
   latest one). Writes and observations serialize on the clock row and a write moves
   ``last_tx`` in the transaction that changes its assertions, so a standby whose snapshot
   holds the clock row also holds every change at or before it (replay is in commit order).
2. **Otherwise caught up.** The standby waits (bounded, ``STICHTAG_READ_WAIT``) until it has
   replayed the primary's WAL flush position taken when the read starts, so it holds every
   commit the primary would show (content commits are synchronous: flushed before they are
   visible); after the bound the read goes to the primary.
3. **A consistency token** (``Stichtag-Consistency``: the tenant's outbox head after a write,
   a per-tenant number) is always honoured: under rule 1 the standby serves only when its
   copy of the tenant's outbox has reached the token; rule 2 covers it by construction (the
   write committed before the read took the flush position). Not a WAL position: an LSN
   counts every tenant's writes, and no number a tenant reads may (docs/architecture.md §9).
4. **Immutable rows** (a version by its content address): the standby's copy if it has
   one, else the primary's (``lookup``).

Replay only moves forward, so a standby found exact stays exact for the request's later
reads. That needs one standby behind the URL (not a balancer over several).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar
from uuid import UUID

from psycopg import Connection

from stichtag.store.database import Database

CONSISTENCY_HEADER = "stichtag-consistency"
"""The header a write answers with and a read may send (lower case, as ASGI carries it)."""

_LSN = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")

@dataclass(kw_only=True)
class RequestReads:
    """What the router knows about the current request (set by the API per request)."""

    token: int | None = None
    """The consistency token: the tenant's outbox position the request must see."""

    gave_up: bool = False
    """A read of this request waited out the bound: its later reads skip the wait."""


request_reads: ContextVar[RequestReads | None] = ContextVar("stichtag_request_reads",
                                                            default=None)
"""The current request's ``RequestReads``; ``None`` outside a request (CLI, workers)."""

_TOKEN = re.compile(r"^[0-9]{1,18}$")


class BadToken(ValueError):
    """A consistency token that is not one (a decimal outbox position), or an LSN that is
    not one (``X/Y``, hexadecimal)."""


def parse_token(text: str) -> int:
    """``'42'`` → 42; ``BadToken`` otherwise."""
    if _TOKEN.match(text.strip()) is None:
        raise BadToken(f"not a consistency token: {text[:40]!r}")
    return int(text.strip())


def parse_lsn(text: str) -> int:
    """``'16/B374D848'`` → its 64-bit position; ``BadToken`` otherwise."""
    match = _LSN.match(text.strip())
    if match is None:
        raise BadToken(f"not an LSN: {text[:40]!r}")
    return (int(match.group(1), 16) << 32) | int(match.group(2), 16)


def format_lsn(value: int) -> str:
    """The 64-bit position as PostgreSQL writes it."""
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def flush_lsn(db: Database) -> int:
    """The primary's WAL flush position: every synchronous commit so far lies before it."""
    with db.pool.connection() as conn:
        row = conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()
    assert row is not None
    return parse_lsn(row[0])


@dataclass(frozen=True, kw_only=True)
class ReplicaStatus:
    """What the standby has replayed relative to the primary (for /metrics and /readyz)."""

    reachable: bool
    lag_bytes: int | None = None
    lag_seconds: float | None = None
    paused: bool | None = None


T = TypeVar("T")


class Reads(Protocol):
    """Where an as-of read transaction runs (``ReadRouter`` or ``PrimaryReads``)."""

    def read_tx(self, tenant_id: UUID, known_at: datetime | None
                ) -> AbstractContextManager[Connection[Any]]:
        """A read transaction of ``tenant_id`` exact at ``known_at``."""
        ...

    def lookup(self, tenant_id: UUID, read: Callable[[Connection[Any]], T | None]) -> T | None:
        """``read`` of something immutable once it exists (a version by its content
        address): the standby's copy if it has one, else the primary's."""
        ...


Count = Callable[[str, str], None]
"""``count(target, reason)``: one routed read, for the metrics."""


def stable_past(known_at: datetime, last_tx: datetime | None, observed_to: datetime | None) -> bool:
    """Rule 1: is the view at ``known_at`` final in a snapshot holding this clock row?"""
    return ((observed_to is not None and known_at <= observed_to)
            or (last_tx is not None and known_at < last_tx))


class ReadRouter:
    """Picks the standby or the primary for one read transaction (rules in the module doc)."""

    RETRY_SECONDS = 5.0
    """After the standby failed to answer, reads go straight to the primary this long
    (then the standby is asked again), instead of each waiting for a connection."""

    CONNECT_SECONDS = 1.0
    """How long the check waits for a standby connection before it counts as failed."""

    def __init__(self, primary: Database, standby: Database, *, wait_seconds: float,
                 count: Count | None = None, waited: Callable[[float], None] | None = None,
                 poll_seconds: float = 0.005) -> None:
        self.primary = primary
        self.standby = standby
        self.wait_seconds = wait_seconds
        self.poll_seconds = poll_seconds
        self._count = count or (lambda target, reason: None)
        self._waited = waited or (lambda seconds: None)
        self._down_until = 0.0

    def _clock(self, tenant_id: UUID) -> tuple[int, datetime | None, datetime | None, int]:
        """(replayed LSN, last_tx, observed_to, outbox head) as the standby has them now."""
        with self.standby.pool.connection(timeout=self.CONNECT_SECONDS) as conn, \
                conn.transaction():
            conn.execute("SELECT set_config('app.tenant_id', %s, true)", (str(tenant_id),))
            row = conn.execute(
                "SELECT pg_last_wal_replay_lsn()::text, t.last_tx, t.observed_to, "
                "(SELECT coalesce(max(o.seq), 0) FROM outbox o WHERE o.tenant_id = app_tenant()) "
                "FROM (SELECT 1) one LEFT JOIN tenants t ON t.tenant_id = app_tenant()"
            ).fetchone()
        assert row is not None
        replayed = parse_lsn(row[0]) if row[0] else 0
        return replayed, row[1], row[2], int(row[3])

    def _replayed(self) -> int:
        with self.standby.pool.connection(timeout=self.CONNECT_SECONDS) as conn:
            row = conn.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()
        return parse_lsn(row[0]) if row and row[0] else 0

    def route(self, tenant_id: UUID, known_at: datetime | None) -> tuple[str, str]:
        """(``standby`` or ``primary``, the reason) for a read at ``known_at``; ``None``
        reads the present and takes rule 2."""
        request = request_reads.get()
        token = request.token if request is not None else None
        if time.monotonic() < self._down_until:
            return "primary", "standby_error"
        try:
            replayed, last_tx, observed_to, head = self._clock(tenant_id)
            if (token is None or head >= token) and known_at is not None \
                    and stable_past(known_at, last_tx, observed_to):
                return "standby", "stable_past"
            # Taken after the token's write committed, so it covers that write too.
            target = flush_lsn(self.primary)
            if replayed >= target:
                return "standby", "caught_up"
            return self._wait(target, request)
        except Exception:  # a standby down or restarting: the primary answers
            self._down_until = time.monotonic() + self.RETRY_SECONDS
            return "primary", "standby_error"

    def _wait(self, target: int, request: RequestReads | None) -> tuple[str, str]:
        """Rule 2: poll until the standby has replayed ``target``, at most the bound; a
        request that ran out once sends its later reads to the primary at once."""
        if request is not None and request.gave_up:
            return "primary", "behind"
        started = time.monotonic()
        deadline = started + self.wait_seconds
        while time.monotonic() < deadline:
            time.sleep(self.poll_seconds)
            if self._replayed() >= target:
                self._waited(time.monotonic() - started)
                return "standby", "waited"
        self._waited(time.monotonic() - started)
        if request is not None:
            request.gave_up = True
        return "primary", "behind"

    @contextmanager
    def read_tx(self, tenant_id: UUID, known_at: datetime | None) -> Iterator[Connection[Any]]:
        """A read transaction of ``tenant_id`` on the standby when it is exact, else on
        the primary. A standby transaction is read-only: a write in it fails loudly."""
        target, reason = self.route(tenant_id, known_at)
        self._count(target, reason)
        db = self.standby if target == "standby" else self.primary
        with db.tx(tenant_id) as conn:
            yield conn

    def lookup(self, tenant_id: UUID, read: Callable[[Connection[Any]], T | None]) -> T | None:
        """``read`` on the standby; when it finds nothing (not replayed yet, or absent), on
        the primary. Only for rows that never change once written and never disappear:
        then a row the standby has is the primary's row, whatever the token or known_at."""
        found, reason = None, "standby_error"
        if time.monotonic() >= self._down_until:
            try:
                with self.standby.pool.connection(timeout=self.CONNECT_SECONDS) as conn, \
                        conn.transaction():
                    conn.execute("SELECT set_config('app.tenant_id', %s, true)",
                                 (str(tenant_id),))
                    found = read(conn)
            except Exception:  # the standby down: the primary answers
                self._down_until = time.monotonic() + self.RETRY_SECONDS
            else:
                reason = "missing"
        if found is not None:
            self._count("standby", "immutable")
            return found
        self._count("primary", reason)
        with self.primary.tx(tenant_id) as conn:
            return read(conn)

    def status(self) -> ReplicaStatus:
        """The standby's lag behind the primary's flush position, in bytes and seconds.

        Seconds are 0 once everything flushed is replayed, else the age of the last
        replayed commit (an idle primary does not make a caught-up standby look late).
        """
        try:
            target = flush_lsn(self.primary)
            with self.standby.pool.connection(timeout=1) as conn:
                row = conn.execute(
                    "SELECT pg_last_wal_replay_lsn()::text, pg_is_wal_replay_paused(), "
                    "extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8"
                ).fetchone()
        except Exception:  # unreachable is a status, not an error
            return ReplicaStatus(reachable=False)
        assert row is not None
        replayed = parse_lsn(row[0]) if row[0] else 0
        lag = max(0, target - replayed)
        seconds = 0.0 if lag == 0 else max(0.0, float(row[2] or 0.0))
        return ReplicaStatus(reachable=True, lag_bytes=lag, lag_seconds=seconds,
                             paused=bool(row[1]))


class PrimaryReads:
    """``read_tx`` without a standby: every read on the primary (the default)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @contextmanager
    def read_tx(self, tenant_id: UUID, known_at: datetime | None) -> Iterator[Connection[Any]]:
        """A read transaction on the primary; ``known_at`` does not matter there."""
        del known_at
        with self.db.tx(tenant_id) as conn:
            yield conn

    def lookup(self, tenant_id: UUID, read: Callable[[Connection[Any]], T | None]) -> T | None:
        """``read`` on the primary."""
        with self.db.tx(tenant_id) as conn:
            return read(conn)
