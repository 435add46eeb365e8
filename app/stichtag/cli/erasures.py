"""``stichtag versions erase`` and ``stichtag erasures``: GDPR erasure for operators, and
re-applying logged erasures after a restore (docs/operations.md, "GDPR erasure")."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from stichtag.bootstrap import Services
from stichtag.cli.args import Subparsers, add_tenant, command, group
from stichtag.cli.output import CliError, Output
from stichtag.cli.tenants import operator
from stichtag.services.erasure import erasure_record


def cmd_erase(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Erase one version's text, passages, vectors, index entries and original files."""
    result = svc.erasures.erase(operator(svc, args.tenant), args.version_id, reason=args.reason)
    data = {"erased": result.created, "erasure": erasure_record(result.erasure),
            "documents": list(result.documents), "assertion_ids": list(result.assertion_ids),
            "blanked": result.blanked}
    out.emit(data, lambda d: (
        ("erased " if d["erased"] else "already erased ") + d["erasure"]["version_id"]
        + f" (log seq {d['erasure']['log_seq']}, {d['erasure']['erased_at']})"
        + (f"\n  documents: {', '.join(d['documents'])}" if d["documents"] else "")
        + (f"\n  blanked: {', '.join(f'{k} {v}' for k, v in d['blanked'].items())}"
           if d["blanked"] else "")))


def read_export(path: Path, tenant_id: str) -> list[dict[str, Any]]:
    """The erasure records of a log export (``stichtag log export``) of this tenant."""
    records: list[dict[str, Any]] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise CliError(f"--from: {path} is not UTF-8 ({exc.reason})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CliError(f"--from: {path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(item, dict):
            raise CliError(f"--from: {path}:{number}: not a log export line")
        if "format" in item and str(item.get("tenant")) != tenant_id:
            raise CliError(f"--from: {path} is the log of tenant {item.get('tenant')}, "
                           f"not of this tenant ({tenant_id})")
        record = item.get("record")
        if isinstance(record, dict) and record.get("kind") == "erasure":
            records.append(record)
    return records


def cmd_reapply(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Re-apply erasures: the run log's own, or those of a newer log export."""
    who = operator(svc, args.tenant)
    records = None
    if args.source:
        records = read_export(Path(args.source), str(who.tenant_id))
    rows = svc.erasures.reapply(who, records)
    summary = {s: sum(1 for r in rows if r["status"] == s)
               for s in ("reapplied", "reblanked", "erased", "absent")}
    out.emit({"erasures": len(rows), **summary, "versions": rows},
             lambda d: f"{d['erasures']} erasure record(s): " + ", ".join(
                 f"{k} {d[k]}" for k in ("reapplied", "reblanked", "erased", "absent")))


def cmd_list(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """The erasure records of the tenant's run log."""
    rows = svc.erasures.logged(operator(svc, args.tenant))
    out.emit(rows, lambda rs: "\n".join(
        f"{r['erased_at']}  {r['version_id'][:19]}…  {', '.join(r.get('documents', []))}  "
        f"{r['reason']}" for r in rs) or "no erasures")


def register(sub: Subparsers) -> None:
    """``versions erase``, ``erasures list`` and ``erasures reapply``."""
    versions = group(sub, "versions", help="act on one version by its id",
                     example="stichtag versions erase --tenant acme b3:… --reason 'ticket 4711'")
    er = command(versions, "erase", help="erase a version's text and files (GDPR Art. 17)",
                 example="stichtag versions erase --tenant acme b3:9f… --reason 'GDPR "
                         "request 2026-114'\nstichtag versions erase --tenant acme b3:9f… "
                         "--reason 'ticket 4711' --json")
    add_tenant(er)
    er.add_argument("version_id", help="the version's b3: id")
    er.add_argument("--reason", required=True,
                    help="why (kept verbatim in the run log: a ticket number, not a name)")
    er.set_defaults(handler=cmd_erase)

    erasures = group(sub, "erasures", help="logged erasures; re-apply them after a restore",
                     example="stichtag erasures reapply --tenant acme --from acme-log.jsonl")
    ls = command(erasures, "list", help="the erasure records of the tenant's run log",
                 example="stichtag erasures list --tenant acme --json")
    add_tenant(ls)
    ls.set_defaults(handler=cmd_list)
    ra = command(erasures, "reapply",
                 help="re-apply logged erasures (idempotent; run after every restore)",
                 example="stichtag erasures reapply --tenant acme\n"
                         "stichtag erasures reapply --tenant acme --from acme-log.jsonl")
    add_tenant(ra)
    ra.add_argument("--from", dest="source", metavar="EXPORT",
                    help="a log export (stichtag log export) newer than the restored backup: "
                         "its erasure records are applied too")
    ra.set_defaults(handler=cmd_reapply)
