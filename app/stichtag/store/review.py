"""PostgreSQL adapter of the ReviewStore port (reads; writes go through a unit of work)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row

from stichtag.store.database import Database
from stichtag.store.sqlfiles import query


class PgReview:
    """Support-review samples, items and verdicts."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def population(self, tenant_id: UUID, *, clearance: int, run_from: datetime,
                   run_to: datetime) -> list[tuple[UUID, dict[str, Any], datetime]]:
        """Delivered answer runs recorded within the clearance, in the window."""
        with self.db.tx(tenant_id) as conn:
            return [(r[0], r[2], r[1]) for r in conn.execute(query("review_population"), {
                "clearance": clearance, "run_from": run_from, "run_to": run_to})]

    def samples(self, tenant_id: UUID, *, clearance: int) -> list[dict[str, Any]]:
        """The tenant's samples within the clearance, newest first."""
        with self.db.tx(tenant_id) as conn:
            return conn.cursor(row_factory=dict_row).execute(
                query("review_samples_list"), {"clearance": clearance}).fetchall()

    def sample(self, tenant_id: UUID, sample_id: UUID, *, clearance: int
               ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]] | None:
        """(header, items, verdicts) of one sample within the clearance (one read)."""
        with self.db.tx(tenant_id) as conn:
            cur = conn.cursor(row_factory=dict_row)
            head = cur.execute(query("review_sample_get"), {
                "sample_id": sample_id, "clearance": clearance}).fetchone()
            if head is None:
                return None
            items = cur.execute(query("review_items_get"), {"sample_id": sample_id}).fetchall()
            verdicts = cur.execute(query("review_verdicts_get"),
                                   {"sample_id": sample_id}).fetchall()
        return head, items, verdicts
