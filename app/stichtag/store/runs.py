"""PostgreSQL adapters of the RunStore and ThresholdStore ports."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from stichtag.domain.records import LogHead, RunRow, ThresholdRow
from stichtag.domain.sealing import unseal
from stichtag.store.database import Database
from stichtag.store.sqlfiles import query


class PgRuns:
    """Recorded runs, the stored log, and threshold versions."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def run(self, tenant_id: UUID, run_id: UUID) -> RunRow | None:
        """One recorded run of the tenant, its sealed texts put back."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("run_get"), {"run_id": run_id}).fetchone()
        return None if row is None else _opened(row)

    def answer_runs(self, tenant_id: UUID, *, since: datetime) -> list[RunRow]:
        """The tenant's answer runs since ``since``, oldest first, texts put back."""
        with self.db.tx(tenant_id) as conn:
            return [_opened(r) for r in conn.execute(query("answer_runs"), {"since": since})]

    def abstained_questions(self, tenant_id: UUID, *, since: datetime, limit: int,
                            reasons: Sequence[str]) -> list[RunRow]:
        """Recent answer runs that abstained with one of ``reasons`` or recorded one of
        them as their gap (``result.gap``: a list answer that named nothing), newest
        first; each record's ``result.reason`` is the one that matched."""
        with self.db.tx(tenant_id) as conn:
            return conn.cursor(row_factory=class_row(RunRow)).execute(
                query("abstained_runs"), {"since": since, "limit": limit,
                                          "reasons": list(reasons)}).fetchall()

    def log_head(self, tenant_id: UUID) -> LogHead | None:
        """The tenant's current log head with its signed checkpoint."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("log_head")).fetchone()
        if row is None:
            return None
        size, root, frontier, checkpoint = row
        return LogHead(size=int(size), root=bytes(root),
                       frontier=[bytes(h) for h in frontier], checkpoint=str(checkpoint))

    def log_leaves(self, tenant_id: UUID, size: int) -> list[bytes]:
        """Leaf hashes of the tenant's log in order, up to ``size``."""
        with self.db.tx(tenant_id) as conn:
            return [bytes(r[0]) for r in conn.execute(query("log_leaves"), {"size": size})]

    def run_leaf(self, tenant_id: UUID, run_id: UUID) -> tuple[int, bytes] | None:
        """The log position and leaf hash of one run (None: unknown here)."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("run_leaf"), {"run_id": run_id}).fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def log_records(self, tenant_id: UUID, size: int) -> list[dict[str, Any]]:
        """The records of the tenant's log in order, up to ``size``, as the leaves hash
        them (sealed texts as placeholders)."""
        return [record for record, _ in self.log_entries(tenant_id, size)]

    def log_entries(self, tenant_id: UUID, size: int
                    ) -> list[tuple[dict[str, Any], dict[str, dict[str, str]]]]:
        """(record as hashed, the openings of its sealed texts still held) in log order."""
        with self.db.tx(tenant_id) as conn:
            return [(r[1], r[2] or {}) for r in conn.execute(query("log_records"),
                                                             {"size": size})]

    # -- thresholds ----------------------------------------------------------------------

    def current_thresholds(self, tenant_id: UUID) -> ThresholdRow | None:
        """The tenant's newest threshold version."""
        with self.db.tx(tenant_id) as conn:
            return conn.cursor(row_factory=class_row(ThresholdRow)).execute(
                query("thresholds_current")).fetchone()

    def threshold_history(self, tenant_id: UUID) -> list[ThresholdRow]:
        """Every recorded threshold version, oldest first."""
        with self.db.tx(tenant_id) as conn:
            return conn.cursor(row_factory=class_row(ThresholdRow)).execute(
                query("thresholds_history")).fetchall()

    def insert_thresholds(self, tenant_id: UUID, **values: Any) -> ThresholdRow:
        """Record the next version; the tenant clock lock serializes version numbers."""
        with self.db.tx(tenant_id) as conn:
            conn.execute(query("tenant_clock_lock"))
            row = conn.cursor(row_factory=class_row(ThresholdRow)).execute(
                query("thresholds_insert"),
                {**values, "calibration": Jsonb(values["calibration"]),
                 "relevance": Jsonb(values["relevance"])}).fetchone()
        assert row is not None
        return row


def _opened(row: Sequence[Any]) -> RunRow:
    """A run row (run_id, kind, key_id, created_at, record, texts) with its texts put back."""
    run_id, kind, key_id, created_at, record, texts = row
    openings = texts or {}
    return RunRow(run_id=run_id, kind=kind, key_id=key_id, created_at=created_at,
                  record=unseal(record, openings), sealed=record, openings=openings)
