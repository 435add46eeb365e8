"""API keys: creation, authentication, revocation, rotation (docs/architecture.md §9).

A key reads ``stk_<key id>_<secret>``: the prefix makes leaked keys recognisable to secret
scanners, the key id (public) finds the row, and only sha256 of the 256-bit secret is
stored. A fast hash is right here: the secret is random, not a password, so there is
nothing to brute-force; the comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from stichtag.domain.bitemporal import CONFIDENTIALITY
from stichtag.domain.errors import Invalid, NotFound
from stichtag.domain.records import KeyRate, KeyRow, TenantRow
from stichtag.domain.timeutil import zone
from stichtag.ports import Clock, KeyStore, TenantStore

PREFIX = "stk_"
SCOPES = ("read", "write", "audit", "admin")
_TOKEN = re.compile(r"^stk_([a-z0-9]{16})_([A-Za-z0-9_-]{43})$")


class Unauthorized(Exception):
    """Missing, malformed, unknown, wrong, expired or revoked key (all look the same: 401)."""


class Forbidden(Exception):
    """A valid key without the scope an operation needs (403)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Principal:
    """Who is calling: tenant, key, scopes, clearance, and the tenant's time zone (for
    plain dates in requests, read with the key: no extra query per request)."""

    tenant_id: UUID
    key_id: str
    scopes: frozenset[str]
    clearance: int
    time_zone: str = "UTC"
    read_after: int = 0
    """The outbox position this request's reads must see: the consistency token the
    client sent with it (``Stichtag-Consistency``), 0 when none."""

    def require(self, scope: str) -> None:
        """Raise Forbidden unless the key has ``scope`` (admin implies every scope)."""
        if scope not in self.scopes and "admin" not in self.scopes:
            raise Forbidden(scope)


def _hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("ascii")).digest()


def parse_scopes(raw: str | list[str]) -> list[str]:
    """Validate scope names (comma-separated or a list)."""
    items = [s.strip() for s in (raw.split(",") if isinstance(raw, str) else raw) if s.strip()]
    if not items:
        raise Invalid("scopes", f"at least one of {', '.join(SCOPES)}")
    for item in items:
        if item not in SCOPES:
            raise Invalid("scopes", f"unknown scope {item!r}; use {', '.join(SCOPES)}")
    return sorted(set(items), key=SCOPES.index)


def parse_clearance(raw: str | int) -> int:
    """A clearance level by name (public..secret) or rank 0..3."""
    if isinstance(raw, int) and 0 <= raw < len(CONFIDENTIALITY):
        return raw
    if isinstance(raw, str) and raw in CONFIDENTIALITY:
        return CONFIDENTIALITY.index(raw)
    raise Invalid("clearance", f"must be one of {', '.join(CONFIDENTIALITY)}")


OPERATOR = "cli"
"""The key id recorded for operator commands run on the server's own machine."""


class AccessService:
    """Tenants, key lifecycle and authentication."""

    def __init__(self, tenants: TenantStore, keys: KeyStore, clock: Clock) -> None:
        self.tenants = tenants
        self.store = keys
        self.clock = clock

    def create_tenant(self, name: str, time_zone: str = "UTC") -> TenantRow:
        """A new tenant (operator); its zone reads plain dates in its requests."""
        zone(time_zone)
        return self.tenants.create_tenant(uuid.uuid4(), name, time_zone)

    def operator(self, name: str) -> Principal:
        """The operator acting for a tenant: every scope, full clearance (NotFound when
        there is no such tenant)."""
        row = self.tenants.tenant_by_name(name)
        if row is None:
            raise NotFound("tenant")
        return Principal(tenant_id=row.tenant_id, key_id=OPERATOR, scopes=frozenset(SCOPES),
                         clearance=len(CONFIDENTIALITY) - 1, time_zone=row.time_zone)

    def list_keys(self, tenant_id: UUID) -> list[KeyRow]:
        """All keys of a tenant, newest first (hashes included: callers drop them)."""
        return self.store.list_keys(tenant_id)

    def create_key(self, tenant_id: UUID, *, scopes: list[str], clearance: int, label: str = "",
                   expires_at: datetime | None = None, rotated_from: str | None = None
                   ) -> tuple[KeyRow, str]:
        """Create a key; returns the row and the plaintext token (shown once, never stored)."""
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        row = self.store.insert_key(
            tenant_id, key_id=key_id, secret_hash=_hash(secret), scopes=scopes,
            clearance=clearance, label=label, expires_at=expires_at, rotated_from=rotated_from)
        return row, f"{PREFIX}{key_id}_{secret}"

    def authenticate(self, token: str | None) -> Principal:
        """Resolve a bearer token to a principal or raise Unauthorized."""
        return self.admit(token, None)[0]

    def admit(self, token: str | None, rate: KeyRate | None) -> tuple[Principal, float]:
        """Resolve a bearer token and charge one request to its key's ``rate``: the
        principal and the seconds it must wait (0.0 = admitted), or Unauthorized.

        The charge happens only once the secret matched, in the lookup's transaction, so
        a flood of wrong secrets naming someone's key id never spends that key's rate.
        """
        match = _TOKEN.match(token or "")
        # Hash even for malformed input, so the failure paths cost about the same.
        presented = _hash(match.group(2) if match else "x" * 43)
        if match is None:
            raise Unauthorized
        now = self.clock.now()

        def valid(row: KeyRow) -> bool:
            if not hmac.compare_digest(presented, bytes(row.secret_hash)):
                return False
            return row.revoked_at is None and (row.expires_at is None or row.expires_at > now)

        found = self.store.check_key(match.group(1), valid, rate)
        if found is None:
            hmac.compare_digest(presented, _hash("y" * 43))  # an unknown id costs the same
            raise Unauthorized
        if not found.admitted:
            raise Unauthorized
        row = found.row
        return Principal(tenant_id=row.tenant_id, key_id=row.key_id,
                         scopes=frozenset(row.scopes), clearance=row.clearance,
                         time_zone=found.time_zone), found.wait

    def revoke(self, tenant_id: UUID, key_id: str, *, max_clearance: int = 3) -> KeyRow:
        """Revoke a key of this tenant at or below ``max_clearance``; effective at once.
        Returns the key as it now stands."""
        target = next((k for k in self.store.list_keys(tenant_id) if k.key_id == key_id), None)
        if target is None or target.clearance > max_clearance:
            raise NotFound("key")
        if not self.store.revoke_key(tenant_id, key_id):
            raise NotFound("key")
        return next(k for k in self.store.list_keys(tenant_id) if k.key_id == key_id)

    def rotate(self, tenant_id: UUID, key_id: str, *, max_clearance: int = 3
               ) -> tuple[KeyRow, str]:
        """Issue a successor with the same scopes and clearance, then revoke the old key.

        A caller may only rotate keys at or below its own clearance: rotation must never
        hand out a key the caller could not have created (above it: the same 404).
        """
        old = next((k for k in self.store.list_keys(tenant_id)
                    if k.key_id == key_id and k.revoked_at is None), None)
        if old is None or old.clearance > max_clearance:
            raise NotFound("key")
        row, token = self.create_key(tenant_id, scopes=old.scopes, clearance=old.clearance,
                                     label=old.label, expires_at=old.expires_at,
                                     rotated_from=old.key_id)
        self.store.revoke_key(tenant_id, key_id)
        return row, token
