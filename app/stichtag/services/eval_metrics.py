"""The metrics of an evaluation, computed from its per-item rows only.

Every number is a function of the ``ItemResult`` rows, so anyone can recompute it from a
report's ``items``; separate from running the set (:mod:`stichtag.services.evaluate`) because
it needs no service, and the threshold sweep replays the same rows offline.

Metrics and their denominators:

Per item (denominator: all items, ``n``)
  delivery rate           items answered or partial / n
  abstention rate[reason] items abstained with that reason / n
  wrong per item          wrong items / n
Per delivered item (denominator: delivered items, ``d``)
  wrong-answer rate       wrong items / d, where an item is wrong if it was delivered and
                          is unanswerable, or answerable without a gold hit
Per delivered answerable item with a gold version (denominator ``g``)
  as-of correctness       items whose citations are all visible at the item's as-of pair
                          (each cited document read as of ``(valid_at, known_at)`` yields
                          exactly the cited version) AND at least one citation is in the
                          gold version / g
  gold-span hit rate      items with a citation in the gold document that overlaps the gold
                          span (in the gold version) or whose quote contains ``gold_text``
                          / delivered answerable items
Per answer sentence (denominator: sentences of delivered answers)
  citation rate (Belegquote)  sentences with >= 1 citation / all answer sentences
Per citation (denominator: all citations of delivered answers)
  citation validity (Zitattreue)  citations whose quote equals ``text[start:end]`` of
                                  their version (fetched from the store) / all citations
Per item that reached gate 2 (denominator: items with a coverage value)
  mean coverage           mean of the recorded coverage
Latency: p50/p95 (nearest rank) of the wall time of each ``answer`` call, all items.

A rate whose denominator is zero is ``None`` (not 0, not 1): nothing was measured.

:func:`sweep` replays the gate decisions offline: with θ_rel and τ varied, an item is
delivered iff its recorded gate-1 value ``>= θ``, its coverage ``>= τ`` and every other gate
passed. Items that never reached generation have no coverage and count as not delivered,
so run the evaluation with permissive thresholds (θ_rel = 0, τ = 0) for a full curve.
An item whose answer was withheld has no citations to judge; if the sweep would deliver
it, it counts as wrong (pessimistic).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class ItemResult:
    """What one item's answer run produced and how it was judged (None = not applicable)."""

    id: str
    question: str
    valid_at: str
    known_at: str
    answerable: bool
    status: str
    reason: str | None
    delivered: bool
    gold_version_id: str | None
    cited_versions: list[str]
    citations_visible: bool | None
    cites_gold_version: bool | None
    asof_correct: bool | None
    gold_hit: bool | None
    wrong: bool
    sentences: int
    cited_sentences: int
    citations: int
    valid_citations: int
    coverage: float | None
    relevance: float | None
    other_gates_passed: bool
    latency_ms: float
    run_id: str = ""
    gaps: tuple[str, ...] = ()


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 6) if den else None


def _percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile (no interpolation: every value reported was observed)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def totals(rows: Sequence[ItemResult]) -> dict[str, Any]:
    """Every total, computed from the per-item rows only (so anyone can recompute it)."""
    n = len(rows)
    delivered = [r for r in rows if r.delivered]
    answerable_delivered = [r for r in delivered if r.answerable]
    with_gold_version = [r for r in delivered if r.asof_correct is not None]
    covered = [r.coverage for r in rows if r.coverage is not None]
    reasons = Counter(r.reason for r in rows if r.status == "abstained")
    sentences = sum(r.sentences for r in delivered)
    citations = sum(r.citations for r in delivered)
    latencies = [r.latency_ms for r in rows]
    return {
        "items": n, "answerable": sum(r.answerable for r in rows),
        "unanswerable": sum(not r.answerable for r in rows),
        "delivered": len(delivered), "abstained": sum(reasons.values()),
        "wrong": sum(r.wrong for r in rows),
        "delivery_rate": _rate(len(delivered), n),
        "abstention_rate": _rate(sum(reasons.values()), n),
        "abstention_rate_by_reason": {str(k): _rate(v, n) for k, v in sorted(reasons.items())},
        "wrong_per_item": _rate(sum(r.wrong for r in rows), n),
        "wrong_answer_rate": _rate(sum(r.wrong for r in delivered), len(delivered)),
        "asof_items": len(with_gold_version),
        "asof_correctness": _rate(sum(bool(r.asof_correct) for r in with_gold_version),
                                  len(with_gold_version)),
        "gold_hit_rate": _rate(sum(bool(r.gold_hit) for r in answerable_delivered),
                               len(answerable_delivered)),
        "answer_sentences": sentences,
        "cited_sentences": sum(r.cited_sentences for r in delivered),
        "citation_rate": _rate(sum(r.cited_sentences for r in delivered), sentences),
        "citations": citations,
        "valid_citations": sum(r.valid_citations for r in delivered),
        "citation_validity": _rate(sum(r.valid_citations for r in delivered), citations),
        "coverage_items": len(covered),
        "mean_coverage": round(sum(covered) / len(covered), 6) if covered else None,
        "latency_ms_p50": _percentile(latencies, 50),
        "latency_ms_p95": _percentile(latencies, 95),
        "denominators": {
            "delivery_rate": "items", "abstention_rate": "items", "wrong_per_item": "items",
            "wrong_answer_rate": "delivered items",
            "asof_correctness": "delivered items with a gold version",
            "gold_hit_rate": "delivered answerable items",
            "citation_rate": "answer sentences of delivered items",
            "citation_validity": "citations of delivered items",
            "mean_coverage": "items that reached gate 2", "latency": "items"},
    }


def sweep(results: Sequence[ItemResult], thetas: Sequence[float],
          taus: Sequence[float]) -> list[dict[str, Any]]:
    """Delivery and wrong-answer rate if gate 1 used θ and gate 2 used τ (offline replay
    of the recorded gate values; see the module docstring for what it cannot know)."""
    n = len(results)
    table = []
    for tau in taus:
        for theta in thetas:
            out = [r for r in results
                   if r.other_gates_passed and r.relevance is not None and r.relevance >= theta
                   and r.coverage is not None and r.coverage >= tau]
            # Delivered now but withheld in the run: nothing to judge, so count it wrong.
            wrong = sum(1 for r in out if not r.answerable or not (r.delivered and r.gold_hit))
            table.append({"tau": tau, "theta_rel": theta, "delivered": len(out),
                          "wrong": wrong, "delivery_rate": _rate(len(out), n) or 0.0,
                          "wrong_answer_rate": _rate(wrong, len(out)) or 0.0})
    return table
