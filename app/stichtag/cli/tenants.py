"""``stichtag tenants``, and the operator every other command acts as."""

from __future__ import annotations

import argparse

from stichtag.bootstrap import Services
from stichtag.cli.args import Subparsers, command, group
from stichtag.cli.output import CliError, Output, UsageError
from stichtag.domain.errors import NotFound
from stichtag.services.access import Principal


def operator(svc: Services, tenant: str | None) -> Principal:
    """The operator acts for a tenant with every scope and full clearance."""
    if tenant is None:
        raise UsageError("--tenant: the tenant to act for is required here (or give --url "
                         "and --key to act through a server)")
    try:
        return svc.access.operator(tenant)
    except NotFound:
        raise CliError(f"tenant: unknown tenant {tenant!r} (create it with: "
                       f"stichtag tenants create {tenant})") from None


def cmd_create(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Create a tenant."""
    row = svc.access.create_tenant(args.name, args.time_zone)
    out.emit({"tenant_id": str(row.tenant_id), "name": row.name, "time_zone": row.time_zone},
             lambda d: f"created tenant {d['name']} ({d['tenant_id']}, zone {d['time_zone']})")


def register(sub: Subparsers) -> None:
    """``tenants create``."""
    tenants = group(sub, "tenants", help="manage tenants",
                    example="stichtag tenants create acme --time-zone Europe/Berlin")
    tc = command(tenants, "create", help="create a tenant",
                 example="stichtag tenants create acme --time-zone Europe/Berlin\n"
                         "stichtag tenants create acme --json")
    tc.add_argument("name", help="the tenant's name (what --tenant refers to)")
    tc.add_argument("--time-zone", default="UTC", metavar="ZONE",
                    help="IANA zone in which plain dates are read (default UTC)")
    tc.set_defaults(handler=cmd_create)
