"""Evaluate the gated answer pipeline on a labelled as-of question set.

Each item is one JSON object: ``question``, ``valid_at``/``known_at`` (RFC 3339 or plain
date; absent = now), ``answerable`` (bool) and, for answerable items, ``gold``:
``{document, version_file | version_id, span: [start, end] | gold_text}``. Every item is
answered once through :meth:`AnswerService.answer` at its as-of pair; then the
citations are checked against the store. Metrics and their denominators:

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

import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from app.domain.asof import AsOf
from app.domain.errors import Invalid
from app.domain.fundstelle import Citation
from app.domain.text import normalize, version_id
from app.domain.timeutil import format_time, parse_time
from app.services.access import Principal
from app.services.answer import AnswerService
from app.services.answer_result import AnswerResult

DELIVERED = ("answered", "partial")


@dataclass(frozen=True, kw_only=True)
class Gold:
    """Where the answer to an answerable item is: a document, its version, a span or text."""

    document: str
    version_id: str | None
    span: tuple[int, int] | None
    gold_text: str | None


@dataclass(frozen=True, kw_only=True)
class EvalItem:
    """One labelled question at one as-of pair."""

    id: str
    question: str
    valid_at: datetime
    known_at: datetime
    answerable: bool
    gold: Gold | None


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


@dataclass(frozen=True, kw_only=True)
class EvalReport:
    """Per-item rows and the totals computed from them (see the module docstring)."""

    items: list[ItemResult]
    totals: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {"totals": self.totals, "items": [asdict(r) for r in self.items]}


def load_items(path: Path, *, time_zone: str = "UTC",
               version_of_file: Callable[[str], str] | None = None) -> list[EvalItem]:
    """Read a JSONL set (see ``eval/README.md``)."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise Invalid(f"line {number}", f"not JSON: {exc.msg}") from exc
    return parse_items(rows, time_zone=time_zone, version_of_file=version_of_file)


def parse_items(rows: Iterable[dict[str, Any]], *, time_zone: str = "UTC",
                version_of_file: Callable[[str], str] | None = None) -> list[EvalItem]:
    """Check labelled rows and resolve times (tenant zone) and gold version files."""
    now = datetime.now(UTC)
    items = []
    for number, row in enumerate(rows, start=1):
        where = f"item {row.get('id', number)}"
        if not isinstance(row.get("question"), str) or not isinstance(row.get("answerable"), bool):
            raise Invalid(where, "needs question (string) and answerable (bool)")
        gold = _gold(row.get("gold"), where, version_of_file)
        if row["answerable"] and gold is None:
            raise Invalid(where, "an answerable item needs gold")
        items.append(EvalItem(
            id=str(row.get("id", number)), question=row["question"],
            valid_at=parse_time(row["valid_at"], field="valid_at", tz=time_zone)
            if row.get("valid_at") else now,
            known_at=parse_time(row["known_at"], field="known_at", tz=time_zone)
            if row.get("known_at") else now,
            answerable=row["answerable"], gold=gold))
    return items


def _gold(raw: Any, where: str, version_of_file: Callable[[str], str] | None) -> Gold | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("document"), str):
        raise Invalid(where, "gold needs a document")
    vid = raw.get("version_id")
    if vid is None and raw.get("version_file"):
        if version_of_file is None:
            raise Invalid(where, "gold.version_file needs a corpus root to resolve it")
        vid = version_of_file(raw["version_file"])
    span = raw.get("span")
    if span is not None and (len(span) != 2 or vid is None):
        raise Invalid(where, "gold.span is [start, end] in a named version")
    if span is None and not raw.get("gold_text"):
        raise Invalid(where, "gold needs span or gold_text")
    return Gold(document=raw["document"], version_id=vid,
                span=(int(span[0]), int(span[1])) if span else None,
                gold_text=raw.get("gold_text"))


def corpus_versions(root: Path) -> Callable[[str], str]:
    """Map a corpus-relative file to the version id the server gives its text (the
    content address is the blake3 of the normalized text, so no database is needed)."""
    def of(relative: str) -> str:
        return version_id(normalize((root / relative).read_bytes()))
    return of


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


_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")


def write_svg(table: Sequence[dict[str, Any]], path: Path, *,
              title: str = "Delivery vs wrong-answer rate") -> Path:
    """Plot delivery rate (x) against wrong-answer rate (y), one polyline per τ, points
    ordered by θ_rel. Hand-made SVG: no plotting dependency."""
    w, h, left, right, top, bottom = 560, 420, 60, 150, 40, 50
    pw, ph = w - left - right, h - top - bottom

    def x(v: float) -> float:
        return round(left + v * pw, 2)

    def y(v: float) -> float:
        return round(top + (1 - v) * ph, 2)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">',
             f'<title>{escape(title)}</title>',
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>',
             f'<text x="{left + pw / 2}" y="{h - 12}" text-anchor="middle">delivery rate '
             f'(delivered / items)</text>',
             f'<text x="16" y="{top + ph / 2}" text-anchor="middle" transform="rotate(-90 16 '
             f'{top + ph / 2})">wrong-answer rate (wrong / delivered)</text>',
             f'<text x="{left}" y="{top - 14}">{escape(title)}</text>']
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts += [f'<text x="{x(t)}" y="{top + ph + 16}" text-anchor="middle">{t:g}</text>',
                  f'<text x="{left - 6}" y="{y(t) + 4}" text-anchor="end">{t:g}</text>',
                  f'<line x1="{x(t)}" y1="{top}" x2="{x(t)}" y2="{top + ph}" stroke="#ddd"/>',
                  f'<line x1="{left}" y1="{y(t)}" x2="{left + pw}" y2="{y(t)}" stroke="#ddd"/>']
    taus = sorted({row["tau"] for row in table})
    for i, tau in enumerate(taus):
        colour = _COLOURS[i % len(_COLOURS)]
        rows = sorted((r for r in table if r["tau"] == tau), key=lambda r: r["theta_rel"])
        points = " ".join(f'{x(r["delivery_rate"])},{y(r["wrong_answer_rate"])}' for r in rows)
        parts.append(f'<polyline data-tau="{tau:g}" points="{points}" fill="none" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.extend(f'<circle cx="{x(r["delivery_rate"])}" cy="{y(r["wrong_answer_rate"])}" '
                     f'r="2.5" fill="{colour}"><title>θ_rel {r["theta_rel"]:g}, τ {tau:g}: '
                     f'delivery {r["delivery_rate"]:.2f}, wrong {r["wrong_answer_rate"]:.2f}'
                     f'</title></circle>' for r in rows)
        ly = top + 14 + 18 * i
        parts.append(f'<line x1="{left + pw + 12}" y1="{ly}" x2="{left + pw + 32}" y2="{ly}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{left + pw + 38}" y="{ly + 4}">τ = {tau:g}</text>')
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path
