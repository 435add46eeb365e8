"""``stichtag ask --compare FROM TO``: one question at two as-of pairs, each written
``VALID_AT[/KNOWN_AT]``; prints both outcomes, the changed documents and their causes."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from stichtag.bootstrap import Services
from stichtag.cli.args import as_of_json, optional_time
from stichtag.cli.output import EXIT_OK, CliError, Output
from stichtag.cli.tenants import operator
from stichtag.domain.asof import as_of_pair

if TYPE_CHECKING:
    from stichtag.client import Client


def split_pair(raw: str) -> tuple[str | None, str | None]:
    """``VALID_AT[/KNOWN_AT]`` → (valid_at, known_at); an empty side is now."""
    valid, _, known = raw.partition("/")
    return valid.strip() or None, known.strip() or None


def _text(d: dict[str, Any]) -> str:
    lines = [d["summary"]]
    for side in ("from", "to"):
        s = d[side]
        lines.append(f"{side}: {s['status']}" + (f" ({s['reason']})" if s["reason"] else "")
                     + f" as of valid {s['as_of']['valid_at']}, known {s['as_of']['known_at']}"
                     f"  run {s['run_id']}")
    for c in d["changes"]:
        lines.append(f"- {c['document']}: {c['kind']}, cause {c['cause']}")
        if c["explanation"]:
            lines.append(f"    {c['explanation']}")
        if c.get("diff"):
            x = c["diff"]
            lines.append(f"    sentences: +{x['added']} -{x['removed']} ~{x['changed']} "
                         f"={x['unchanged']}")
    lines.append(f"compare run {d['run_id']}")
    return "\n".join(lines)


def cmd_compare(svc: Services, args: argparse.Namespace, out: Output) -> int:
    """Answer at both pairs through the services and print the comparison."""
    who = operator(svc, args.tenant)
    if svc.compare is None:
        raise CliError("comparing needs the models: stichtag models build")
    pairs = []
    for raw in args.compare:
        valid, known = split_pair(raw)
        pairs.append(as_of_pair(valid_at=optional_time(who, valid, field="valid_at"),
                                known_at=optional_time(who, known, field="known_at"),
                                now=svc.clock.now()))
    svc.indexer.catch_up(who.tenant_id)
    done = svc.compare.compare(who, args.question, first=pairs[0], second=pairs[1],
                               generator=args.generator)
    data = {"run_id": str(done.run_id), "summary": done.summary,
            "from": _side(done.first, as_of_json(pairs[0])),
            "to": _side(done.second, as_of_json(pairs[1])),
            "changes": [{"document": c.document, "kind": c.kind, "cause": c.cause,
                         "from_version": c.from_version, "to_version": c.to_version,
                         "explanation": c.explanation, "law": c.law,
                         "knowledge": list(c.knowledge),
                         "diff": _counts(done.diffs.get(c.document))}
                        for c in done.changes]}
    out.emit(data, _text)
    return EXIT_OK


def remote_compare(api: Client, args: argparse.Namespace, out: Output) -> int:
    """The same through the server."""
    (fv, fk), (tv, tk) = (split_pair(p) for p in args.compare)
    r = api.compare(args.question, from_valid_at=fv, from_known_at=fk, to_valid_at=tv,
                    to_known_at=tk, generator=args.generator)
    data = {"run_id": r.run_id, "summary": r.summary,
            "from": {"run_id": r.from_.run_id, "status": r.from_.status,
                     "reason": r.from_.reason,
                     "as_of": {"valid_at": r.from_.as_of.valid_at,
                               "known_at": r.from_.as_of.known_at}},
            "to": {"run_id": r.to.run_id, "status": r.to.status, "reason": r.to.reason,
                   "as_of": {"valid_at": r.to.as_of.valid_at, "known_at": r.to.as_of.known_at}},
            "changes": [{"document": c.document, "kind": c.kind, "cause": c.cause,
                         "from_version": c.from_version, "to_version": c.to_version,
                         "explanation": c.explanation,
                         "diff": None if c.diff is None else {
                             "added": c.diff.added, "removed": c.diff.removed,
                             "changed": c.diff.changed, "unchanged": c.diff.unchanged}}
                        for c in r.changes]}
    out.emit(data, _text)
    return EXIT_OK


def _side(r: Any, at: dict[str, str | None]) -> dict[str, Any]:
    return {"run_id": str(r.run_id), "status": r.status, "reason": r.reason, "as_of": at}


def _counts(d: Any) -> dict[str, int] | None:
    return None if d is None else {"added": d.added, "removed": d.removed,
                                   "changed": d.changed, "unchanged": d.unchanged}
