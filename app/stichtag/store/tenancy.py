"""PostgreSQL adapter of the TenantStore and KeyStore ports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any
from uuid import UUID

from psycopg.rows import class_row, dict_row

from stichtag.domain.errors import Conflict, NotFound
from stichtag.domain.records import KeyCheck, KeyRate, KeyRow, TenantRow
from stichtag.store.database import Database
from stichtag.store.sqlfiles import query

_KEY_FIELDS = tuple(f.name for f in fields(KeyRow))


class PgTenancy:
    """Tenants and their API keys."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def create_tenant(self, tenant_id: UUID, name: str, time_zone: str) -> TenantRow:
        """Insert a tenant; a taken name is a Conflict."""
        with self.db.tx(tenant_id, tenant_name=name) as conn:
            if conn.execute(query("tenant_by_name"), {"name": name}).fetchone():
                raise Conflict("name", f"tenant {name!r} exists")
            cur = conn.cursor(row_factory=class_row(TenantRow))
            row = cur.execute(query("tenant_insert"), {
                "tenant_id": tenant_id, "name": name, "time_zone": time_zone}).fetchone()
            assert row is not None
            return row

    def tenant_by_name(self, name: str) -> TenantRow | None:
        """Resolve a tenant by its name (operator CLI)."""
        with self.db.tx(None, tenant_name=name) as conn:
            cur = conn.cursor(row_factory=class_row(TenantRow))
            return cur.execute(query("tenant_by_name"), {"name": name}).fetchone()

    def tenant(self, tenant_id: UUID) -> TenantRow:
        """The tenant row for an id."""
        with self.db.tx(tenant_id) as conn:
            row = conn.cursor(row_factory=class_row(TenantRow)).execute(
                query("tenant_current")).fetchone()
            if row is None:
                raise NotFound("tenant")
            return row

    def insert_key(self, tenant_id: UUID, **values: Any) -> KeyRow:
        """Store a key row (the secret only as its hash)."""
        with self.db.tx(tenant_id) as conn:
            row = conn.cursor(row_factory=class_row(KeyRow)).execute(
                query("key_insert"), values).fetchone()
            assert row is not None
            return row

    def lookup_key(self, key_id: str) -> tuple[KeyRow, str] | None:
        """The key row for a presented key id across tenants (RLS admits exactly it),
        with the tenant's time zone, in one statement."""
        with self.db.tx(None, key_lookup=key_id) as conn:
            row = conn.cursor(row_factory=dict_row).execute(
                query("key_lookup"), {"key_id": key_id}).fetchone()
        if row is None:
            return None
        return KeyRow(**{name: row[name] for name in _KEY_FIELDS}), str(row["time_zone"])

    def check_key(self, key_id: str, admit: Callable[[KeyRow], bool],
                  rate: KeyRate | None) -> KeyCheck | None:
        """Authentication's one transaction: the key row, then, if ``admit`` accepts it,
        one request charged to the key's rate (0013_key_rates.sql). The charge is the
        limit every process and node shares; it writes an unlogged row, so the commit
        waits for no WAL flush."""
        with self.db.tx(None, key_lookup=key_id) as conn:
            found = conn.cursor(row_factory=dict_row).execute(
                query("key_lookup"), {"key_id": key_id}).fetchone()
            if found is None:
                return None
            row = KeyRow(**{name: found[name] for name in _KEY_FIELDS})
            if not admit(row):
                return KeyCheck(row=row, time_zone=str(found["time_zone"]), admitted=False)
            wait = 0.0
            if rate is not None:
                charged = conn.execute(query("key_rate_charge"), {
                    "tenant_id": row.tenant_id, "key_id": row.key_id,
                    "interval": rate.interval, "tolerance": rate.tolerance}).fetchone()
                assert charged is not None
                wait = float(charged[0])
            return KeyCheck(row=row, time_zone=str(found["time_zone"]), admitted=True, wait=wait)

    def list_keys(self, tenant_id: UUID) -> list[KeyRow]:
        """All keys of a tenant."""
        with self.db.tx(tenant_id) as conn:
            return conn.cursor(row_factory=class_row(KeyRow)).execute(query("key_list")).fetchall()

    def revoke_key(self, tenant_id: UUID, key_id: str) -> bool:
        """Revoke a key now; False when unknown to this tenant or already revoked."""
        with self.db.tx(tenant_id) as conn:
            return conn.execute(query("key_revoke"), {"key_id": key_id}).fetchone() is not None
