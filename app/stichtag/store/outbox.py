"""PostgreSQL adapter of the IndexFeed port: what the outbox applier reads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row

from stichtag.store.database import Database
from stichtag.store.sqlfiles import query


class PgIndexFeed:
    """Outbox rows, the index documents they open, and passages still to embed."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def outbox_rows(self, tenant_id: UUID, after: int, limit: int) -> list[dict[str, Any]]:
        """Outbox rows after ``after`` in commit order (seq, kind, assertion_id, tx_to)."""
        with self.db.tx(tenant_id) as conn:
            return conn.cursor(row_factory=dict_row).execute(
                query("outbox_after"), {"after": after, "limit": limit}).fetchall()

    def index_docs(self, tenant_id: UUID, assertion_ids: list[int], *,
                   part: int) -> Iterator[list[dict[str, Any]]]:
        """The index documents of the assertions, ``part`` at a time.

        A server-side cursor in one transaction: every part describes the same state, and
        only one part is in memory (one sync of the law corpus fetched ~0.3 million
        documents with their text at once before).
        """
        if not assertion_ids:
            return
        with self.db.tx(tenant_id) as conn, conn.cursor(
                "index_docs", row_factory=dict_row) as cur:
            cur.execute(query("index_docs_for_assertions"), {"ids": assertion_ids})
            while rows := cur.fetchmany(part):
                yield rows

    def outbox_head(self, tenant_id: UUID) -> int:
        """The newest outbox sequence of the tenant (0 when empty)."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("outbox_head")).fetchone()
        return int(row[0]) if row else 0

    def outbox_positions(self, tenant_id: UUID) -> tuple[int, int]:
        """(head, awaited): the newest outbox sequence, and the newest that readers wait
        for (rows of bulk writes are not; 0014_outbox_awaited.sql); 0 when none."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("outbox_positions")).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def indexable(self, tenant_id: UUID) -> Iterator[tuple[int, int, datetime | None]]:
        """Every (assertion, ordinal, tx_to) the lexical index of the tenant should hold."""
        with self.db.tx(tenant_id) as conn:
            rows = conn.execute(query("visible_index_docs")).fetchall()
        for a, o, t in rows:
            yield int(a), int(o), t

    def pending_passages(self, tenant_id: UUID, *, model_hash: str, limit: int,
                         after: int = 0) -> list[tuple[int, str]]:
        """Passages still to embed with the model, oldest first, with an id above ``after``."""
        with self.db.tx(tenant_id) as conn:
            return [(int(pid), str(text)) for pid, text in conn.execute(
                query("passages_pending"),
                {"model_hash": model_hash, "limit": limit, "after": after})]

    def listen(self, should_stop: Callable[[], bool], *, poll: float = 1.0) -> Iterator[UUID]:
        """The tenants whose outbox grew, as other processes commit, until ``should_stop``.

        LISTEN on a connection of its own (outside the pool, held for as long as it
        listens); the notification is sent by the outbox insert at commit. Connection
        errors end the iteration (the caller reconnects and catches up).
        """
        with self.db.session() as conn:
            conn.execute("LISTEN stichtag_outbox")
            while not should_stop():
                for note in conn.notifies(timeout=poll):
                    try:
                        yield UUID(note.payload)
                    except ValueError:
                        continue
                    if should_stop():
                        return

    @contextmanager
    def embedding_owner(self, tenant_id: UUID, *, wait: bool) -> Iterator[bool]:
        """Own the tenant's embedding work while the block runs; yields whether it does.

        A PostgreSQL session advisory lock on a connection of its own, held for the
        block: every process on the database (the CLI, each server's worker) sees it, and
        a process that dies releases it with its connection. Not a pooled connection: an
        owner needs pooled connections for its work while another process waits, and a
        small pool would run dry. ``wait`` blocks until the current
        owner is done; otherwise the block runs at once with ``False``. Two tenants whose
        ids hash alike share a lock: they are embedded one after the other, never wrong.
        """
        params = {"tenant": str(tenant_id)}
        with self.db.session() as conn:
            if wait:
                conn.execute(query("embedding_owner_wait"), params)
                owned = True
            else:
                row = conn.execute(query("embedding_owner"), params).fetchone()
                owned = bool(row and row[0])
            yield owned

    def pending_count(self, tenant_id: UUID, *, model_hash: str) -> int:
        """How many passages of the tenant still lack a vector of the model."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("passages_pending_count"),
                               {"model_hash": model_hash}).fetchone()
        return int(row[0]) if row else 0
