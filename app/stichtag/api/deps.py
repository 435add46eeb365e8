"""Request dependencies: the services and the authenticated principal."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import replace
from datetime import datetime
from typing import Any
from uuid import UUID

import anyio.to_thread
from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency

from stichtag.api.limits import BOUNDED_OPERATIONS, Limits
from stichtag.bootstrap import Services
from stichtag.domain.asof import AsOf, as_of_pair
from stichtag.domain.timeutil import parse_time
from stichtag.services.access import Principal, Unauthorized
from stichtag.store.replica import request_reads

request_tenant: ContextVar[list[UUID] | None] = ContextVar("stichtag_request_tenant",
                                                           default=None)
"""Filled with the caller's tenant once the key is verified, for the middleware that
stamps a write's consistency token (app/stichtag/api/app.py); ``None`` outside a request."""


def services(state: State) -> Services:
    """The services built in the lifespan."""
    return state.services  # type: ignore[no-any-return]


def bearer(request: Request[Any, Any, Any]) -> str:
    """The token of ``Authorization: Bearer <key>``, or Unauthorized."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized
    return token.strip()


async def principal(request: Request[Any, Any, Any], state: State) -> AsyncIterator[Principal]:
    """The authenticated caller, admitted by the rate limit and, for expensive work, a slot.

    Order matters: the secret is verified first, so only a key's real holder spends its
    tokens (charged in the same transaction, shared by every process and node); the slot
    is awaited on the event loop (no worker thread, no connection held)
    and released when the handler and its response are done.
    """
    token = bearer(request)
    limits: Limits = state.limits
    operation = getattr(request.scope.get("route_handler"), "operation_id", None)
    bounded = operation in BOUNDED_OPERATIONS
    digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
    await limits.refuse_early(digest, bounded=bounded)  # a flood's refusals skip the lookup
    who, wait = await anyio.to_thread.run_sync(services(state).access.admit, token,
                                               limits.rate)
    reads = request_reads.get()
    if reads is not None and reads.token:  # the client's consistency token (api/app.py)
        who = replace(who, read_after=reads.token)
    caller = request_tenant.get()
    if caller is not None:  # the consistency token of a write is the tenant's (api/app.py)
        caller.append(who.tenant_id)
    limits.remember(digest, who.key_id, who.tenant_id)
    limits.settle(who.key_id, wait)
    if bounded:
        async with limits.admission.slot(who.tenant_id):
            yield who
    else:
        yield who


def as_of(svc: Services, who: Principal, valid_at: str | None,
          known_at: str | None) -> AsOf:
    """The as-of pair of a request: plain dates in the tenant's zone (read with the key,
    no query), absent values are now, a ``known_at`` after now is read as now."""
    return as_of_pair(
        valid_at=optional_time(who, valid_at, field="valid_at") if valid_at else None,
        known_at=optional_time(who, known_at, field="known_at") if known_at else None,
        now=svc.clock.now())


def optional_time(who: Principal, value: str | None, *, field: str) -> datetime | None:
    """An optional time field of a request, plain dates in the tenant's zone."""
    return None if value is None else parse_time(value, field=field, tz=who.time_zone)


# Explicit dependency markers (Litestar 3 drops inferred dependencies).
Svc = NamedDependency[Services]
Who = NamedDependency[Principal]
