"""Source lines before and after they named only what was read (docs/architecture.md §7): how many
documents they name, and how many of
those the answer actually cites or opened.

    .venv/bin/python bench/bench_sources.py [--markdown]

Loads the shared law corpus (every version, historical transaction times) into a fresh
embedded PostgreSQL and answers every question of ``eval/asof_de_insurance.jsonl`` at its
as-of pair with the extractive generator (``record=False``). Both rules are computed from
the same run, so the comparison is exact:

- **before** — the earlier rule: every evidence sentence the generator was given
  counted as consulted, so the source line named every document of the found set once a
  draft existed (abstentions before generation named none);
- **after** — ``AnswerResult.provenance.consulted``: documents of cited excerpts, plus
  documents opened in full (none for the extractive generator).

"Cited or opened" is the share of source-line documents that the delivered answer links
or that the generator read in full (goal 100 %).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass

import _common as c

from stichtag.cli.manifest import ingest_manifest
from stichtag.domain.timeutil import parse_time
from stichtag.services.answer_result import AnswerResult

SET = c.REPO / "eval" / "asof_de_insurance.jsonl"


@dataclass
class Lines:
    """Source-line sizes and how many of their documents were cited or opened."""

    runs: int = 0
    shown: int = 0
    backed: int = 0

    def add(self, line: set[str], backed_by: set[str]) -> None:
        self.runs += 1
        self.shown += len(line)
        self.backed += len(line & backed_by)

    def mean(self) -> str:
        return f"{self.shown / self.runs:.2f}" if self.runs else "-"

    def share(self) -> str:
        return c.pct(self.backed, self.shown)


def before(r: AnswerResult) -> set[str]:
    """The old source line: every found document once the generator produced a draft."""
    drafted = any(g.gate == "generation" and g.passed for g in r.gates)
    return {e.document for e in r.evidence} if drafted else set()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true", help="also print Markdown")
    args = parser.parse_args()
    started = time.perf_counter()
    items = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines()]
    with c.services(c.embedder()) as svc:
        who = c.tenant(svc, "law")
        c.say("ingesting the law corpus (every version, historical transaction times)")
        ingest_manifest(svc, who, c.shared("corpus", "de-insurance-law", "manifest.csv"),
                        use_tx_time=True)
        svc.indexer.catch_up(who.tenant_id)
        where = c.machine(svc)
        assert svc.answers is not None
        rows: dict[str, tuple[Lines, Lines]] = {
            k: (Lines(), Lines()) for k in ("all questions", "delivered answers",
                                            "abstentions")}
        sources_gate = 0
        for item in items:
            r = svc.answers.answer(
                who, item["question"], record=False,
                valid_at=parse_time(item["valid_at"], field="valid_at"),
                known_at=parse_time(item["known_at"], field="known_at"))
            backed = set(r.provenance.cited) | set(r.provenance.opened)
            kind = "abstentions" if r.status == "abstained" else "delivered answers"
            for key in ("all questions", kind):
                rows[key][0].add(before(r), backed)
                rows[key][1].add(set(r.provenance.consulted), backed)
            sources_gate += any(g.gate == "sources" and not g.passed for g in r.gates)
    table = c.Table(
        f"Source lines on {SET.name} ({len(items)} questions, extractive)",
        ["runs", "n", "documents in line: before", "after", "cited or opened: before",
         "after"],
        [[k, str(b.runs), b.mean(), a.mean(), b.share(), a.share()]
         for k, (b, a) in rows.items()],
        [f"sources gate refusals: {sources_gate} (a delivered answer always cites, so "
         "always consulted something)"])
    c.emit([table])
    if args.markdown:
        print(c.markdown("Source lines", [table],
                         command=".venv/bin/python bench/bench_sources.py --markdown",
                         where=where, seconds=time.perf_counter() - started))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
