"""PostgreSQL adapter of the SourceStore port: originals and the versions extracted from them.

An original is kept once per tenant by its content address and never changes (grants and
triggers, migrations/0009_originals.sql); the layout map is stored
zlib-compressed (the columnar JSON compresses about 5:1, docs/extraction.md). Writes happen
inside the bitemporal write's transaction (``store_source``, called by ``PgDocumentStore.write``),
so a version and its original commit together or not at all.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from psycopg import Connection
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from stichtag.domain.records import OriginalFile, SourceUpload, VersionSource
from stichtag.store.database import Database
from stichtag.store.sqlfiles import query

# zlib level 6: deterministic output for the same map, ~5x smaller than the JSON.
_LEVEL = 6


def store_source(conn: Connection[Any], version_id: str, source: SourceUpload) -> None:
    """Keep the original (once per tenant) and link the version to it (once)."""
    conn.execute(query("original_insert"), {
        "original_id": source.original_id, "media_type": source.media_type,
        "size": len(source.data), "data": source.data})
    conn.execute(query("version_source_insert"), {
        "version_id": version_id, "original_id": source.original_id,
        "extractor_id": source.extractor_id, "provenance": Jsonb(source.provenance),
        "layout": zlib.compress(source.layout, _LEVEL)})


class PgSources:
    """Tenant-scoped reads of originals, sources and layout maps."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def sources(self, tenant_id: UUID, version_ids: Sequence[str], *,
                clearance: int) -> dict[str, VersionSource]:
        """The first source of each version that has one, within the clearance."""
        if not version_ids:
            return {}
        with self.db.tx(tenant_id) as conn:
            rows = conn.cursor(row_factory=class_row(VersionSource)).execute(
                query("version_sources_first"),
                {"ids": list(dict.fromkeys(version_ids)), "clearance": clearance}).fetchall()
        return {r.version_id: r for r in rows}

    def layout(self, tenant_id: UUID, *, version_id: str, original_id: str) -> bytes | None:
        """The serialized layout map (decompressed)."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("version_source_layout"), {
                "version_id": version_id, "original_id": original_id}).fetchone()
        return zlib.decompress(bytes(row[0])) if row is not None else None

    def original(self, tenant_id: UUID, *, version_id: str, clearance: int,
                 original_id: str | None = None) -> OriginalFile | None:
        """The bytes of the version's first (or the named) original, within clearance."""
        with self.db.tx(tenant_id) as conn:
            row = conn.execute(query("version_original"), {
                "version_id": version_id, "clearance": clearance,
                "original_id": original_id}).fetchone()
        if row is None:
            return None
        return OriginalFile(original_id=row[0], media_type=row[1], data=bytes(row[2]))
