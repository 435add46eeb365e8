"""Request dependencies: the services and the authenticated principal."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency

from app.bootstrap import Services
from app.services.access import Principal, Unauthorized


def services(state: State) -> Services:
    """The services built in the lifespan."""
    return state.services  # type: ignore[no-any-return]


def principal(request: Request[Any, Any, Any], state: State) -> Principal:
    """Authenticate ``Authorization: Bearer <key>`` on every request that needs it."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized
    return services(state).access.authenticate(token.strip())


def tenant_zone(svc: Services, who: Principal) -> str:
    """The tenant's time zone, for plain dates."""
    return svc.store.tenant(who.tenant_id).time_zone


# Explicit dependency markers (Litestar 3 drops inferred dependencies).
Svc = NamedDependency[Services]
Who = NamedDependency[Principal]
