"""Request dependencies: the services and the authenticated principal."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio.to_thread
from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency

from app.api.limits import BOUNDED_OPERATIONS, Limits
from app.bootstrap import Services
from app.services.access import Principal, Unauthorized


def services(state: State) -> Services:
    """The services built in the lifespan."""
    return state.services  # type: ignore[no-any-return]


def authenticate(request: Request[Any, Any, Any], state: State) -> Principal:
    """Verify ``Authorization: Bearer <key>`` (a key lookup in the database)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized
    return services(state).access.authenticate(token.strip())


async def principal(request: Request[Any, Any, Any], state: State) -> AsyncIterator[Principal]:
    """The authenticated caller, admitted by the rate limit and, for expensive work, a slot.

    Order matters: the secret is verified first, so only a key's real holder spends its
    tokens; the slot is awaited on the event loop (no worker thread, no connection held)
    and released when the handler and its response are done.
    """
    who = await anyio.to_thread.run_sync(authenticate, request, state)
    limits: Limits = state.limits
    limits.charge(who.key_id)
    operation = getattr(request.scope.get("route_handler"), "operation_id", None)
    if operation in BOUNDED_OPERATIONS:
        async with limits.admission.slot(who.tenant_id):
            yield who
    else:
        yield who


def tenant_zone(svc: Services, who: Principal) -> str:
    """The tenant's time zone, for plain dates."""
    return svc.store.tenant(who.tenant_id).time_zone


# Explicit dependency markers (Litestar 3 drops inferred dependencies).
Svc = NamedDependency[Services]
Who = NamedDependency[Principal]
