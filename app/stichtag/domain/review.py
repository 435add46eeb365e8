"""Support review (issue 10): reproducible samples of answer sentence-citation pairs, and
reports of the verdicts people record on them. Pure rules, no I/O.

Population: every (answer run, answer sentence, citation) of a delivered run (status
``answered`` or ``partial``; abstained runs deliver no sentence). The service restricts it
to the caller's tenant and clearance before it reaches this module.

Sampling: each pair gets the rank key SHA-256("<seed>:<run_id>:<sentence>:<citation>");
within each stratum the ``n`` pairs with the smallest keys are drawn (every pair when the
stratum has fewer). Ordering by a keyed hash is a seeded random permutation that does not
depend on the order rows come from the database, and a pair keeps its key when the
population grows, so a later sample with the same seed keeps the earlier pairs that are
still among the n smallest.

Reports: see :func:`report` for the two denominators and the sentence rule.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from stichtag.domain.errors import Invalid

VERDICTS = ("full", "partial", "none", "contradicts")
SUPPORTING = ("full", "partial")
"""Verdicts that make a (question, cited passage) pair a positive reranker label."""
DELIVERED = ("answered", "partial")
STRATA = ("document", "generator", "coverage", "run_month", "asof_year")
# Coverage bands by the run's coverage c: [0, 0.5), [0.5, 0.8), [0.8, 1), and c = 1.
COVERAGE_CUTS = (0.5, 0.8, 1.0)
MAX_N = 500  # pairs per stratum
MAX_ITEMS = 2000  # pairs per sample
MAX_NOTE = 2000  # characters of a verdict note
Z95 = 1.959963984540054  # two-sided 95 % normal quantile (Wilson score interval)


@dataclass(frozen=True, kw_only=True, slots=True)
class Pair:
    """One sentence-citation pair of a delivered answer run."""

    run_id: str
    sentence: int
    citation: int
    document: str
    version_id: str
    start: int
    end: int
    generator: str
    coverage: float | None
    run_at: datetime
    valid_at: str = ""
    trace: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class Item:
    """A drawn pair: its number in the sample (1-based) and its stratum."""

    item: int
    stratum: str
    pair: Pair


@dataclass(frozen=True, kw_only=True, slots=True)
class Drawn:
    """A sample: the items in order and the population size of every stratum."""

    items: tuple[Item, ...]
    population: dict[str, int]


@dataclass(frozen=True, kw_only=True, slots=True)
class VerdictRecord:
    """One recorded verdict (rows are never changed; later ones supersede)."""

    verdict_id: str
    item: int
    verdict: str
    supersedes: str | None
    created_at: datetime
    note: str | None = None
    reviewer: str = ""


def parse_strata(raw: Sequence[str]) -> tuple[str, ...]:
    """Validate a strata spec: distinct names from STRATA; empty means one stratum."""
    out: list[str] = []
    for name in raw:
        if name not in STRATA:
            raise Invalid("strata", f"unknown stratum {name!r}; use {', '.join(STRATA)}")
        if name in out:
            raise Invalid("strata", f"stratum {name!r} given twice")
        out.append(name)
    return tuple(out)


def check_n(n: int) -> int:
    """The per-stratum sample size must lie in 1..MAX_N."""
    if not 1 <= n <= MAX_N:
        raise Invalid("n", f"must be between 1 and {MAX_N}")
    return n


def check_verdict(verdict: str, note: str | None) -> None:
    """A verdict level from VERDICTS and a note of at most MAX_NOTE characters."""
    if verdict not in VERDICTS:
        raise Invalid("verdict", f"one of {', '.join(VERDICTS)}")
    if note is not None and len(note) > MAX_NOTE:
        raise Invalid("note", f"at most {MAX_NOTE} characters")


def coverage_band(coverage: float | None) -> str:
    """The band label of a run's coverage (cut points COVERAGE_CUTS)."""
    c = 0.0 if coverage is None else coverage
    if c >= COVERAGE_CUTS[2]:
        return "coverage=1"
    if c >= COVERAGE_CUTS[1]:
        return "coverage [0.8, 1)"
    if c >= COVERAGE_CUTS[0]:
        return "coverage [0.5, 0.8)"
    return "coverage [0, 0.5)"


