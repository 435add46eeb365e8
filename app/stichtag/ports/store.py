"""Ports of the tenant, key, document and original-file stores (app/stichtag/store)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from stichtag.domain.asof import AsOf
from stichtag.domain.prepared import PreparedVersion
from stichtag.domain.records import (
    AssertionRow,
    Erasure,
    KeyCheck,
    KeyRate,
    KeyRow,
    OriginalFile,
    SourceUpload,
    TenantRow,
    VersionContent,
    VersionExcerpt,
    VersionRow,
    VersionSource,
    WriteResult,
)
from stichtag.ports.common import Planner

# -- tenants and keys ----------------------------------------------------------------------


class TenantStore(Protocol):
    """Tenants by id and by name."""

    def create_tenant(self, tenant_id: UUID, name: str, time_zone: str) -> TenantRow:
        """Insert a tenant; a taken name is a Conflict."""
        ...

    def tenant_by_name(self, name: str) -> TenantRow | None:
        """The tenant with this name (operator commands)."""
        ...

    def tenant(self, tenant_id: UUID) -> TenantRow:
        """The tenant row; NotFound when unknown."""
        ...


class KeyStore(Protocol):
    """API key rows (secrets only as hashes)."""

    def insert_key(self, tenant_id: UUID, **fields: Any) -> KeyRow:
        """Store a key row."""
        ...

    def lookup_key(self, key_id: str) -> tuple[KeyRow, str] | None:
        """The key row for a presented key id across tenants, with its tenant's time zone."""
        ...

    def check_key(self, key_id: str, admit: Callable[[KeyRow], bool],
                  rate: KeyRate | None) -> KeyCheck | None:
        """Look up a presented key id and, when ``admit`` accepts its row, charge one
        request to its rate, in one transaction; None for an unknown key id."""
        ...

    def list_keys(self, tenant_id: UUID) -> list[KeyRow]:
        """All keys of a tenant, newest first."""
        ...

    def revoke_key(self, tenant_id: UUID, key_id: str) -> bool:
        """Revoke now; False when unknown to this tenant or already revoked."""
        ...


# -- documents -----------------------------------------------------------------------------


class DocumentStore(Protocol):
    """The bitemporal store of documents, assertions and immutable versions."""

    def write(self, tenant_id: UUID, *, document_key: str, planner: Planner,
              version: PreparedVersion | None, tx_time: datetime | None,
              provenance: dict[str, Any], reason: str | None = None,
              create_document: bool = True, source: SourceUpload | None = None,
              bulk: bool = False) -> WriteResult:
        """Apply one bitemporal write (plan, version, outbox rows, clock) in one transaction;
        the planner sees the document's currently known assertions. ``source`` (the
        original the version was extracted from, with its layout map) is stored in the
        same transaction when the plan writes anything. Readers do not wait for the
        index to apply a ``bulk`` write (they wait for a token that names it)."""
        ...

    def assertion_asof(self, tenant_id: UUID, *, key: str, as_of: AsOf,
                       clearance: int) -> AssertionRow | None:
        """The assertion of ``key`` visible at the as-of pair within the clearance."""
        ...

    def in_force(self, tenant_id: UUID, *, as_of: AsOf, clearance: int,
                 limit: int) -> list[AssertionRow]:
        """Every document's assertion visible at the as-of pair within the clearance, by
        key, at most ``limit``."""
        ...

    def history(self, tenant_id: UUID, *, key: str, clearance: int) -> list[AssertionRow]:
        """Every assertion of a document within the clearance."""
        ...

    def changes_window(self, tenant_id: UUID, *, known_from: datetime, known_to: datetime,
                       key: str | None, clearance: int, cap: int
                       ) -> tuple[list[AssertionRow], set[str]]:
        """Assertions starting or ending in ``(known_from, known_to]`` and which of their
        documents were known at ``known_from`` (one consistent read)."""
        ...

    def visible_versions(self, tenant_id: UUID, version_ids: Sequence[str], *,
                         clearance: int) -> set[str]:
        """Which of the versions have some assertion within the clearance (one read)."""
        ...

    def readable_versions(self, tenant_id: UUID, version_ids: Sequence[str], *,
                          clearance: int) -> set[str]:
        """Which of the versions are within the clearance and not erased."""
        ...

    def erasures(self, tenant_id: UUID, version_ids: Sequence[str], *,
                 clearance: int) -> dict[str, Erasure]:
        """The erasures of those versions some assertion within the clearance shows."""
        ...

    def erasures_window(self, tenant_id: UUID, *, known_from: datetime, known_to: datetime,
                        key: str | None, clearance: int) -> list[Erasure]:
        """Erasures recorded in ``(known_from, known_to]`` within the clearance (of one
        document when ``key`` is given), oldest first."""
        ...

    def version_row(self, tenant_id: UUID, *, version_id: str,
                    clearance: int) -> VersionRow | None:
        """A version's row (no text), if some assertion of it is within the clearance."""
        ...

    def version_content(self, tenant_id: UUID, *, version_id: str,
                        clearance: int) -> VersionContent | None:
        """A version's text and sentences, if some assertion of it is within clearance."""
        ...

    def version_excerpts(self, tenant_id: UUID, windows: Sequence[tuple[str, int, int]], *,
                         clearance: int, also_check: Sequence[str] = ()
                         ) -> dict[str, VersionExcerpt] | None:
        """The blocks of versions around (version id, start, end) code-point windows;
        None when one of them, or of ``also_check`` (versions the caller has cached), is
        unknown or above clearance."""
        ...

    def version_documents(self, tenant_id: UUID, *, version_id: str,
                          clearance: int) -> list[str]:
        """The document keys a version is asserted for, within the clearance."""
        ...

    def current_version(self, tenant_id: UUID, *, key: str, now: datetime,
                        clearance: int) -> str | None:
        """The version of a document in force now as known now, within the clearance."""
        ...


# -- originals and extraction ----------------------------------------------------------------


class SourceStore(Protocol):
    """Originals (the uploaded bytes, content-addressed per tenant, immutable) and which
    version was extracted from which original, with its layout map."""

    def sources(self, tenant_id: UUID, version_ids: Sequence[str], *,
                clearance: int) -> dict[str, VersionSource]:
        """The first source of each version that has one and an assertion within the
        clearance (one read)."""
        ...

    def layout(self, tenant_id: UUID, *, version_id: str, original_id: str) -> bytes | None:
        """The serialized layout map of the version as extracted from that original."""
        ...

    def original(self, tenant_id: UUID, *, version_id: str, clearance: int,
                 original_id: str | None = None) -> OriginalFile | None:
        """The bytes of the version's first original (or of ``original_id``, one of its
        sources), if some assertion of the version is within the clearance."""
        ...
