"""PostgreSQL adapter of the DocumentStore port: bitemporal writes and as-of reads.

A write applies a plan of the pure domain (``stichtag.domain.bitemporal``) in one transaction:
the tenant's clock row is locked first (writes of a tenant serialize), the planner sees
the document's currently known assertions, and every assertion opened or closed gets its
outbox row in the same transaction, so the derived indexes can never miss a change.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import Connection
from psycopg.rows import class_row, dict_row
from psycopg.types.json import Jsonb

from stichtag.domain.asof import AsOf
from stichtag.domain.bitemporal import Current, Interval, Meta, NewAssertion
from stichtag.domain.errors import Conflict, NotFound
from stichtag.domain.prepared import PreparedVersion
from stichtag.domain.records import (
    AssertionRow,
    Erasure,
    SourceUpload,
    VersionContent,
    VersionExcerpt,
    VersionRow,
    WriteResult,
)
from stichtag.domain.txclock import next_tx
from stichtag.ports import Planner
from stichtag.store.database import Database
from stichtag.store.replica import PrimaryReads, Reads
from stichtag.store.sources import store_source
from stichtag.store.sqlfiles import query
from stichtag.store.versions import (
    assemble,
    assemble_excerpt,
    blocks_around,
    store_version,
)


class PgDocumentStore:
    """Tenant-scoped bitemporal writes and reads."""

    def __init__(self, db: Database, reads: Reads | None = None) -> None:
        self.db = db
        self.reads: Reads = reads or PrimaryReads(db)

    def write(self, tenant_id: UUID, *, document_key: str, planner: Planner,
              version: PreparedVersion | None, tx_time: datetime | None,
              provenance: dict[str, Any], reason: str | None = None,
              create_document: bool = True, source: SourceUpload | None = None,
              bulk: bool = False) -> WriteResult:
        """Apply one bitemporal write in one transaction; the planner sees current state.
        ``source`` (the original of ``version``) is kept in the same transaction. The
        outbox rows of a ``bulk`` write are not awaited by readers (0014)."""
        with self.db.tx(tenant_id, **({"bulk": "on"} if bulk else {})) as conn:
            clock = conn.execute(query("tenant_clock_lock")).fetchone()
            if clock is None:
                raise NotFound("tenant")
            last_tx, observed_to, now = clock
            tx = next_tx(last_tx, observed_to, now, tx_time)
            doc = conn.execute(query("document_get"), {"key": document_key}).fetchone()
            if doc is None:
                if not create_document:
                    raise NotFound("document")
                doc = conn.execute(query("document_insert"), {"key": document_key}).fetchone()
            assert doc is not None
            document_id = doc[0]
            current, tx_from = _current(conn, document_id)
            plan = planner(current)
            if plan.empty:
                return WriteResult(tx_time=tx, created_version=False, opened=(), closed=(),
                                   asserted=None)
            created = store_version(conn, version) if version is not None else False
            if source is not None and version is not None:
                store_source(conn, version.version_id, source)
            for assertion_id in plan.close:
                if tx_from[assertion_id] >= tx:
                    raise Conflict("tx_time", "equals the time of this document's previous change")
                conn.execute(query("assertion_close"), {
                    "assertion_id": assertion_id, "tx": tx, "ended": plan.ending, "reason": reason})
                conn.execute(query("outbox_insert"),
                             {"kind": "close", "assertion_id": assertion_id})
            opened: list[int] = []
            asserted_id: int | None = None
            for new in plan.open:
                new_id = _open(conn, document_id, new, tx, provenance)
                opened.append(new_id)
                if new.kind == "asserted":
                    asserted_id = new_id
            conn.execute(query("tenant_clock_set"), {"tx": tx})
            asserted = None
            if asserted_id is not None:
                asserted = conn.cursor(row_factory=class_row(AssertionRow)).execute(
                    query("assertion_by_id"), {"assertion_id": asserted_id}).fetchone()
            return WriteResult(tx_time=tx, created_version=created, opened=tuple(opened),
                               closed=plan.close, asserted=asserted)

    # -- reads --------------------------------------------------------------------------

    def assertion_asof(self, tenant_id: UUID, *, key: str, as_of: AsOf,
                       clearance: int) -> AssertionRow | None:
        """The assertion of ``key`` visible at the as-of pair within the clearance."""
        with self.reads.read_tx(tenant_id, as_of.known_at) as conn:
            return conn.cursor(row_factory=class_row(AssertionRow)).execute(
                query("assertion_asof"), {"key": key, "valid_at": as_of.valid_at,
                                          "known_at": as_of.known_at, "clearance": clearance}
            ).fetchone()

    def in_force(self, tenant_id: UUID, *, as_of: AsOf, clearance: int,
                 limit: int) -> list[AssertionRow]:
        """Every document's assertion visible at the as-of pair within the clearance, by
        key, at most ``limit``."""
        with self.reads.read_tx(tenant_id, as_of.known_at) as conn:
            return conn.cursor(row_factory=class_row(AssertionRow)).execute(
                query("assertions_in_force"), {"valid_at": as_of.valid_at,
                                               "known_at": as_of.known_at,
                                               "clearance": clearance, "limit": limit}
            ).fetchall()

    def history(self, tenant_id: UUID, *, key: str, clearance: int) -> list[AssertionRow]:
        """Every assertion of a document within the clearance."""
        with self.db.tx(tenant_id) as conn:
            return conn.cursor(row_factory=class_row(AssertionRow)).execute(
                query("assertion_history"), {"key": key, "clearance": clearance}).fetchall()

    def changes_window(self, tenant_id: UUID, *, known_from: datetime, known_to: datetime,
                       key: str | None, clearance: int, cap: int
                       ) -> tuple[list[AssertionRow], set[str]]:
        """Assertions whose transaction time starts or ends in ``(known_from, known_to]``
        (at most ``cap`` rows), and which of their documents were known at ``known_from``.

        One transaction, so both parts describe the same committed state.
        """
        with self.db.tx(tenant_id) as conn:
            rows = conn.cursor(row_factory=class_row(AssertionRow)).execute(
                query("changes_window"), {"known_from": known_from, "known_to": known_to,
                                          "key": key, "clearance": clearance, "cap": cap}
            ).fetchall()
            keys = sorted({r.document for r in rows})
            known = {r[0] for r in conn.execute(query("documents_known_at"), {
                "keys": keys, "known_at": known_from, "clearance": clearance})}
        return rows, known

    def visible_versions(self, tenant_id: UUID, version_ids: Sequence[str], *,
                         clearance: int) -> set[str]:
        """Which of the versions have some assertion within the clearance."""
        if not version_ids:
            return set()
        with self.db.tx(tenant_id) as conn:
            return {r[0] for r in conn.execute(query("versions_visible"), {
                "ids": list(version_ids), "clearance": clearance})}

    def readable_versions(self, tenant_id: UUID, version_ids: Sequence[str], *,
                          clearance: int) -> set[str]:
        """Which of the versions are within the clearance and not erased."""
        if not version_ids:
            return set()
        with self.db.tx(tenant_id) as conn:
            return {r[0] for r in conn.execute(query("versions_readable"), {
                "ids": list(version_ids), "clearance": clearance})}

    def erasures(self, tenant_id: UUID, version_ids: Sequence[str], *,
                 clearance: int) -> dict[str, Erasure]:
        """The erasures of those versions some assertion within the clearance shows."""
        if not version_ids:
            return {}
        with self.db.tx(tenant_id) as conn:
            rows = conn.cursor(row_factory=class_row(Erasure)).execute(
                query("erasures_of"), {"ids": list(dict.fromkeys(version_ids)),
                                       "clearance": clearance}).fetchall()
        return {r.version_id: r for r in rows}

    def erasures_window(self, tenant_id: UUID, *, known_from: datetime, known_to: datetime,
                        key: str | None, clearance: int) -> list[Erasure]:
        """Erasures recorded in ``(known_from, known_to]`` within the clearance."""
        with self.db.tx(tenant_id) as conn:
            return conn.cursor(row_factory=class_row(Erasure)).execute(
                query("erasures_window"), {"known_from": known_from, "known_to": known_to,
                                           "key": key, "clearance": clearance}).fetchall()

    def version_row(self, tenant_id: UUID, *, version_id: str,
                    clearance: int) -> VersionRow | None:
        """A version's stored row (no text), if some assertion of it is within clearance."""
        with self.db.tx(tenant_id) as conn:
            return conn.cursor(row_factory=class_row(VersionRow)).execute(
                query("version_visible"), {"version_id": version_id, "clearance": clearance}
            ).fetchone()

    def version_content(self, tenant_id: UUID, *, version_id: str,
                        clearance: int) -> VersionContent | None:
        """A version's text and sentences, if some assertion of it is within clearance
        and it is not erased.

        A version is immutable until it is erased and its assertions are never deleted, so
        a standby that has it has the primary's (``Reads.lookup``; an erasure that has not
        reached the standby yet is the one exception, see docs/operations.md)."""
        def read(conn: Connection[Any]) -> VersionContent | None:
            row = conn.cursor(row_factory=class_row(VersionRow)).execute(
                query("version_readable"), {"version_id": version_id, "clearance": clearance}
            ).fetchone()
            if row is None:  # unknown, above clearance, or erased (see ``erasures``)
                return None
            blocks = conn.cursor(row_factory=dict_row).execute(
                query("version_blocks"), {"version_id": version_id}).fetchall()
            return assemble(row, blocks)

        return self.reads.lookup(tenant_id, read)

    def version_excerpts(self, tenant_id: UUID, windows: Sequence[tuple[str, int, int]], *,
                         clearance: int, also_check: Sequence[str] = ()
                         ) -> dict[str, VersionExcerpt] | None:
        """The blocks of versions around (version id, start, end) windows; None when one
        of the versions, or of ``also_check``, is unknown or has no assertion within the
        clearance. One transaction, two reads however many versions."""
        wanted = list(dict.fromkeys(w[0] for w in windows))
        ids = list(dict.fromkeys([*wanted, *also_check]))
        if not ids:
            return {}

        def read(conn: Connection[Any]) -> dict[str, VersionExcerpt] | None:
            layouts = {r["version_id"]: r for r in conn.cursor(row_factory=dict_row).execute(
                query("version_layouts"),
                {"ids": ids, "wanted": wanted, "clearance": clearance})}
            if len(layouts) < len(ids):
                return None
            picked = {vid: blocks_around(layouts[vid]["block_starts"],
                                         [(lo, hi) for v, lo, hi in windows if v == vid])
                      for vid in wanted}
            pairs = list(dict.fromkeys((layouts[vid]["block_ids"][i], layouts[vid]["path_ids"][i])
                                       for vid in wanted for i in picked[vid]))
            rows = conn.cursor(row_factory=dict_row).execute(query("blocks_with_paths"), {
                "block_ids": [p[0] for p in pairs], "path_ids": [p[1] for p in pairs]}
            ).fetchall() if pairs else []
            blocks = {(r["block_id"], r["path_id"]): r for r in rows}
            return {vid: assemble_excerpt(layouts[vid], picked[vid], blocks) for vid in wanted}

        # immutable like version_content: the standby's copy when it has every version
        return self.reads.lookup(tenant_id, read)

    def version_documents(self, tenant_id: UUID, *, version_id: str,
                          clearance: int) -> list[str]:
        """The document keys a version is asserted for, within the clearance."""
        with self.db.tx(tenant_id) as conn:
            return [r[0] for r in conn.execute(query("version_document"), {
                "version_id": version_id, "clearance": clearance})]

    def current_version(self, tenant_id: UUID, *, key: str, now: datetime,
                        clearance: int) -> str | None:
        """The version of a document in force now as known now, within the clearance."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("document_current_version"), {
                "key": key, "now": now, "clearance": clearance}).fetchone()
        return str(row[0]) if row else None


def _current(conn: Connection[Any], document_id: int
             ) -> tuple[list[Current], dict[int, datetime]]:
    rows = conn.cursor(row_factory=dict_row).execute(
        query("assertions_current"), {"document_id": document_id}).fetchall()
    tx_from = {r["assertion_id"]: r["tx_from"] for r in rows}
    return [Current(
        assertion_id=r["assertion_id"], version_id=r["version_id"],
        valid=Interval(start=r["valid_from"], end=r["valid_to"]),
        meta=Meta(title=r["title"], doc_class=r["doc_class"],
                  confidentiality=r["confidentiality"]),
    ) for r in rows], tx_from


def _open(conn: Connection[Any], document_id: int, new: NewAssertion, tx: datetime,
          provenance: dict[str, Any]) -> int:
    prov = dict(provenance) if new.kind == "asserted" else {
        "kind": "carried", "carried_from": new.carried_from}
    row = conn.execute(query("assertion_insert"), {
        "document_id": document_id, "version_id": new.version_id,
        "valid_from": new.valid.start, "valid_to": new.valid.end, "tx": tx,
        "title": new.meta.title, "doc_class": new.meta.doc_class,
        "confidentiality": new.meta.confidentiality, "provenance": Jsonb(prov),
    }).fetchone()
    assert row is not None
    conn.execute(query("outbox_insert"), {"kind": "open", "assertion_id": row[0]})
    return int(row[0])
