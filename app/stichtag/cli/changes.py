"""``stichtag changes``: the knowledge diff between two transaction times.

``--json`` prints the shape of ``GET /v1/changes``; the CLI builds it here from the
service's report (it does not import the API), and a test compares the two.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from stichtag.bootstrap import Services
from stichtag.cli.args import Subparsers, add_tenant, command, optional_time
from stichtag.cli.output import Output
from stichtag.cli.remote import plain
from stichtag.cli.tenants import operator
from stichtag.domain.bitemporal import CONFIDENTIALITY
from stichtag.domain.records import AssertionRow
from stichtag.domain.sentence_diff import DiffSentence, SentenceDiff
from stichtag.domain.timeutil import format_time, parse_time
from stichtag.services.changes import DEFAULT_LIMIT, DEFAULT_MAX_SENTENCES, ChangeReport, PairDiff
from stichtag.services.erasure import erasure_record

if TYPE_CHECKING:
    from stichtag.client import Client


def _assertion(row: AssertionRow) -> dict[str, Any]:
    return {"assertion_id": row.assertion_id, "document": row.document,
            "version_id": row.version_id, "valid_from": format_time(row.valid_from),
            "valid_to": format_time(row.valid_to), "tx_from": format_time(row.tx_from),
            "tx_to": format_time(row.tx_to), "title": row.title, "doc_class": row.doc_class,
            "confidentiality": CONFIDENTIALITY[row.confidentiality],
            "provenance": row.provenance, "ended": row.ended, "ended_reason": row.ended_reason}


def _side(s: DiffSentence | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"start": s.start, "end": s.end, "utf16_start": s.utf16_start,
            "utf16_end": s.utf16_end, "text": s.text, "heading_path": list(s.heading_path)}


def _diff(d: SentenceDiff) -> dict[str, Any]:
    return {"added": d.added, "removed": d.removed, "changed": d.changed,
            "unchanged": d.unchanged, "truncated": d.truncated,
            "sentences": [{"op": c.op, "old": _side(c.old), "new": _side(c.new),
                           "similarity": c.similarity} for c in d.changes]}


def _pair(p: PairDiff) -> dict[str, Any]:
    return {"from_version": p.pair.from_version, "to_version": p.pair.to_version,
            "from_state": p.pair.from_state, "to_state": p.pair.to_state,
            "ranges": [{"valid_from": format_time(r.start), "valid_to": format_time(r.end)}
                       for r in p.pair.ranges],
            "assertion_ids": list(p.pair.assertion_ids),
            "diff": _diff(p.diff) if p.diff is not None else None}


def changes_dict(report: ChangeReport) -> dict[str, Any]:
    """The report as ``GET /v1/changes`` returns it."""
    rows = report.rows

    def listed(stated: tuple[Any, ...]) -> list[dict[str, Any]]:
        return [_assertion(rows[s.assertion_id]) for s in stated]

    return {
        "window": {"known_from": format_time(report.window.known_from),
                   "known_to": format_time(report.window.known_to),
                   "rule": "known_from < t <= known_to"},
        "document": report.document,
        "documents": [{"document": d.changes.document, "new_document": d.changes.new_document,
                       "appeared": listed(d.changes.appeared), "ended": listed(d.changes.ended),
                       "corrected": listed(d.changes.corrected),
                       "pairs": [_pair(p) for p in d.pairs], "truncated": d.truncated}
                      for d in report.documents],
        "counts": report.counts, "truncated": report.truncated, "limits": report.limits,
        "erasures": [erasure_record(e) for e in report.erasures]}


def _pair_lines(p: dict[str, Any]) -> list[str]:
    ranges = ", ".join(f"[{r['valid_from']}, {r['valid_to'] or '∞'})" for r in p["ranges"])
    old = p["from_version"][:19] + "…" if p["from_version"] else p["from_state"]
    new = p["to_version"][:19] + "…" if p["to_version"] else p["to_state"]
    lines = [f"  {old} → {new}  for {ranges}"]
    diff = p["diff"]
    if diff is None:
        return lines
    cut = " (list truncated)" if diff["truncated"] else ""
    lines.append(f"    +{diff['added']} -{diff['removed']} ~{diff['changed']} "
                 f"={diff['unchanged']} sentences{cut}")
    for c in diff["sentences"]:
        if c["op"] == "changed":
            lines.append(f"    ~ {c['old']['text']}\n      → {c['new']['text']}")
        else:
            side = c["new"] if c["op"] == "added" else c["old"]
            lines.append(f"    {'+' if c['op'] == 'added' else '-'} {side['text']}")
    return lines


def changes_text(data: dict[str, Any]) -> str:
    """People's view of a knowledge diff: per document the assertions, then the pairs."""
    w = data["window"]
    lines = [f"changes known after {w['known_from']} up to and including {w['known_to']}"
             + (" (truncated: narrow the window or name a document)" if data["truncated"]
                else "")]
    for d in data["documents"]:
        lines.append(f"\n{d['document']}" + ("  (new document)" if d["new_document"] else ""))
        for label in ("appeared", "ended", "corrected"):
            for a in d[label]:
                appeared = label == "appeared"
                when = a["tx_from"] if appeared else a["tx_to"]
                how = a["provenance"].get("kind", "") if appeared else a["ended"]
                lines.append(f"  {label:<9} #{a['assertion_id']:<6} {a['version_id'][:19]}…  "
                             f"valid [{a['valid_from']}, {a['valid_to'] or '∞'})  at {when}  "
                             f"{how}")
        for p in d["pairs"]:
            lines.extend(_pair_lines(p))
    for e in data.get("erasures", []):
        lines.append(f"\nerased {e['version_id'][:19]}…  at {e['erased_at']}  by {e['erased_by']}"
                     f"  ({e['reason']})")
    if not data["documents"] and not data.get("erasures"):
        lines.append("no changes in this window")
    return "\n".join(lines)


