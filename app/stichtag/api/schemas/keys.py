"""Bodies of API keys and health."""

from __future__ import annotations

from typing import Literal

import msgspec


class KeyBody(msgspec.Struct, forbid_unknown_fields=True):
    """A new API key for the caller's tenant."""

    scopes: list[str]
    clearance: str = "internal"
    label: str = ""
    expires_at: str | None = None


class KeyInfo(msgspec.Struct):
    """A key without its secret."""

    key_id: str
    scopes: list[str]
    clearance: str
    label: str
    created_at: str
    expires_at: str | None
    revoked_at: str | None
    rotated_from: str | None


class KeyCreated(msgspec.Struct):
    """A new key; ``key`` is shown this once and never stored."""

    key: str
    info: KeyInfo


class KeyList(msgspec.Struct):
    """The tenant's keys."""

    keys: list[KeyInfo]


class Health(msgspec.Struct):
    """Liveness/readiness."""

    status: Literal["ok", "unavailable"]
    checks: dict[str, str] = msgspec.field(default_factory=dict)
