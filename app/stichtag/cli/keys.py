"""``stichtag keys``: API keys of a tenant (the plaintext is shown once)."""

from __future__ import annotations

import argparse
from typing import Any

from stichtag.bootstrap import Services
from stichtag.cli.args import Subparsers, add_tenant, command, group
from stichtag.cli.output import Output
from stichtag.cli.tenants import operator
from stichtag.domain.bitemporal import CONFIDENTIALITY
from stichtag.domain.timeutil import format_time, parse_time
from stichtag.services.access import SCOPES, parse_clearance, parse_scopes


def create_key(svc: Services, tenant: str, *, scopes: str, clearance: str, label: str = "",
               expires: str | None = None) -> dict[str, Any]:
    """Create a key and return its public fields plus the one-time plaintext."""
    who = operator(svc, tenant)
    expires_at = parse_time(expires, field="expires_at", tz=who.time_zone) if expires else None
    row, token = svc.access.create_key(who.tenant_id, scopes=parse_scopes(scopes),
                                       clearance=parse_clearance(clearance), label=label,
                                       expires_at=expires_at)
    return {"key": token, "key_id": row.key_id, "tenant": tenant, "scopes": row.scopes,
            "clearance": CONFIDENTIALITY[row.clearance],
            "expires_at": format_time(row.expires_at)}


def cmd_create(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Create a key; its plaintext is printed once."""
    data = create_key(svc, args.tenant, scopes=args.scopes, clearance=args.clearance,
                      label=args.label, expires=args.expires_at)
    out.emit(data, lambda d: f"{d['key']}\n(key id {d['key_id']}, scopes "
                             f"{','.join(d['scopes'])}, clearance {d['clearance']}; "
                             "shown once, store it now)")


def cmd_list(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """The tenant's keys, without hashes."""
    who = operator(svc, args.tenant)
    rows = [{"key_id": k.key_id, "scopes": k.scopes, "clearance": CONFIDENTIALITY[k.clearance],
             "label": k.label, "created_at": format_time(k.created_at),
             "expires_at": format_time(k.expires_at), "revoked_at": format_time(k.revoked_at)}
            for k in svc.access.list_keys(who.tenant_id)]
    out.emit(rows, lambda rs: "\n".join(
        f"{r['key_id']}  {','.join(r['scopes']):<24} {r['clearance']:<12} "
        f"{'revoked ' + r['revoked_at'] if r['revoked_at'] else 'active'}  {r['label']}"
        for r in rs) or "(no keys)")


def cmd_revoke(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Revoke a key, effective at once."""
    svc.access.revoke(operator(svc, args.tenant).tenant_id, args.key_id)
    out.emit({"key_id": args.key_id, "revoked": True}, lambda d: f"revoked {d['key_id']}")


def cmd_rotate(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Issue a successor with the same scopes and clearance, then revoke the key."""
    row, token = svc.access.rotate(operator(svc, args.tenant).tenant_id, args.key_id)
    out.emit({"key": token, "key_id": row.key_id, "rotated_from": args.key_id},
             lambda d: f"{d['key']}\n(new key id {d['key_id']}; {d['rotated_from']} revoked)")


def register(sub: Subparsers) -> None:
    """``keys create|list|revoke|rotate``."""
    keys = group(sub, "keys", help="manage API keys",
                 example="stichtag keys create --tenant acme --scopes read,write")
    kc = command(keys, "create", help="create a key (its plaintext is printed once)",
                 example="stichtag keys create --tenant acme --scopes read,audit "
                         "--clearance confidential --label auditor")
    add_tenant(kc)
    kc.add_argument("--scopes", default="read", help=f"comma-separated: {','.join(SCOPES)} "
                                                     "(default read)")
    kc.add_argument("--clearance", default="internal",
                    help=f"{'|'.join(CONFIDENTIALITY)} (default internal)")
    kc.add_argument("--label", default="", help="a note for people (who holds the key)")
    kc.add_argument("--expires-at", metavar="TIME", help="the key stops working then")
    kc.set_defaults(handler=cmd_create)
    kl = command(keys, "list", help="list the tenant's keys",
                 example="stichtag keys list --tenant acme")
    add_tenant(kl)
    kl.set_defaults(handler=cmd_list)
    for name, handler, text in (("revoke", cmd_revoke, "revoke a key at once"),
                                ("rotate", cmd_rotate, "issue a successor, revoke the key")):
        k = command(keys, name, help=text,
                    example=f"stichtag keys {name} --tenant acme 3f2a9c0d1e4b5a68")
        add_tenant(k)
        k.add_argument("key_id", help="the key id (stichtag keys list)")
        k.set_defaults(handler=handler)
