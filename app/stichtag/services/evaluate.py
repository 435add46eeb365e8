"""Evaluate the gated answer pipeline on a labelled as-of question set.

Every item (format: :mod:`stichtag.services.eval_set`) is answered once through
:meth:`AnswerService.answer` at its as-of pair; then the citations are checked against
the store: visible at the item's as-of pair, in the gold version, overlapping the gold
span or containing the gold text, quoting their version exactly. Each item becomes one
``ItemResult`` row; the totals, their denominators and the threshold sweep are defined
in :mod:`stichtag.services.eval_metrics`, the sweep's plot in :mod:`stichtag.services.eval_plot`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from stichtag.domain.asof import AsOf
from stichtag.domain.fundstelle import Citation
from stichtag.domain.timeutil import format_time
from stichtag.services.access import Principal
from stichtag.services.answer import AnswerService
from stichtag.services.answer_result import AnswerResult
from stichtag.services.eval_metrics import ItemResult, totals
from stichtag.services.eval_set import EvalItem, Gold, parse_items

DELIVERED = ("answered", "partial")


@dataclass(frozen=True, kw_only=True)
class EvalReport:
    """Per-item rows and the totals computed from them (``eval_metrics.totals``)."""

    items: list[ItemResult]
    totals: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {"totals": self.totals, "items": [asdict(r) for r in self.items]}


def evaluate(answers: AnswerService, principal: Principal, items: Sequence[Any], *,
             time_zone: str = "UTC",
             version_of_file: Callable[[str], str] | None = None) -> EvalReport:
    """Answer every item at its as-of pair and judge the citations (module docstring).

    ``items`` are :class:`EvalItem` or raw dicts in the JSONL format. Runs are recorded
    in the run log like any other answer, so each verdict can be audited by run id.
    """
    parsed = [i if isinstance(i, EvalItem) else parse_items(
        [i], time_zone=time_zone, version_of_file=version_of_file)[0] for i in items]
    judge = _Judge(answers, principal)
    rows = []
    for item in parsed:
        started = time.perf_counter()
        result = answers.answer(principal, item.question, valid_at=item.valid_at,
                                known_at=item.known_at)
        latency = round((time.perf_counter() - started) * 1000, 3)
        rows.append(judge.row(item, result, latency))
    return EvalReport(items=rows, totals=totals(rows))


class _Judge:
    """Checks citations against the store, caching as-of reads and version texts."""

    def __init__(self, answers: AnswerService, principal: Principal) -> None:
        self.answers, self.principal = answers, principal
        self._asof: dict[tuple[str, datetime, datetime], str | None] = {}

    def in_force(self, document: str, valid_at: datetime, known_at: datetime) -> str | None:
        key = (document, valid_at, known_at)
        if key not in self._asof:
            # The store's as-of read, exactly what DocumentService.get uses.
            row = self.answers.versions.store.assertion_asof(
                self.principal.tenant_id, key=document,
                as_of=AsOf(valid_at=valid_at, known_at=known_at),
                clearance=self.principal.clearance)
            self._asof[key] = row.version_id if row is not None else None
        return self._asof[key]

    def text(self, vid: str) -> str:
        return str(self.answers.versions.get(self.principal, vid).text)

    def row(self, item: EvalItem, result: AnswerResult, latency: float) -> ItemResult:
        delivered = result.status in DELIVERED
        cits = [c for s in result.sentences for c in s.citations]
        gold = item.gold
        visible = (all(self.in_force(c.document, item.valid_at, item.known_at) == c.version_id
                       for c in cits) if delivered else None)
        cites_gold = (any(c.version_id == gold.version_id for c in cits)
                      if delivered and gold and gold.version_id else None)
        hit = (any(_hits(gold, c) for c in cits)
               if delivered and item.answerable and gold else None)
        gate1 = next((g for g in result.gates if g.gate == "relevance"), None)
        return ItemResult(
            run_id=str(result.run_id), gaps=tuple(result.gaps),
            id=item.id, question=item.question, valid_at=format_time(item.valid_at) or "",
            known_at=format_time(item.known_at) or "", answerable=item.answerable,
            status=result.status, reason=result.reason, delivered=delivered,
            gold_version_id=gold.version_id if gold else None,
            cited_versions=sorted({c.version_id for c in cits}), citations_visible=visible,
            cites_gold_version=cites_gold,
            asof_correct=(bool(visible and cites_gold) if cites_gold is not None else None),
            gold_hit=hit, wrong=delivered and (not item.answerable or not hit),
            sentences=len(result.sentences),
            cited_sentences=sum(1 for s in result.sentences if s.citations),
            citations=len(cits),
            valid_citations=sum(1 for c in cits
                                if self.text(c.version_id)[c.start:c.end] == c.quote),
            coverage=result.coverage, relevance=gate1.observed if gate1 else None,
            other_gates_passed=all(g.passed for g in result.gates
                                   if g.gate not in ("relevance", "coverage")),
            latency_ms=latency)


def _hits(gold: Gold, c: Citation) -> bool:
    """A citation hits the gold if it is in the gold document and either overlaps the gold
    span in the gold version (offsets are per version) or contains the gold text."""
    if c.document != gold.document:
        return False
    if (gold.span is not None and c.version_id == gold.version_id
            and c.start < gold.span[1] and gold.span[0] < c.end):
        return True
    return gold.gold_text is not None and gold.gold_text in c.quote
