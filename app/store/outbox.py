"""PostgreSQL adapter of the IndexFeed port: what the outbox applier reads."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row

from app.store.database import Database
from app.store.sqlfiles import query


class PgIndexFeed:
    """Outbox rows, the index documents they open, and passages still to embed."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def outbox_after(self, tenant_id: UUID, after: int, limit: int
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Outbox rows after ``after`` in commit order, and the index documents of the
        assertions they open (one transaction, so both describe the same state)."""
        with self.db.tx(tenant_id) as conn:
            rows = conn.cursor(row_factory=dict_row).execute(
                query("outbox_after"), {"after": after, "limit": limit}).fetchall()
            if not rows:
                return [], []
            opened = sorted({r["assertion_id"] for r in rows if r["kind"] == "open"})
            docs = conn.cursor(row_factory=dict_row).execute(
                query("index_docs_for_assertions"), {"ids": opened}).fetchall()
        return rows, docs

    def outbox_head(self, tenant_id: UUID) -> int:
        """The newest outbox sequence of the tenant (0 when empty)."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("outbox_head")).fetchone()
        return int(row[0]) if row else 0

    def indexable(self, tenant_id: UUID) -> Iterator[tuple[int, int, datetime | None]]:
        """Every (assertion, ordinal, tx_to) the lexical index of the tenant should hold."""
        with self.db.tx(tenant_id) as conn:
            rows = conn.execute(query("visible_index_docs")).fetchall()
        for a, o, t in rows:
            yield int(a), int(o), t

    def pending_passages(self, tenant_id: UUID, *, model_hash: str,
                         limit: int) -> list[tuple[int, str]]:
        """Passages still to embed with the model, oldest first."""
        with self.db.tx(tenant_id) as conn:
            return [(int(pid), str(text)) for pid, text in conn.execute(
                query("passages_pending"), {"model_hash": model_hash, "limit": limit})]

    def pending_count(self, tenant_id: UUID, *, model_hash: str) -> int:
        """How many passages of the tenant still lack a vector of the model."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("passages_pending_count"),
                               {"model_hash": model_hash}).fetchone()
        return int(row[0]) if row else 0
