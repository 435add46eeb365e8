"""PostgreSQL adapter of the Store port (psycopg 3, a connection pool, RLS per transaction).

Every transaction sets ``app.tenant_id`` with ``set_config(..., true)`` (local to the
transaction), so a pooled connection never carries one tenant's setting into the next
request; without it, row-level security shows nothing at all.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from uuid import UUID

import blake3
from pgvector.psycopg import register_vector
from psycopg import Connection
from psycopg.rows import class_row, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from app.domain.bitemporal import Current, Interval, Meta, NewAssertion, Plan
from app.domain.errors import Conflict, NotFound
from app.domain.prepared import SENTENCE_HASH_BYTES, PreparedVersion
from app.domain.timeutil import MICRO
from app.store.rows import (
    AssertionRow,
    KeyRow,
    SentenceRow,
    TenantRow,
    VersionContent,
    VersionRow,
    WriteResult,
)
from app.store.sqlfiles import query

Planner = Callable[[list[Current]], Plan]


def open_pool(url: str, *, min_size: int = 1, max_size: int = 8, name: str = "stichtag") -> ConnectionPool:
    """A pool of autocommit connections; transactions are explicit blocks.

    Each connection is checked (an empty query) when it leaves the pool: after PostgreSQL
    restarts (a crash, a failover, an operator's restart) the idle connections are dead,
    and without the check each one would fail one request with a 500 before the pool
    noticed. The check costs one round trip per checkout.
    """
    pool = ConnectionPool(url, min_size=min_size, max_size=max_size, open=False, name=name,
                          kwargs={"autocommit": True}, configure=register_vector,
                          check=ConnectionPool.check_connection)
    pool.open(wait=True, timeout=30)
    return pool


class PgStore:
    """Tenant-scoped reads and writes over the bitemporal schema."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    @contextmanager
    def tx(self, tenant_id: UUID | None, **settings: str) -> Iterator[Connection[Any]]:
        """A transaction with the tenant (and any extra ``app.*`` settings) set locally."""
        with self.pool.connection() as conn, conn.transaction():
            if tenant_id is not None:
                conn.execute("SELECT set_config('app.tenant_id', %s, true)", (str(tenant_id),))
            for name, value in settings.items():
                conn.execute("SELECT set_config(%s, %s, true)", (f"app.{name}", value))
            yield conn

    # -- tenants and keys --------------------------------------------------------------

    def create_tenant(self, tenant_id: UUID, name: str, time_zone: str) -> TenantRow:
        """Insert a tenant; a taken name is a Conflict."""
        with self.tx(tenant_id, tenant_name=name) as conn:
            if conn.execute(query("tenant_by_name"), {"name": name}).fetchone():
                raise Conflict("name", f"tenant {name!r} exists")
            cur = conn.cursor(row_factory=class_row(TenantRow))
            row = cur.execute(query("tenant_insert"), {
                "tenant_id": tenant_id, "name": name, "time_zone": time_zone}).fetchone()
            assert row is not None
            return row

    def tenant_by_name(self, name: str) -> TenantRow | None:
        """Resolve a tenant by its name (operator CLI)."""
        with self.tx(None, tenant_name=name) as conn:
            cur = conn.cursor(row_factory=class_row(TenantRow))
            return cur.execute(query("tenant_by_name"), {"name": name}).fetchone()

    def tenant(self, tenant_id: UUID) -> TenantRow:
        """The tenant row for an id."""
        with self.tx(tenant_id) as conn:
            row = conn.cursor(row_factory=class_row(TenantRow)).execute(
                query("tenant_current")).fetchone()
            if row is None:
                raise NotFound("tenant")
            return row

    def insert_key(self, tenant_id: UUID, **fields: Any) -> KeyRow:
        """Store a key row (the secret only as its hash)."""
        with self.tx(tenant_id) as conn:
            row = conn.cursor(row_factory=class_row(KeyRow)).execute(
                query("key_insert"), fields).fetchone()
            assert row is not None
            return row

    def lookup_key(self, key_id: str) -> KeyRow | None:
        """The key row for a presented key id, across tenants (RLS admits exactly it)."""
        with self.tx(None, key_lookup=key_id) as conn:
            return conn.cursor(row_factory=class_row(KeyRow)).execute(
                query("key_lookup"), {"key_id": key_id}).fetchone()

    def list_keys(self, tenant_id: UUID) -> list[KeyRow]:
        """All keys of a tenant."""
        with self.tx(tenant_id) as conn:
            return conn.cursor(row_factory=class_row(KeyRow)).execute(query("key_list")).fetchall()

    def revoke_key(self, tenant_id: UUID, key_id: str) -> bool:
        """Revoke a key now; False when unknown to this tenant or already revoked."""
        with self.tx(tenant_id) as conn:
            return conn.execute(query("key_revoke"), {"key_id": key_id}).fetchone() is not None

    # -- writes -------------------------------------------------------------------------

    def write(
        self,
        tenant_id: UUID,
        *,
        document_key: str,
        planner: Planner,
        version: PreparedVersion | None,
        tx_time: datetime | None,
        provenance: dict[str, Any],
        reason: str | None = None,
        create_document: bool = True,
    ) -> WriteResult:
        """Apply one bitemporal write in one transaction; the planner sees current state."""
        with self.tx(tenant_id) as conn:
            clock = conn.execute(query("tenant_clock_lock")).fetchone()
            if clock is None:
                raise NotFound("tenant")
            last_tx, now = clock
            tx = self._tx_time(last_tx, now, tx_time)
            doc = conn.execute(query("document_get"), {"key": document_key}).fetchone()
            if doc is None:
                if not create_document:
                    raise NotFound("document")
                doc = conn.execute(query("document_insert"), {"key": document_key}).fetchone()
            assert doc is not None
            document_id = doc[0]
            current, tx_from = self._current(conn, document_id)
            plan = planner(current)
            if plan.empty:
                return WriteResult(tx_time=tx, created_version=False, opened=(), closed=(),
                                   asserted=None)
            created = self._store_version(conn, version) if version is not None else False
            for assertion_id in plan.close:
                if tx_from[assertion_id] >= tx:
                    raise Conflict("tx_time", "equals the time of this document's previous change")
                conn.execute(query("assertion_close"), {
                    "assertion_id": assertion_id, "tx": tx, "ended": plan.ending, "reason": reason})
                conn.execute(query("outbox_insert"), {"kind": "close", "assertion_id": assertion_id})
            opened: list[int] = []
            asserted_id: int | None = None
            for new in plan.open:
                new_id = self._open(conn, document_id, new, tx, provenance)
                opened.append(new_id)
                if new.kind == "asserted":
                    asserted_id = new_id
            conn.execute(query("tenant_clock_set"), {"tx": tx})
            asserted = None
            if asserted_id is not None:
                asserted = self._assertion(conn, asserted_id)
            return WriteResult(tx_time=tx, created_version=created, opened=tuple(opened),
                               closed=plan.close, asserted=asserted)

    @staticmethod
    def _tx_time(last_tx: datetime | None, now: datetime, requested: datetime | None) -> datetime:
        if requested is None:
            # Strictly increasing per tenant even if the wall clock steps back.
            return now if last_tx is None or now > last_tx else last_tx + MICRO
        if last_tx is not None and requested < last_tx:
            raise Conflict("tx_time", f"must not be before the tenant's latest transaction "
                                      f"time {last_tx.isoformat()}")
        if requested > now:
            raise Conflict("tx_time", "must not be in the future")
        return requested

    @staticmethod
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

    @staticmethod
    def _open(conn: Connection[Any], document_id: int, new: NewAssertion, tx: datetime,
              provenance: dict[str, Any]) -> int:
        if new.kind == "asserted":
            prov = dict(provenance)
        else:
            prov = {"kind": "carried", "carried_from": new.carried_from}
        row = conn.execute(query("assertion_insert"), {
            "document_id": document_id, "version_id": new.version_id,
            "valid_from": new.valid.start, "valid_to": new.valid.end, "tx": tx,
            "title": new.meta.title, "doc_class": new.meta.doc_class,
            "confidentiality": new.meta.confidentiality, "provenance": Jsonb(prov),
        }).fetchone()
        assert row is not None
        conn.execute(query("outbox_insert"), {"kind": "open", "assertion_id": row[0]})
        return int(row[0])

    @staticmethod
    def _assertion(conn: Connection[Any], assertion_id: int) -> AssertionRow:
        row = conn.cursor(row_factory=class_row(AssertionRow)).execute(
            query("assertion_by_id"), {"assertion_id": assertion_id}).fetchone()
        assert row is not None
        return row

    def _store_version(self, conn: Connection[Any], version: PreparedVersion) -> bool:
        """Store a version and its new blocks; False when it was already stored."""
        existing = conn.cursor(row_factory=class_row(VersionRow)).execute(
            query("version_get"), {"version_id": version.version_id}).fetchone()
        if existing is not None:
            if existing.media_type != version.media_type:
                raise Conflict("media_type", f"this text is stored as {existing.media_type}")
            return False
        block_ids = self._store_blocks(conn, version)
        passage_paths = [p.heading_path for p in version.passages]
        path_ids = self._store_paths(conn, [*version.paths, *passage_paths])
        passage_ids = self._store_passages(conn, version)
        conn.execute(query("version_insert"), {
            "version_id": version.version_id, "media_type": version.media_type,
            "segmenter_id": version.segmenter_id, "block_ids": block_ids,
            "path_ids": path_ids[:len(version.paths)], "len_cp": version.len_cp,
            "len_u16": version.len_u16, "n_sentences": version.n_sentences,
            "passage_ids": passage_ids,
            "passage_starts": [p.start for p in version.passages],
            "passage_ends": [p.end for p in version.passages],
            "passage_u16_starts": [u for u, _ in version.passage_u16],
            "passage_u16_ends": [u for _, u in version.passage_u16],
            "passage_path_ids": path_ids[len(version.paths):],
        })
        return True

    @staticmethod
    def _store_blocks(conn: Connection[Any], version: PreparedVersion) -> list[int]:
        hashes = list(dict.fromkeys(b.hash for b in version.blocks))
        known = dict(conn.execute(query("blocks_by_hash"), {"hashes": hashes}).fetchall())
        missing = [b for b in {b.hash: b for b in version.blocks}.values() if b.hash not in known]
        if missing:
            # COPY would be faster, but PostgreSQL refuses COPY FROM under row-level
            # security; executemany runs in pipeline mode, one round trip per batch.
            with conn.cursor() as cur:
                cur.executemany(query("block_insert"), [{
                    "hash": b.hash, "text": b.text, "kind": b.kind, "level": b.level,
                    "title": b.title, "label": b.label, "len_cp": b.len_cp,
                    "len_u16": b.len_u16, "sent_starts": list(b.sent_starts),
                    "sent_ends": list(b.sent_ends), "sent_u16_starts": list(b.sent_u16_starts),
                    "sent_u16_ends": list(b.sent_u16_ends), "sent_hashes": b.sent_hashes,
                } for b in missing])
            known = dict(conn.execute(query("blocks_by_hash"), {"hashes": hashes}).fetchall())
        return [known[b.hash] for b in version.blocks]

    @staticmethod
    def _store_passages(conn: Connection[Any], version: PreparedVersion) -> list[int]:
        """Store new distinct passages (embedding pending); ids in the version's order."""
        distinct = {p.hash: p for p in version.passages}
        known = dict(conn.execute(query("passages_by_hash"),
                                  {"hashes": list(distinct)}).fetchall())
        missing = [p for h, p in distinct.items() if h not in known]
        if missing:
            with conn.cursor() as cur:
                cur.executemany(query("passage_insert"),
                                [{"hash": p.hash, "text": p.embed_text} for p in missing])
            known = dict(conn.execute(query("passages_by_hash"),
                                      {"hashes": list(distinct)}).fetchall())
        return [known[p.hash] for p in version.passages]

    @staticmethod
    def _store_paths(conn: Connection[Any], paths: Sequence[tuple[str, ...]]) -> list[int]:
        def key(path: tuple[str, ...]) -> bytes:
            return blake3.blake3("\x1f".join(path).encode("utf-8")).digest()

        distinct = {key(p): p for p in paths}
        known = dict(conn.execute(query("paths_by_hash"), {"hashes": list(distinct)}).fetchall())
        missing = [(h, p) for h, p in distinct.items() if h not in known]
        if missing:
            with conn.cursor() as cur:
                cur.executemany(query("path_insert"), [{"hash": h, "path": list(p)}
                                                       for h, p in missing])
            known = dict(conn.execute(query("paths_by_hash"),
                                      {"hashes": list(distinct)}).fetchall())
        return [known[key(p)] for p in paths]

    # -- reads --------------------------------------------------------------------------

    def assertion_asof(self, tenant_id: UUID, *, key: str, valid_at: datetime,
                       known_at: datetime, clearance: int) -> AssertionRow | None:
        """The assertion of ``key`` visible at the as-of pair within the clearance."""
        with self.tx(tenant_id) as conn:
            return conn.cursor(row_factory=class_row(AssertionRow)).execute(
                query("assertion_asof"), {"key": key, "valid_at": valid_at,
                                          "known_at": known_at, "clearance": clearance}
            ).fetchone()

    def history(self, tenant_id: UUID, *, key: str, clearance: int) -> list[AssertionRow]:
        """Every assertion of a document within the clearance."""
        with self.tx(tenant_id) as conn:
            return conn.cursor(row_factory=class_row(AssertionRow)).execute(
                query("assertion_history"), {"key": key, "clearance": clearance}).fetchall()

    def changes_window(self, tenant_id: UUID, *, known_from: datetime, known_to: datetime,
                       key: str | None, clearance: int, cap: int
                       ) -> tuple[list[AssertionRow], set[str]]:
        """Assertions whose transaction time starts or ends in ``(known_from, known_to]``
        (at most ``cap`` rows), and which of their documents were known at ``known_from``.

        One transaction, so both parts describe the same committed state.
        """
        with self.tx(tenant_id) as conn:
            rows = conn.cursor(row_factory=class_row(AssertionRow)).execute(
                query("changes_window"), {"known_from": known_from, "known_to": known_to,
                                          "key": key, "clearance": clearance, "cap": cap}
            ).fetchall()
            keys = sorted({r.document for r in rows})
            known = {r[0] for r in conn.execute(query("documents_known_at"), {
                "keys": keys, "known_at": known_from, "clearance": clearance})}
        return rows, known

    def run(self, tenant_id: UUID, run_id: UUID) -> dict[str, Any] | None:
        """A recorded run of the tenant."""
        with self.tx(tenant_id) as conn:
            return conn.cursor(row_factory=dict_row).execute(
                query("run_get"), {"run_id": run_id}).fetchone()

    def version_visible(self, tenant_id: UUID, *, version_id: str, clearance: int) -> bool:
        """Whether some assertion of the version lies within the clearance."""
        with self.tx(tenant_id) as conn:
            return conn.execute(query("version_visible"), {
                "version_id": version_id, "clearance": clearance}).fetchone() is not None

    def version_row(self, tenant_id: UUID, *, version_id: str,
                    clearance: int) -> VersionRow | None:
        """A version's stored row (no text), if some assertion of it is within clearance."""
        with self.tx(tenant_id) as conn:
            return conn.cursor(row_factory=class_row(VersionRow)).execute(
                query("version_visible"), {"version_id": version_id, "clearance": clearance}
            ).fetchone()

    def version_content(self, tenant_id: UUID, *, version_id: str,
                        clearance: int) -> VersionContent | None:
        """A version's text and sentences, if some assertion of it is within clearance."""
        with self.tx(tenant_id) as conn:
            row = conn.cursor(row_factory=class_row(VersionRow)).execute(
                query("version_visible"), {"version_id": version_id, "clearance": clearance}
            ).fetchone()
            if row is None:
                return None
            blocks = conn.cursor(row_factory=dict_row).execute(
                query("version_blocks"), {"version_id": version_id}).fetchall()
        return assemble(row, blocks)


def assemble(version: VersionRow, blocks: Sequence[dict[str, Any]]) -> VersionContent:
    """Rebuild text and absolute sentence offsets from a version's stored blocks."""
    out = io.StringIO()
    sentences: list[SentenceRow] = []
    cp = u16 = 0
    for b in blocks:
        out.write(b["text"])
        hashes = b["sent_hashes"]
        for i, (s, e, us, ue) in enumerate(zip(b["sent_starts"], b["sent_ends"],
                                                b["sent_u16_starts"], b["sent_u16_ends"],
                                                strict=True)):
            sentences.append(SentenceRow(
                ordinal=len(sentences), start=cp + s, end=cp + e, utf16_start=u16 + us,
                utf16_end=u16 + ue,
                hash=bytes(hashes[i * SENTENCE_HASH_BYTES:(i + 1) * SENTENCE_HASH_BYTES]),
                heading_path=tuple(b["path"]),
            ))
        cp += b["len_cp"]
        u16 += b["len_u16"]
    return VersionContent(version=version, text=out.getvalue(), sentences=tuple(sentences))
