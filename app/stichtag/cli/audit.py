"""``stichtag log``, ``replay``, ``impact`` and ``gaps``: what auditors check.

``log verify`` needs no database: an export, the public key and optionally an older
checkpoint are enough, so an auditor runs it on their own machine.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stichtag.bootstrap import Services
from stichtag.cli.args import Subparsers, add_tenant, command, group, optional_time
from stichtag.cli.output import CliError, Output
from stichtag.cli.tenants import operator
from stichtag.config import Settings

if TYPE_CHECKING:
    from stichtag.client import Client


def cmd_log(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Export the log, print a signed checkpoint, or print the verification key."""
    if args.sub == "public-key":
        print(svc.runlog.public_key(), end="")
        return
    who = operator(svc, args.tenant)
    if args.sub == "export":
        _export(out, args, svc.runlog.export(who.tenant_id))
    else:
        _checkpoint(args, svc.runlog.checkpoint(who.tenant_id))


def remote_log(api: Client, args: argparse.Namespace, out: Output) -> None:
    """The same through the server; the export streams line by line."""
    if args.sub == "public-key":
        print(api.checkpoint().public_key, end="")
    elif args.sub == "export":
        _export(out, args, api.export_lines())
    else:
        _checkpoint(args, api.checkpoint().checkpoint)


def _export(out: Output, args: argparse.Namespace, lines: Iterable[str]) -> None:
    if args.output:
        with Path(args.output).open("w", encoding="utf-8") as handle:
            count = sum(handle.write(line + "\n") > 0 for line in lines)
        out.emit({"written": args.output, "lines": count},
                 lambda d: f"exported {d['lines']} lines to {d['written']}")
    else:
        for line in lines:
            print(line)


def _checkpoint(args: argparse.Namespace, note: str) -> None:
    if args.output:
        Path(args.output).write_text(note, encoding="utf-8")
    print(note, end="")


def cmd_log_verify(settings: Settings, args: argparse.Namespace) -> None:
    """Offline: needs only the export, the public key and optionally an older checkpoint;
    exit code 1 when the export does not verify."""
    from stichtag.audit.signing import load_public_key  # noqa: PLC0415 - only this command
    from stichtag.audit.verify import verify_export  # noqa: PLC0415

    out = Output(as_json=args.json)
    key = load_public_key(Path(args.public_key))
    older = (Path(args.older_checkpoint).read_text(encoding="utf-8")
             if args.older_checkpoint else None)
    older_key = load_public_key(Path(args.older_public_key)) if args.older_public_key else None
    with Path(args.export).open(encoding="utf-8") as handle:
        report = verify_export(handle, key, older_checkpoint=older, older_public_key=older_key)
    data = {"ok": report.ok, "records": report.record_count, "tenant": report.tenant,
            "root": report.root.hex(),
            "problems": [f"line {p.line}: {p.message}" for p in report.problems],
            "notices": [f"line {n.line}: {n.message}" for n in report.notices],
            # sealed texts: held (opened and checked) or erased; records from before
            # sealing keep their text inside the leaf (docs/operations.md, "GDPR erasure")
            "texts": {"sealed": report.sealed_texts, "opened": report.opened_texts,
                      "erased": report.sealed_texts - report.opened_texts,
                      "records_with_text_in_leaf": report.inline_text_records}}
    out.emit(data, lambda d: ("OK" if d["ok"] else "FAILED") + f": {d['records']} records, "
             f"root {d['root'][:16]}…, sealed texts {d['texts']['opened']} held, "
             f"{d['texts']['erased']} erased, "
             f"{d['texts']['records_with_text_in_leaf']} records with text in the leaf"
             + "".join(f"\n  problem: {p}" for p in d["problems"]))
    if not report.ok:
        raise CliError(f"log: the export does not verify ({len(report.problems)} problems)")


