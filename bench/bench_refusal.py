"""Refusing what the evidence does not carry: the gates on every evaluation set, side by side.

    .venv/bin/python bench/bench_refusal.py DATA_DIR [--markdown]

DATA_DIR is the data directory of ``eval/fit_defaults.py`` (its embedded corpora are
reused; missing ones are loaded). For each set — law as-of answerable, law out of scope,
law not yet in force, the CLAPnq *test* half, XQuAD-de and XQuAD-en held-out articles —
the table gives the delivery on answerable and the abstention on unanswerable questions
at the built-in thresholds, and the ROC AUC, for three variants in the same run:

- **cosine** — today's gate before this work: the raw e5 cosine of the best passage
  against 0.80 (identity calibration), no scope gate;
- **combined** — the built-in relevance model against the built-in θ_rel;
- **combined + scope** — what a fresh tenant runs now.

Then the p50/p95 of the stage the new gates add to /v1/answer (``timings_ms.assess``:
salience, scope support and features) and of the whole answer, over real answer runs of
the law set. Every item is assessed through ``AnswerService.relevance``, the path gate 1
and the scope gate see.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "eval"))

from fit_defaults import (  # noqa: E402
    Item,
    Scored,
    law_items,
    load_clapnq,
    load_law,
    load_xquad,
    score,
)

from stichtag.bootstrap import bootstrap  # noqa: E402
from stichtag.config import Settings  # noqa: E402
from stichtag.domain.calibration import roc_auc  # noqa: E402
from stichtag.models.build import build_models  # noqa: E402
from stichtag.services.thresholds import DEFAULTS  # noqa: E402

OLD_THETA = 0.80


def clapnq_test(work: Path, now: datetime) -> list[Item]:
    """The CLAPnq test half (never used for fitting)."""
    return [Item(source="clapnq test", id=raw["id"], question=raw["question"], valid_at=now,
                 known_at=now, answerable=raw["answerable"], fit=False)
            for raw in map(json.loads, (work / "clapnq" / "test.jsonl").read_text(
                encoding="utf-8").splitlines())]


def variants(r: Scored) -> dict[str, bool]:
    """Delivered under each variant."""
    model, t = DEFAULTS.relevance, DEFAULTS
    combined = model.apply(r.features) >= t.theta_rel
    return {"cosine": r.features["rerank"] >= OLD_THETA, "combined": combined,
            "combined + scope": combined and r.scope >= t.theta_scope}


def table(groups: dict[str, list[Scored]]) -> list[list[str]]:
    """Rows: set, n, then per variant delivery/abstention, and the two AUCs."""
    rows = []
    for name, group in groups.items():
        pos = [r for r in group if r.item.answerable]
        neg = [r for r in group if not r.item.answerable]
        cells = [name, f"{len(pos)}/{len(neg)}"]
        for variant in ("cosine", "combined", "combined + scope"):
            d = (sum(variants(r)[variant] for r in pos) / len(pos)) if pos else None
            a = (sum(not variants(r)[variant] for r in neg) / len(neg)) if neg else None
            cells.append(f"{_pct(d)} / {_pct(a)}")
        if pos and neg:
            labels = [r.item.answerable for r in group]
            cells.append(f"{roc_auc([r.features['rerank'] for r in group], labels):.3f}")
            combined = [DEFAULTS.relevance.apply(r.features) for r in group]
            cells.append(f"{roc_auc(combined, labels):.3f}")
        else:
            cells += ["—", "—"]
        rows.append(cells)
    return rows


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def _percentile(xs: Sequence[float], q: float) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    """Assess every set, print the table and the latency of the new stage."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    build_models(args.data / "models")
    svc = bootstrap(Settings(data_dir=args.data))
    now = datetime.now(UTC)
    groups: dict[str, list[Scored]] = {}
    assess_ms: list[float] = []
    total_ms: list[float] = []
    try:
        law = load_law(svc)
        svc.indexer.catch_up(law.tenant_id)
        items = list(law_items(now))
        scored = score(svc, law, items)
        by_set: dict[str, list[Scored]] = {"law as-of": [], "law out of scope": [],
                                           "law not yet in force": []}
        names = {"asof": "law as-of", "oos": "law out of scope", "nyif": "law not yet in force"}
        for item, s in zip(items, scored, strict=True):
            by_set[names[_law_set(item.id)]].append(s)
        groups.update(by_set)
        assert svc.answers is not None
        for item in items:
            r = svc.answers.answer(law, item.question, valid_at=item.valid_at,
                                   known_at=item.known_at, record=False)
            assess_ms.append(r.timings_ms.get("assess", 0.0))
            total_ms.append(r.timings_ms["total"])
        clapnq, _ = load_clapnq(svc, args.data, now)
        svc.indexer.catch_up(clapnq.tenant_id)
        groups["CLAPnq test half"] = score(svc, clapnq, clapnq_test(args.data, now))
        for lang in ("de", "en"):
            who, xitems = load_xquad(svc, lang, now)
            svc.indexer.catch_up(who.tenant_id)
            groups[f"XQuAD-{lang} held-out articles"] = score(
                svc, who, [i for i in xitems if not i.fit])
    finally:
        svc.close()
    head = ["set", "answerable/unanswerable", "cosine: delivery / abstention",
            "combined", "combined + scope", "AUC cosine", "AUC combined"]
    rows = table(groups)
    print(f"built-in thresholds: theta_rel {DEFAULTS.theta_rel:.4f} on the combined score, "
          f"theta_scope {DEFAULTS.theta_scope:.4f}; 'cosine' = raw cosine >= {OLD_THETA}")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        for row in [head, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    print(f"\nassess stage (salience, scope, features) over {len(assess_ms)} law answers: "
          f"p50 {statistics.median(assess_ms):.1f} ms, p95 {_percentile(assess_ms, 0.95):.1f} ms;"
          f" whole answer p50 {statistics.median(total_ms):.1f} ms, "
          f"p95 {_percentile(total_ms, 0.95):.1f} ms")


def _law_set(item_id: str) -> str:
    """Which eval/ file an item id came from (their id prefixes)."""
    for name, key in (("out_of_scope_de.jsonl", "oos"), ("not_yet_in_force_de.jsonl", "nyif")):
        ids = {json.loads(line)["id"] for line in
               (REPO / "eval" / name).read_text(encoding="utf-8").splitlines()}
        if item_id in ids:
            return key
    return "asof"


if __name__ == "__main__":
    main()
