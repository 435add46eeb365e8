# E402: the repository goes on sys.path before stichtag is imported (scripts run from bench/)
"""Compared answers and receipts on the law corpus (docs/api.md, "Compare";
docs/audit.md, "Receipts").

Starts its own embedded PostgreSQL, ingests the law corpus documents named by
``--documents`` (default DeckRV and VVG 2008, every dated version, with their
transaction times), and then, in the same run and interleaved so that load from other
processes hits all variants alike:

1. the two single answers a comparison makes (``AnswerService.answer`` at each pair,
   recorded) and ``CompareService.compare`` of the same pairs (both answers, the history
   causes, the sentence diffs and the compare record): p50/p95 of each, and the ratio;
2. a receipt per recorded answer: its size (JSON bytes, and gzip), the time to build it
   on the server and to verify it offline (``verify_receipt`` with the cited texts).

    PYTHONPATH=. .venv/bin/python bench/bench_compare.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from _common import Table, embedder, emit, machine, percentile, ratio, say, services, shared, tenant

from stichtag.audit.receipt import cited_versions, load_versions, verify_receipt
from stichtag.audit.signing import load_public_key
from stichtag.cli.manifest import ingest_manifest
from stichtag.domain.asof import AsOf
from stichtag.domain.timeutil import parse_time

QUESTIONS = [
    ("Welcher Höchstzinssatz gilt nach § 2 DeckRV für die Berechnung der "
     "Deckungsrückstellungen bei Verträgen in Euro?", "2013-01-01", "2022-06-01"),
    ("Wie lange ist die Widerrufsfrist des Versicherungsnehmers nach dem VVG?",
     "2013-01-01", "2022-06-01"),
    ("Welcher Höchstzinssatz gilt nach § 2 DeckRV für die Berechnung der "
     "Deckungsrückstellungen bei Verträgen in Euro?", "2019-07-01", "2025-06-01"),
]


def _subset(manifest: Path, documents: Sequence[str], out: Path) -> int:
    with manifest.open(encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["document"] in documents]
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow({**r, "file": str(manifest.parent / r["file"]) if r["file"] else ""})
    return len(rows)


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    """Run both measurements and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--documents", default="deckrv,vvg2008")
    args = parser.parse_args(argv)
    manifest = shared("corpus", "de-insurance-law", "manifest.csv")
    with services(embedder()) as svc:
        assert svc.answers is not None and svc.compare is not None
        who = tenant(svc, "law")
        subset = Path(svc.settings.data_dir) / "manifest.csv"
        n = _subset(manifest, args.documents.split(","), subset)
        say(f"ingesting {n} manifest rows ({args.documents})")
        ingest_manifest(svc, who, subset, use_tx_time=True)
        svc.indexer.catch_up(who.tenant_id)
        now = datetime.now(UTC)
        singles: list[float] = []
        compares: list[float] = []
        run_ids = []
        for r in range(args.rounds):
            for question, first, second in QUESTIONS:
                a = AsOf(valid_at=parse_time(first, field="v"), known_at=now)
                b = AsOf(valid_at=parse_time(second, field="v"), known_at=now)
                started = time.perf_counter()
                for at in (a, b):
                    done = svc.answers.answer(who, question, valid_at=at.valid_at,
                                              known_at=at.known_at)
                    run_ids.append(str(done.run_id))
                singles.append(_ms(started))
                started = time.perf_counter()
                svc.compare.compare(who, question, first=a, second=b)
                compares.append(_ms(started))
            say(f"round {r + 1}/{args.rounds}")
        speed = Table(f"compare against two single answers ({len(compares)} pairs each, "
                      "interleaved)", ["variant", "p50 ms", "p95 ms", "p50 ratio"])
        base = percentile(singles, 0.5)
        speed.rows.append(["two answers", f"{base:.0f}", f"{percentile(singles, 0.95):.0f}",
                           "1.00x"])
        speed.rows.append(["compare", f"{percentile(compares, 0.5):.0f}",
                           f"{percentile(compares, 0.95):.0f}",
                           ratio(percentile(compares, 0.5), base)])

        key = load_public_key(svc.runlog.public_key().encode())
        sizes, zipped, build, check, quotes = [], [], [], [], []
        texts: dict[str, str] = {}
        for run_id in run_ids[: 3 * len(QUESTIONS) * 2]:
            started = time.perf_counter()
            receipt = svc.receipts.receipt(who, run_id)
            build.append(_ms(started))
            body = json.dumps(receipt, ensure_ascii=False).encode()
            sizes.append(len(body))
            zipped.append(len(gzip.compress(body)))
            for vid in cited_versions(receipt):
                if vid not in texts:
                    texts[vid] = svc.answers.versions.get(who, vid).text
            versions = load_versions(texts[v] for v in cited_versions(receipt))
            started = time.perf_counter()
            report = verify_receipt(receipt, key, versions=versions)
            check.append(_ms(started))
            assert report.ok, report.problems
            quotes.append(report.quotes_checked)
        rec = Table(f"receipts of {len(sizes)} recorded answers (log of "
                    f"{svc.runlog.head(who.tenant_id)[0]} leaves)",
                    ["measure", "p50", "p95", "max"])
        for name, values, unit in (("size, bytes", sizes, ""), ("gzip, bytes", zipped, ""),
                                   ("build on the server, ms", build, ""),
                                   ("verify offline, ms (with texts)", check, ""),
                                   ("quotes checked", quotes, "")):
            rec.rows.append([name + unit, f"{percentile(values, 0.5):.1f}",
                             f"{percentile(values, 0.95):.1f}", f"{max(values):.1f}"])
        rec.notes.append("verify: signature, inclusion, binding and every quote against "
                         "its text; reading and content-addressing the texts is not timed")
        print(f"machine: {machine(svc)}\n")
        emit([speed, rec])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