def cmd_replay(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Recompute a recorded run; exit code 1 when it differs."""
    if svc.replay is None:
        raise CliError("replay needs the models: stichtag models build")
    v = svc.replay.replay(operator(svc, args.tenant), args.run_id)
    _verdict(out, {"run_id": v.run_id, "kind": v.kind, "reproduced": v.reproduced,
                   "status": v.status, "differences": v.differences, "notes": v.notes,
                   "erased": v.erased})


def remote_replay(api: Client, args: argparse.Namespace, out: Output) -> None:
    """The same through the server; exit code 1 when it differs or relied on erased text."""
    v = api.replay(args.run_id)
    _verdict(out, {"run_id": v.run_id, "kind": v.kind, "reproduced": v.reproduced,
                   "status": v.status, "differences": v.differences, "notes": v.notes,
                   "erased": v.erased})


def _verdict(out: Output, data: dict[str, Any]) -> None:
    out.emit(data, lambda d: d["status"].upper() + f" {d['run_id']}"
             + "".join(f"\n  {x['what']}: recorded {x['recorded']!r} → replayed "
                       f"{x['replayed']!r}" for x in d["differences"])
             + "".join(f"\n  note: {n}" for n in d["notes"]))
    if data["erased"]:  # not a mismatch, but not a reproduction either: a script must not pass
        raise CliError(f"run {data['run_id']} relied on {len(data['erased'])} erased "
                       "version(s); it cannot be recomputed (no difference was found)")
    if not data["reproduced"]:
        raise CliError(f"run {data['run_id']} did not reproduce "
                       f"({len(data['differences'])} differences)")


def cmd_impact(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Recorded answers that would now differ."""
    if svc.replay is None:
        raise CliError("impact needs the models: stichtag models build")
    who = operator(svc, args.tenant)
    since = optional_time(who, args.since, field="since")
    svc.indexer.catch_up(who.tenant_id)
    _impact(out, svc.replay.impact(who, since=since))


def remote_impact(api: Client, args: argparse.Namespace, out: Output) -> None:
    """The same through the server."""
    _impact(out, api.impact(since=args.since).runs)


def _impact(out: Output, runs: list[dict[str, Any]]) -> None:
    out.emit(runs, lambda rs: "\n".join(
        f"{r['run_id']} valid_at {r['as_of']['valid_at']}: {r['status'][0]} → "
        f"{r['status'][1]}; -{len(r['citations_removed'])} +{len(r['citations_added'])} "
        f"citations  {r['question']}" for r in rs) or "no recorded answer would change")


def cmd_gaps(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Abstained questions grouped by topic."""
    if svc.gaps is None:
        raise CliError("the gap report needs the models: stichtag models build")
    who = operator(svc, args.tenant)
    _gaps(out, svc.gaps.report(who, since=optional_time(who, args.since, field="since")))


def remote_gaps(api: Client, args: argparse.Namespace, out: Output) -> None:
    """The same through the server."""
    _gaps(out, api.gaps(since=args.since).groups)


def _gaps(out: Output, groups: list[dict[str, Any]]) -> None:
    out.emit(groups, lambda gs: "\n".join(
        f"{g['count']:>4} × {g['questions'][0]}"
        + "".join(f"\n       {q}" for q in g["questions"][1:4])
        for g in gs) or "no abstained questions in the period")


def register(sub: Subparsers) -> None:
    """``log export|checkpoint|public-key|verify``, ``replay``, ``impact``, ``gaps``."""
    log = group(sub, "log", help="the tamper-evident run log",
                example="stichtag log export --tenant acme -o log.jsonl\n"
                        "stichtag log public-key > log.pem\n"
                        "stichtag log verify log.jsonl --public-key log.pem")
    for name, text, example in (
            ("export", "write the tenant's log as JSON Lines",
             "stichtag log export --tenant acme -o log.jsonl"),
            ("checkpoint", "print a freshly signed checkpoint",
             "stichtag log checkpoint --tenant acme -o checkpoint.txt")):
        lp = command(log, name, help=text, example=example)
        add_tenant(lp, remote=True)
        lp.add_argument("-o", "--output", metavar="FILE", help="write to FILE, not stdout")
        lp.set_defaults(handler=cmd_log, remote=remote_log)
    lk = command(log, "public-key", help="print the checkpoint verification key (PEM)",
                 example="stichtag log public-key > log.pem")
    lk.set_defaults(handler=cmd_log, remote=remote_log)
    lv = command(log, "verify", help="verify an export offline (no database needed)",
                 example="stichtag log verify log.jsonl --public-key log.pem "
                         "--older-checkpoint checkpoint.txt")
    lv.add_argument("export", help="a file written by stichtag log export")
    lv.add_argument("--public-key", required=True, metavar="PEM", help="PEM file")
    lv.add_argument("--older-checkpoint", metavar="FILE",
                    help="a checkpoint taken earlier (signed note)")
    lv.add_argument("--older-public-key", metavar="PEM",
                    help="PEM file of the key that signed --older-checkpoint (after a key "
                         "rotation)")
    lv.set_defaults(standalone=cmd_log_verify, offline=True)

    rp = command(sub, "replay", help="recompute a recorded run; exit 1 if it differs",
                 example="stichtag replay --tenant acme 0b6f2c1e-8d4a-4a51-9a57-3c2d1e0f9a8b")
    add_tenant(rp, remote=True)
    rp.add_argument("run_id", help="the run id an answer or search printed")
    rp.set_defaults(handler=cmd_replay, needs_models=True, remote=remote_replay)

    imp = command(sub, "impact",
                  help="recorded answers that would now differ (after backdating)",
                  example="stichtag impact --tenant acme --since 2025-01-01")
    add_tenant(imp, remote=True)
    imp.add_argument("--since", metavar="TIME", help="only runs recorded since then")
    imp.set_defaults(handler=cmd_impact, needs_models=True, remote=remote_impact)

    gp = command(sub, "gaps", help="documentation gaps: abstained questions grouped by topic",
                 example="stichtag gaps --tenant acme --since 2025-06-01")
    add_tenant(gp, remote=True)
    gp.add_argument("--since", metavar="TIME", help="default: the last 30 days")
    gp.set_defaults(handler=cmd_gaps, needs_models=True, remote=remote_gaps)