def stratum_of(pair: Pair, strata: Sequence[str]) -> str:
    """The stratum label: the chosen dimensions joined by ' | ' ('all' without strata).

    ``run_month`` is the UTC calendar month (YYYY-MM) of the run's recording time;
    ``asof_year`` the year of the run's Stichtag (its recorded ``valid_at``, as written).
    """
    parts: list[str] = []
    for name in strata:
        if name == "document":
            parts.append(f"document={pair.document}")
        elif name == "generator":
            parts.append(f"generator={pair.generator}")
        elif name == "coverage":
            parts.append(coverage_band(pair.coverage))
        elif name == "run_month":
            parts.append(f"run_month={pair.run_at.astimezone(UTC):%Y-%m}")
        elif name == "asof_year":
            parts.append(f"asof_year={pair.valid_at[:4] or '?'}")
    return " | ".join(parts) or "all"


def rank_key(seed: int, pair: Pair) -> bytes:
    """The seeded sampling key of a pair (smaller keys are drawn first)."""
    return hashlib.sha256(
        f"{seed}:{pair.run_id}:{pair.sentence}:{pair.citation}".encode()).digest()


def draw(population: Iterable[Pair], *, seed: int, strata: Sequence[str], n: int) -> Drawn:
    """Draw up to ``n`` pairs per stratum, deterministically for a seed.

    Items are numbered 1.. in the order (stratum label, rank key); the result is the same
    for any order of ``population``.
    """
    check_n(n)
    groups: dict[str, list[Pair]] = defaultdict(list)
    for pair in population:
        groups[stratum_of(pair, strata)].append(pair)
    chosen: list[tuple[str, Pair]] = []
    for label in sorted(groups):
        ranked = sorted(groups[label], key=lambda p: (rank_key(seed, p), p.run_id, p.sentence,
                                                      p.citation))
        chosen.extend((label, p) for p in ranked[:n])
    if len(chosen) > MAX_ITEMS:
        raise Invalid("n", f"the sample would hold {len(chosen)} pairs; at most {MAX_ITEMS} "
                           "(use fewer strata or a smaller n)")
    items = tuple(Item(item=i + 1, stratum=label, pair=p) for i, (label, p) in enumerate(chosen))
    return Drawn(items=items, population={k: len(v) for k, v in sorted(groups.items())})


def pairs_of_run(run_id: str, run_at: datetime, record: Mapping[str, Any]) -> list[Pair]:
    """The sentence-citation pairs of a recorded answer run (none unless delivered).

    The trace names the evidence sentence (its id, 1-based rank among the run's evidence
    and score) and the retrieved passage that held it (1-based rank after reranking, with
    its fused, rerank and calibrated scores).
    """
    result = record.get("result") or {}
    if record.get("kind") != "answer" or result.get("status") not in DELIVERED:
        return []
    candidates = list(record.get("candidates") or [])
    order = sorted(range(len(candidates)),
                   key=lambda i: (-(candidates[i].get("calibrated") or 0.0), i))
    passage_rank = {i: r + 1 for r, i in enumerate(order)}
    evidence = list(record.get("evidence") or [])
    generator = str((record.get("request") or {}).get("generator") or "")
    out: list[Pair] = []
    for s_no, sentence in enumerate(result.get("sentences") or []):
        for c_no, cit in enumerate(sentence.get("citations") or []):
            vid, start, end = cit["version_id"], int(cit["start"]), int(cit["end"])
            ev_no = next((i for i, e in enumerate(evidence) if e["version_id"] == vid
                          and e["start"] == start and e["end"] == end), None)
            cand_no = next((i for i, c in enumerate(candidates) if c["version_id"] == vid
                            and c["start"] <= start and end <= c["end"]), None)
            cand = candidates[cand_no] if cand_no is not None else {}
            ev = evidence[ev_no] if ev_no is not None else {}
            trace = {"evidence_id": ev.get("eid"),
                     "evidence_rank": ev_no + 1 if ev_no is not None else None,
                     "evidence_score": ev.get("score"),
                     "passage_rank": passage_rank.get(cand_no) if cand_no is not None else None,
                     "fused": cand.get("fused"), "rerank": cand.get("rerank"),
                     "calibrated": cand.get("calibrated")}
            out.append(Pair(run_id=run_id, sentence=s_no, citation=c_no,
                            document=str(cand.get("document") or ""), version_id=vid,
                            start=start, end=end, generator=generator,
                            coverage=result.get("coverage"), run_at=run_at,
                            valid_at=str((record.get("as_of") or {}).get("valid_at") or ""),
                            trace=trace))
    return out


