"""problem+json: the error body of every 4xx and 5xx."""

from __future__ import annotations

from typing import Any

import msgspec


class FieldError(msgspec.Struct):
    """One offending input: the field (a body field, parameter or header) and why."""

    field: str
    reason: str


class Problem(msgspec.Struct, omit_defaults=True):
    """RFC 9457 problem details, the body of every error (``application/problem+json``).

    ``errors`` names each offending field (400, 409, 413, 422); ``limit`` and
    ``retry_after`` say which back-pressure limit refused the request (429, 503), next to
    the ``Retry-After`` header.
    """

    type: str
    title: str
    status: int
    detail: str
    errors: list[FieldError] | None = None
    limit: str | None = None
    retry_after: int | None = None
    erasure: dict[str, Any] | None = None
    """410: the erasure record of the version whose text was erased (who, when, why,
    the content hash kept, its run-log leaf)."""
