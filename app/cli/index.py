"""``stichtag index``: the tenant's derived indexes (tantivy and the embeddings) against
PostgreSQL, the source of truth."""

from __future__ import annotations

import argparse
from typing import Any

from app.bootstrap import Services
from app.cli.args import Subparsers, add_tenant, command, group
from app.cli.output import CliError, Output
from app.cli.tenants import operator


def cmd_index(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Rebuild, check or catch up; ``check`` exits 1 when the index differs."""
    who = operator(svc, args.tenant)
    if args.sub == "rebuild":
        seq = svc.indexer.rebuild(who.tenant_id)
        svc.indexer.embed_pending(who.tenant_id)
        data: dict[str, Any] = {"tenant": args.tenant, "rebuilt": True, "applied_seq": seq}
    elif args.sub == "check":
        data = {"tenant": args.tenant, **svc.indexer.check(who.tenant_id)}
    else:
        status = svc.indexer.catch_up(who.tenant_id)
        data = {"tenant": args.tenant, "outbox_seq": status.outbox_seq,
                "lexical_seq": status.lexical_seq,
                "pending_embeddings": status.pending_embeddings}
    out.emit(data, lambda d: ", ".join(f"{k} {v}" for k, v in d.items() if k != "sample"))
    if args.sub == "check" and data["differences"]:
        raise CliError(f"index: differs from the database in {data['differences']} "
                       "documents (stichtag index rebuild recreates it)")


def register(sub: Subparsers) -> None:
    """``index rebuild|check|sync``."""
    index = group(sub, "index", help="derived indexes",
                  example="stichtag index check --tenant acme")
    for name, text in (("rebuild", "recreate the tenant's tantivy index from PostgreSQL"),
                       ("check", "compare the tantivy index with PostgreSQL "
                                 "(exit 1 on differences)"),
                       ("sync", "apply the outbox and embed pending passages now")):
        ix = command(index, name, help=text, example=f"stichtag index {name} --tenant acme")
        add_tenant(ix)
        ix.set_defaults(handler=cmd_index, needs_models=name != "check")
