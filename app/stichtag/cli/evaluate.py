"""``stichtag calibrate`` and ``eval``: fitting the gates and measuring answers on
labelled as-of questions."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from stichtag.bootstrap import Services
from stichtag.cli.args import Subparsers, add_tenant, command
from stichtag.cli.leverage import show_leverage
from stichtag.cli.output import CliError, Output
from stichtag.cli.tenants import operator
from stichtag.services.calibrate import calibrate
from stichtag.services.eval_metrics import sweep
from stichtag.services.eval_plot import write_svg
from stichtag.services.eval_set import corpus_versions, load_items
from stichtag.services.evaluate import evaluate


def cmd_calibrate(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Fit the calibration, propose θ_rel and τ; ``--apply`` records them. With
    ``--leverage``: the leverage of τ measured on the tenant's recorded answers."""
    who = operator(svc, args.tenant)
    if args.leverage:
        assert svc.leverage is not None
        show_leverage(svc.leverage.report(who), out)
        return
    if args.file is None:
        raise CliError("file: the labelled questions to calibrate on (or --leverage)")
    if svc.answers is None:
        raise CliError("calibration needs the models: stichtag models build")
    svc.indexer.catch_up(who.tenant_id)
    report = calibrate(svc.answers, who, Path(args.file), target_wrong_rate=args.target_wrong_rate,
                       tau=args.tau, time_zone=who.time_zone)
    data = report.to_dict()
    if args.apply:
        row = svc.thresholds.set(who, theta_rel=report.theta_rel, tau=report.tau,
                                 calibration=report.calibration, rationale=report.rationale,
                                 theta_scope=report.theta_scope, relevance=report.relevance)
        data["applied_version"] = row.version
    out.emit(data, lambda d: d["rationale"] + (
        f"\napplied as threshold version {d['applied_version']}" if "applied_version" in d
        else "\n(not applied; add --apply to record it)"))


def cmd_eval(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Answer every item, score it against its gold citation, sweep the thresholds."""
    who = operator(svc, args.tenant)
    if svc.answers is None:
        raise CliError("evaluation needs the models: stichtag models build")
    tz = who.time_zone
    items = load_items(Path(args.file), time_zone=tz,
                       version_of_file=corpus_versions(Path(args.corpus)) if args.corpus else None)
    if args.limit is not None:
        items = items[:args.limit]
    svc.indexer.catch_up(who.tenant_id)
    report = evaluate(svc.answers, who, items, time_zone=tz)
    table = sweep(report.items, thetas=[i / 20 for i in range(21)], taus=[0.0, 0.5, 0.75, 1.0])
    data = {**report.to_dict(), "sweep": table}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n",
                                       encoding="utf-8")
    if args.svg:
        write_svg(table, Path(args.svg))
    out.emit(report.totals, lambda d: "\n".join(
        f"{k}: {v}" for k, v in d.items() if k != "denominators"))


def register(sub: Subparsers) -> None:
    """``calibrate``, ``eval``."""
    cal = command(sub, "calibrate", help="fit the rerank calibration and propose thresholds",
                  example="stichtag calibrate --tenant acme labelled.jsonl "
                          "--target-wrong-rate 0.1 --apply")
    add_tenant(cal)
    cal.add_argument("file", nargs="?", help="JSONL: question, answerable, valid_at, known_at")
    cal.add_argument("--leverage", action="store_true",
                     help="instead: the leverage of tau measured on the tenant's recorded "
                          "checks and language-model answers (docs/thresholds.md)")
    cal.add_argument("--target-wrong-rate", type=float, default=0.1,
                     help="share of unanswerable questions that may pass the gate "
                          "(default 0.1)")
    cal.add_argument("--tau", type=float, default=1.0, help="coverage threshold (default 1.0)")
    cal.add_argument("--apply", action="store_true",
                     help="record it as a new threshold version")
    cal.set_defaults(handler=cmd_calibrate, needs_models=True)

    ev = command(sub, "eval", help="evaluate answers on a labelled as-of question set",
                 example="stichtag eval --tenant law eval/asof_de_insurance.jsonl "
                         "--corpus ../shared/corpus/de-insurance-law --svg sweep.svg")
    add_tenant(ev)
    ev.add_argument("file", help="JSONL: question, valid_at, known_at, answerable, gold")
    ev.add_argument("--corpus", metavar="DIR",
                    help="directory that gold.version_file paths are relative to")
    ev.add_argument("--json-out", metavar="FILE",
                    help="write totals, per-item rows and the sweep as JSON")
    ev.add_argument("--svg", metavar="FILE", help="write the delivery vs wrong-answer plot")
    ev.add_argument("--limit", type=int, help="evaluate only the first N items")
    ev.set_defaults(handler=cmd_eval, needs_models=True)