def cmd_changes(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """What changed in what we knew between two transaction times."""
    who = operator(svc, args.tenant)
    known_from = parse_time(args.known_from, field="known_from", tz=who.time_zone)
    known_to = optional_time(who, args.known_to, field="known_to") or svc.clock.now()
    report = svc.changes.changes(who, known_from=known_from, known_to=known_to,
                                 document=args.document, diff=not args.no_diff,
                                 limit=args.limit, max_sentences=args.max_sentences)
    out.emit(changes_dict(report), changes_text)


def remote_changes(api: Client, args: argparse.Namespace, out: Output) -> None:
    """The same through the server: the response is this shape already."""
    report = api.changes(known_from=args.known_from, known_to=args.known_to,
                         document=args.document, diff=not args.no_diff, limit=args.limit,
                         max_sentences=args.max_sentences)
    out.emit(plain(report), changes_text)


def register(sub: Subparsers) -> None:
    """``changes``."""
    ch = command(sub, "changes", help="knowledge diff: what changed in what we knew between "
                                      "two transaction times",
                 example="stichtag changes --tenant acme --known-from 2025-06-01 "
                         "--known-to 2025-12-01\n"
                         "stichtag changes --tenant acme --known-from 2025-06-01 "
                         "--document deckrv --json")
    add_tenant(ch, remote=True)
    ch.add_argument("--known-from", required=True, metavar="TIME",
                    help="window start, exclusive")
    ch.add_argument("--known-to", metavar="TIME", help="window end, inclusive (default now)")
    ch.add_argument("--document", metavar="KEY", help="only this document key")
    ch.add_argument("--no-diff", action="store_true",
                    help="list assertions without sentence diffs")
    ch.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                    help=f"assertion entries listed at most (default {DEFAULT_LIMIT})")
    ch.add_argument("--max-sentences", type=int, default=DEFAULT_MAX_SENTENCES,
                    help="sentence changes listed per version pair "
                         f"(default {DEFAULT_MAX_SENTENCES})")
    ch.set_defaults(handler=cmd_changes, remote=remote_changes)
