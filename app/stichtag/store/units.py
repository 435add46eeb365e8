"""Units of work: one tenant transaction for what must commit together.

A run-log append and the rows it records (a review sample and its items, a verdict)
commit in one transaction or not at all; the log head row stays locked until the end,
so appends of one tenant serialize and the log stays gapless.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import Connection
from psycopg.types.json import Jsonb

from stichtag.domain.errors import Conflict, NotFound
from stichtag.domain.records import Erasure, ErasureTarget, LogHead
from stichtag.domain.sealing import SealedText
from stichtag.store.database import Database
from stichtag.store.sqlfiles import query

_JSON_FIELDS = frozenset({"filters", "population", "trace"})


def _jsonb(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: Jsonb(v) if k in _JSON_FIELDS else v for k, v in values.items()}


class PgLogWriter:
    """The log rows of one transaction."""

    def __init__(self, conn: Connection[Any]) -> None:
        self.conn = conn

    def observe(self, known_at: datetime) -> datetime:
        """Move the observation hand of the tenant's clock to ``known_at`` (never back)."""
        self.conn.execute(query("commit_without_flush"))  # one fsync per run, not two
        row = self.conn.execute(query("tenant_clock_observe"), {"known_at": known_at}).fetchone()
        if row is None:
            raise NotFound("tenant")
        return row[0]  # type: ignore[no-any-return]

    def lock_head(self, empty_root: bytes) -> LogHead:
        """The tenant's head, created empty if missing, locked until the transaction ends."""
        self.conn.execute(query("log_head_insert"), {"root": empty_root})
        row = self.conn.execute(query("log_head_lock")).fetchone()
        assert row is not None
        size, root, frontier, checkpoint = row
        return LogHead(size=int(size), root=bytes(root),
                       frontier=[bytes(h) for h in frontier], checkpoint=str(checkpoint))

    def insert_leaf(self, *, run_id: UUID, kind: str, key_id: str, record: dict[str, Any],
                    seq: int, leaf: bytes, texts: Sequence[SealedText] = ()) -> None:
        """Store a record as leaf ``seq`` and, outside it, the texts it seals."""
        self.conn.execute(query("run_log_insert"), {
            "run_id": run_id, "kind": kind, "key_id": key_id, "record": Jsonb(record),
            "seq": seq, "leaf": leaf})
        if texts:
            self.conn.execute(query("run_texts_insert"), {"run_id": run_id, "texts": Jsonb([
                {"c": t.commitment.hex(), "s": t.salt.hex(), "t": t.text, "v": list(t.versions)}
                for t in texts])})

    def set_head(self, head: LogHead) -> None:
        """Advance the head."""
        self.conn.execute(query("log_head_update"), {
            "size": head.size, "root": head.root, "frontier": head.frontier,
            "checkpoint": head.checkpoint})


class PgReviewWriter:
    """The review rows of one transaction (append-only tables)."""

    def __init__(self, conn: Connection[Any]) -> None:
        self.conn = conn

    def insert_sample(self, **values: Any) -> None:
        """Store a sample's header."""
        self.conn.execute(query("review_sample_insert"), _jsonb(values))

    def insert_items(self, items: Sequence[Mapping[str, Any]]) -> None:
        """Store a sample's items."""
        with self.conn.cursor() as cur:
            cur.executemany(query("review_item_insert"), [_jsonb(i) for i in items])

    def insert_verdict(self, **values: Any) -> datetime:
        """Store a verdict; Conflict when the item was judged meanwhile (unique index)."""
        try:  # the error ends the unit of work: the log leaf is rolled back with it
            row = self.conn.execute(query("review_verdict_insert"), values).fetchone()
        except psycopg.errors.UniqueViolation:
            raise Conflict("supersedes", f"item {values.get('item')} was judged meanwhile; "
                                         "reload it") from None
        assert row is not None
        return row[0]  # type: ignore[no-any-return]


class PgErasureWriter:
    """The erasure of a version inside the transaction of its run-log record."""

    def __init__(self, conn: Connection[Any]) -> None:
        self.conn = conn

    def target(self, version_id: str, *, clearance: int) -> ErasureTarget | None:
        """Lock the tenant's clock (the outbox rows below are numbered under it) and read
        the version's assertions and documents; None when the version is unknown or an
        assertion of it lies above the clearance."""
        if self.conn.execute(query("tenant_clock_lock")).fetchone() is None:
            raise NotFound("tenant")
        row = self.conn.execute(query("erasure_target"), {
            "version_id": version_id, "clearance": clearance}).fetchone()
        if row is None or row[0] is None or not row[2]:
            return None
        return ErasureTarget(version_id=version_id, assertion_ids=tuple(row[0]),
                             documents=tuple(sorted(row[1])), erased=bool(row[3]))

    def record(self, erasure: Erasure) -> None:
        """Store the erasure row (its log leaf is already in this transaction)."""
        self.conn.execute(query("erasure_insert"), {
            "version_id": erasure.version_id, "run_id": erasure.run_id, "seq": erasure.seq,
            "key_id": erasure.key_id, "reason": erasure.reason,
            "erased_at": erasure.erased_at})

    def blank(self, version_id: str) -> dict[str, int]:
        """Blank the version's content (0011's erase_version) and delete the sealed texts
        runs took from it (0017's erase_run_texts); what was blanked now (zeros when
        nothing came back since)."""
        row = self.conn.execute(query("erasure_blank"), {"version_id": version_id}).fetchone()
        assert row is not None
        blanked = dict(zip(("blocks", "heading_paths", "passages", "originals"), row[0],
                           strict=True))
        texts = self.conn.execute(query("erasure_run_texts"),
                                  {"version_id": version_id}).fetchone()
        assert texts is not None
        blanked["run_texts"] = int(texts[0])  # quotes recorded runs took from it (0017)
        return blanked

    def queue(self, assertion_ids: Sequence[int]) -> None:
        """Tell the lexical index to drop the documents of these assertions (outbox)."""
        for assertion_id in assertion_ids:
            self.conn.execute(query("outbox_insert"),
                              {"kind": "erase", "assertion_id": assertion_id})

    def logged(self) -> list[dict[str, Any]]:
        """The erasure records of the tenant's run log, oldest first."""
        return [r[0] for r in self.conn.execute(query("erasure_records"))]


class PgUnit:
    """One transaction's writers."""

    def __init__(self, conn: Connection[Any]) -> None:
        self.log = PgLogWriter(conn)
        self.review = PgReviewWriter(conn)
        self.erasure = PgErasureWriter(conn)


class PgTransactions:
    """Opens units of work on the database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @contextmanager
    def unit(self, tenant_id: UUID) -> Iterator[PgUnit]:
        """A unit of work of one tenant: committed at the end of the block."""
        with self.db.tx(tenant_id) as conn:
            yield PgUnit(conn)