def current_verdicts(verdicts: Iterable[VerdictRecord]) -> dict[int, VerdictRecord]:
    """Per item, the latest verdict that no other verdict supersedes."""
    rows = list(verdicts)
    superseded = {v.supersedes for v in rows if v.supersedes is not None}
    out: dict[int, VerdictRecord] = {}
    for v in sorted(rows, key=lambda v: (v.created_at, v.verdict_id)):
        if v.verdict_id not in superseded:
            out[v.item] = v
    return out


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval for a binomial proportion (None without trials)."""
    if trials <= 0:
        return None
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


def _rate(supported: int, reviewed: int, unit: str) -> dict[str, Any]:
    return {"supported": supported, "reviewed": reviewed,
            "rate": round(supported / reviewed, 4) if reviewed else None,
            "ci95": list(ci) if (ci := wilson(supported, reviewed)) else None,
            "statement": f"{supported} of {reviewed} {unit} fully supported"}


def sentence_supported(levels: Sequence[str | None]) -> bool | None:
    """The sentence rule over the current verdicts of a sentence's sampled pairs.

    None (unreviewed) while any pair lacks a verdict; otherwise fully supported iff at
    least one pair is ``full`` and none is ``contradicts``.
    """
    if any(level is None for level in levels):
        return None
    return "full" in levels and "contradicts" not in levels


def _stratum_report(label: str, items: Sequence[Item],
                    current: Mapping[int, VerdictRecord]) -> dict[str, Any]:
    levels = Counter(current[i.item].verdict for i in items if i.item in current)
    reviewed = sum(levels.values())
    sentences: dict[tuple[str, int], list[str | None]] = defaultdict(list)
    for i in items:
        v = current.get(i.item)
        sentences[(i.pair.run_id, i.pair.sentence)].append(v.verdict if v else None)
    judged = [sentence_supported(levels_) for levels_ in sentences.values()]
    s_reviewed = sum(1 for j in judged if j is not None)
    return {
        "stratum": label, "pairs_total": len(items), "pairs_reviewed": reviewed,
        "pairs_unreviewed": len(items) - reviewed,
        "verdicts": {level: levels.get(level, 0) for level in VERDICTS},
        "pairs": _rate(levels.get("full", 0), reviewed, "citation pairs"),
        "sentences_total": len(sentences), "sentences_unreviewed": len(sentences) - s_reviewed,
        "sentences": _rate(sum(1 for j in judged if j), s_reviewed, "sentences"),
    }


RULES = {
    "pairs": "per citation pair: supported = current verdict 'full'; denominator = pairs "
             "with a current verdict",
    "sentences": "per sentence (run, sentence) over its sampled pairs in scope: reviewed "
                 "when every such pair has a current verdict; fully supported when at least "
                 "one is 'full' and none is 'contradicts'; denominator = reviewed sentences",
    "current": "the current verdict of an item is the latest one no other verdict supersedes",
    "ci95": "Wilson score interval, z = 1.96",
}


def report(items: Sequence[Item], verdicts: Iterable[VerdictRecord]) -> dict[str, Any]:
    """Support rates per stratum and overall, verdict counts, and the failed pairs."""
    current = current_verdicts(verdicts)
    by_stratum: dict[str, list[Item]] = defaultdict(list)
    for i in items:
        by_stratum[i.stratum].append(i)
    failures = []
    for i in items:
        v = current.get(i.item)
        if v is not None and v.verdict in ("none", "contradicts"):
            p = i.pair
            failures.append({
                "item": i.item, "stratum": i.stratum, "verdict": v.verdict, "note": v.note,
                "verdict_id": v.verdict_id, "run_id": p.run_id, "sentence": p.sentence,
                "citation": p.citation, "document": p.document, "version_id": p.version_id,
                "start": p.start, "end": p.end, "generator": p.generator, **dict(p.trace)})
    return {
        "overall": _stratum_report("overall", items, current),
        "strata": [_stratum_report(k, v, current) for k, v in sorted(by_stratum.items())],
        "failures": failures,
        "rules": RULES,
    }
