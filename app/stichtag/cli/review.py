"""``stichtag review``: the sampled support review of answer sentences (reviewer ``cli``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stichtag.bootstrap import Services
from stichtag.cli.args import Subparsers, add_tenant, command, group, optional_time
from stichtag.cli.output import Output
from stichtag.cli.remote import plain
from stichtag.cli.tenants import operator

if TYPE_CHECKING:
    from stichtag.client import Client


def _report_text(d: dict[str, Any]) -> str:
    def ci(c: list[float] | None) -> str:
        return f" (95 % CI {c[0]:.2f}-{c[1]:.2f})" if c else ""

    lines = []
    for st in [d["overall"], *d["strata"]]:
        p, s = st["pairs"], st["sentences"]
        lines.append(f"{st['stratum']}: {p['statement']}{ci(p['ci95'])}; "
                     f"{s['statement']}{ci(s['ci95'])}; "
                     f"{st['pairs_unreviewed']} pairs unreviewed")
    lines += [f"  ✗ item {f['item']} {f['verdict']}: run {f['run_id']} "
              f"{f['evidence_id']} {f['document']} ({f['generator']})"
              for f in d["failures"]]
    return "\n".join(lines)


def _items_text(d: dict[str, Any]) -> str:
    return "\n".join(
        f"[{i['item']}] {i['stratum']} · {(i['verdict'] or {}).get('verdict', 'unreviewed')}"
        f"\n  sentence: {i['sentence']}\n  quote:    {i['citation']['quote']}"
        f"\n  source:   {i['citation']['document']} {i['citation']['version_id'][:15]}… "
        f"[{i['citation']['start']}, {i['citation']['end']})" for i in d["items"]) or "no items"


def cmd_review(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Sample, show, record a verdict, or report."""
    who = operator(svc, args.tenant)
    if args.sub == "sample":
        strata = [s.strip() for s in (args.strata or "").split(",") if s.strip()]
        s = svc.review.create_sample(
            who, seed=args.seed, strata=strata, n=args.n,
            run_from=optional_time(who, args.run_from, field="run_from"),
            run_to=optional_time(who, args.run_to, field="run_to"))
        _drawn(out, s)
    elif args.sub == "show":
        _shown(out, svc.review.sample(who, args.sample_id))
    elif args.sub == "verdict":
        _recorded(out, svc.review.record_verdict(
            who, sample_id=args.sample_id, item=args.item, verdict=args.verdict,
            note=args.note, supersedes=args.supersedes))
    elif args.sub == "export-labels":
        rows = svc.review.export_labels(who, args.sample_id)
        path = Path(args.out)
        with path.open("w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        positives = sum(r["label"] for r in rows)
        out.emit({"out": str(path), "pairs": len(rows), "positives": positives},
                 lambda d: f"{d['pairs']} labelled pairs ({d['positives']} positive) written "
                           f"to {d['out']}; train with: stichtag models train-reranker "
                           f"--labels {d['out']}")
    else:
        out.emit(svc.review.report(who, args.sample_id), _report_text)


def remote_review(api: Client, args: argparse.Namespace, out: Output) -> None:
    """The same through the server (``export-labels`` has no API: local only)."""
    if args.sub == "sample":
        strata = [s.strip() for s in (args.strata or "").split(",") if s.strip()]
        _drawn(out, api.create_review_sample(seed=args.seed, strata=strata, n=args.n,
                                             run_from=args.run_from, run_to=args.run_to))
    elif args.sub == "show":
        _shown(out, api.review_sample(args.sample_id))
    elif args.sub == "verdict":
        _recorded(out, plain(api.record_verdict(
            sample_id=args.sample_id, item=args.item, verdict=args.verdict, note=args.note,
            supersedes=args.supersedes)))
    else:  # report; export-labels has no API and no remote handler
        out.emit(plain(api.review_report(args.sample_id)), _report_text)


def _drawn(out: Output, s: Any) -> None:
    """A sample just drawn (the service's Sample or the API's SampleOut)."""
    data = {"sample_id": s.sample_id, "seed": s.seed, "strata": s.strata,
            "n_per_stratum": s.n_per_stratum, "population": s.population,
            "items": len(s.items)}
    out.emit(data, lambda d: f"sample {d['sample_id']}: {d['items']} pairs drawn "
             f"(seed {d['seed']}, n {d['n_per_stratum']} per stratum)" + "".join(
                 f"\n  {k}: population {v}" for k, v in d["population"].items()))


def _shown(out: Output, s: Any) -> None:
    out.emit({"sample_id": s.sample_id, "seed": s.seed, "strata": s.strata,
              "population": s.population, "items": s.items}, _items_text)


def _recorded(out: Output, v: dict[str, Any]) -> None:
    out.emit(v, lambda d: f"verdict {d['verdict_id']} ({d['verdict']}) on item {d['item']}"
             f", log seq {d['seq']}")


def register(sub: Subparsers) -> None:
    """``review sample|show|verdict|report``."""
    rv = group(sub, "review", help="sampled support review of answer sentences",
               example="stichtag review sample --tenant acme --seed 7 --strata document -n 20\n"
                       "stichtag review show --tenant acme SAMPLE_ID\n"
                       "stichtag review verdict --tenant acme SAMPLE_ID 3 full\n"
                       "stichtag review report --tenant acme SAMPLE_ID")
    rs = command(rv, "sample",
                 help="draw a reproducible stratified sample of sentence-citation pairs",
                 example="stichtag review sample --tenant acme --seed 7 --strata document,"
                         "generator -n 20 --run-from 2025-01-01")
    add_tenant(rs, remote=True)
    rs.add_argument("--seed", type=int, required=True, help="the same seed draws the same sample")
    rs.add_argument("--strata",
                    help="comma-separated: document,generator,coverage,run_month,asof_year")
    rs.add_argument("-n", type=int, default=20, help="pairs per stratum (default 20)")
    rs.add_argument("--run-from", metavar="TIME", help="only runs recorded at or after this time")
    rs.add_argument("--run-to", metavar="TIME", help="only runs recorded before this time")
    rs.set_defaults(handler=cmd_review, remote=remote_review)
    rsh = command(rv, "show", help="a sample's items: sentence, quote, current verdict",
                  example="stichtag review show --tenant acme SAMPLE_ID")
    add_tenant(rsh, remote=True)
    rsh.add_argument("sample_id")
    rsh.set_defaults(handler=cmd_review, remote=remote_review)
    rvd = command(rv, "verdict", help="record a verdict (append-only, logged)",
                  example="stichtag review verdict --tenant acme SAMPLE_ID 3 partial "
                          '--note "the quote omits the exception"')
    add_tenant(rvd, remote=True)
    rvd.add_argument("sample_id")
    rvd.add_argument("item", type=int, help="the item number (review show)")
    rvd.add_argument("verdict", help="full | partial | none | contradicts")
    rvd.add_argument("--note")
    rvd.add_argument("--supersedes", metavar="VERDICT_ID", help="the item's current verdict id")
    rvd.set_defaults(handler=cmd_review, remote=remote_review)
    rrp = command(rv, "report", help="support rates with counts, denominators and 95 %% CIs",
                  example="stichtag review report --tenant acme SAMPLE_ID --json")
    add_tenant(rrp, remote=True)
    rrp.add_argument("sample_id")
    rrp.set_defaults(handler=cmd_review, remote=remote_review)
    rel = command(rv, "export-labels",
                  help="reranker training pairs from a sample's verdicts (full/partial "
                       "positive, none/contradicts negative) as JSONL",
                  example="stichtag review export-labels --tenant acme SAMPLE_ID "
                          "--out labels.jsonl\n"
                          "stichtag models train-reranker --labels labels.jsonl")
    add_tenant(rel)
    rel.add_argument("sample_id")
    rel.add_argument("--out", required=True, help="the JSONL file to write")
    rel.set_defaults(handler=cmd_review)
