"""Fit the cross-language scope rule on the fit half of the law question set.

    STICHTAG_DATA_DIR=… python eval/fit_crosslang.py --tenant law [--write] [--report R.json]

The tenant holds the whole law corpus (manifest replayed, ``index sync`` done; see
docs/evaluation.md, "Questions across languages"). Every English item of
``eval/law_questions/fit.jsonl`` is assessed by the real pipeline
(``AnswerService.relevance``, then the candidates in another language as the answer
service finds them), and so is every English fitting item (even position, as
eval/fit_defaults.py splits them) of the hand-written sets of eval/; its semantic
evidence is the best cosine among the German candidates
(``stichtag.domain.crosslang.best_across``). Then:

- ``CROSS_SCOPE``: the lowest cosine at which at least ``--refusal`` (0.95) of the
  off-corpus fitting items (subjects the corpus lacks) are refused by the scope rule alone
  (a question about a law on a date it is not in force has its subject in the corpus: no
  cosine tells it from an answerable one);
- ``CROSS_RELEVANCE``: a logistic model of P(answerable) on that cosine, fitted on the
  items passing that threshold (``fit_relevance``), gated by the tenant's θ_rel.

``--write`` rewrites app/stichtag/services/crosslang_fit.py. The test half is never read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "app"))

from stichtag.bootstrap import bootstrap  # noqa: E402
from stichtag.cli.tenants import operator  # noqa: E402
from stichtag.config import load_settings  # noqa: E402
from stichtag.domain.crosslang import best_across  # noqa: E402
from stichtag.domain.language import EN, detect  # noqa: E402
from stichtag.domain.relevance import RelevanceModel, fit_relevance  # noqa: E402
from stichtag.domain.timeutil import parse_time  # noqa: E402
from stichtag.services.defaults import THETA_REL  # noqa: E402

FIT = REPO / "eval" / "law_questions" / "fit.jsonl"
EVAL_SETS = ("asof_de_insurance.jsonl", "out_of_scope_de.jsonl", "not_yet_in_force_de.jsonl")
OUT = REPO / "app" / "stichtag" / "services" / "crosslang_fit.py"


def fitting_items() -> list[dict[str, Any]]:
    """The English items of the law fit half, and the English fitting items (even
    positions, as eval/fit_defaults.py splits them) of the hand-written sets of eval/: an
    unanswerable one there is out of scope by subject (category ``off-corpus``)."""
    items = [json.loads(line) for line in FIT.read_text(encoding="utf-8").splitlines()]
    for name in EVAL_SETS:
        lines = (REPO / "eval" / name).read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            raw = json.loads(line)
            if i % 2 == 0 and detect(raw["question"]) == EN:
                items.append({**raw, "lang": "en", "known_at": raw.get("known_at", "2026-12-01"),
                              "category": "section" if raw["answerable"] else "off-corpus"})
    return [i for i in items if i["lang"] == "en"]


def score(tenant: str) -> list[dict[str, object]]:
    """(id, answerable, best cosine across languages) of every English fitting item, from
    an unrecorded answer run (so the candidates are those the answer service judges: it
    widens the search for candidates in another language itself). ``best`` is None where
    the lexical gates decided (no candidate in another language was looked at)."""
    svc = bootstrap(load_settings(), fail_fast=True)
    try:
        who = operator(svc, tenant)
        assert svc.answers is not None
        rows = []
        for item in fitting_items():
            result = svc.answers.answer(
                who, item["question"], record=False,
                valid_at=parse_time(item["valid_at"], field="valid_at", tz=who.time_zone),
                known_at=parse_time(item["known_at"], field="known_at", tz=who.time_zone))
            crossing = result.assessment.crossing
            raw = [c.rerank for c in result.assessment.candidates]
            across = crossing is not None and bool(crossing.others())
            logits = [c.cross if c.cross is not None else math.nan
                      for c in result.assessment.candidates]
            rows.append({"id": item["id"], "answerable": item["answerable"],
                         "category": item["category"], "across": across,
                         "best": best_across(crossing, raw) if crossing else None,
                         "best_cross": (best_across(crossing, logits)
                                        if crossing and svc.answers.cross else None),
                         "cross_encoder": (svc.answers.cross.model_hash
                                           if svc.answers.cross else None),
                         "cosines": [raw[i] for i in crossing.others()] if crossing else []})
        return rows
    finally:
        svc.close()


def fit(rows: list[dict[str, object]], refusal: float) -> tuple[float, RelevanceModel, str]:
    rows = [r for r in rows if r["across"]]  # the rule decides only these
    # scope is about the subject: its threshold is fitted against the questions whose
    # subject the corpus lacks (off-corpus); a question about a law on a date it is not in
    # force has its subject in the corpus, and a cosine cannot tell it from an answerable one
    unanswerable = sorted(float(r["best"]) if r["best"] is not None else -1.0  # type: ignore[arg-type]
                          for r in rows if r["category"] == "off-corpus")
    # the lowest threshold refusing at least `refusal` of them: above the k-th smallest
    k = min(len(unanswerable) - 1, int(refusal * len(unanswerable) + 0.999999) - 1)
    theta = round(unanswerable[k] + 1e-6, 6)
    passing = [r for r in rows if r["best"] is not None and float(r["best"]) >= theta]  # type: ignore[arg-type]
    # with the cross-encoder's logits (every passing row has one), the model reads them too
    cross = {r.get("cross_encoder") for r in passing}
    names: tuple[str, ...] = ("rerank",)
    if len(cross) == 1 and None not in cross and all(
            r.get("best_cross") is not None for r in passing):
        names = ("rerank", "cross")

    def values(r: dict[str, object]) -> dict[str, float]:
        out = {"rerank": float(r["best"])}  # type: ignore[arg-type]
        if "cross" in names:
            out["cross"] = float(r["best_cross"])  # type: ignore[arg-type]
        return out

    model = fit_relevance([values(r) for r in passing],
                          [bool(r["answerable"]) for r in passing], names=names,
                          cross_encoder=next(iter(cross)) if "cross" in names else None)  # type: ignore[arg-type]

    def delivered(r: dict[str, object]) -> bool:
        best = r["best"]
        return best is not None and float(best) >= theta and model.apply(  # type: ignore[arg-type]
            values(r)) >= THETA_REL

    answerable = [r for r in rows if r["answerable"]]
    unanswer = [r for r in rows if not r["answerable"]]
    off = [r for r in rows if r["category"] == "off-corpus"]
    d = sum(map(delivered, answerable)) / len(answerable)
    f = sum(not delivered(r) for r in unanswer) / len(unanswer)
    o = sum(not delivered(r) for r in off) / len(off)
    why = (f"fitted by eval/fit_crosslang.py on the English items of the law question set's "
           f"fit half ({len(answerable)} answerable, {len(unanswer)} unanswerable; sha256 "
           f"{hashlib.sha256(FIT.read_bytes()).hexdigest()[:12]}): CROSS_SCOPE {theta}, the "
           f"lowest cosine refusing >= {refusal:.0%} of the off-corpus items; on the fit "
           f"half with theta_rel {THETA_REL:.4f}: {d:.1%} of answerable delivered, {f:.1%} "
           f"of unanswerable refused ({o:.1%} of off-corpus)")
    return theta, model, why


def write(theta: float, model: RelevanceModel, why: str) -> None:
    raw = model.to_dict()
    lines = [
        '"""The fitted values of the cross-language scope rule (``stichtag.domain.crosslang``).',
        "",
        "Written by ``eval/fit_crosslang.py`` on the fit half of eval/law_questions; do not "
        "edit by",
        'hand — rerun the script (docs/evaluation.md, "Questions across languages").',
        '"""', "", "from __future__ import annotations", "",
        f"CROSS_SCOPE = {theta!r}",
        "CROSS_RELEVANCE: dict[str, object] = " + json.dumps(raw, indent=4),
        "RATIONALE = (",
        *[f"    {json.dumps(why[i:i + 80], ensure_ascii=False)}" for i in range(0, len(why), 80)],
        ")", ""]
    OUT.write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tenant", default="law")
    parser.add_argument("--refusal", type=float, default=0.95)
    parser.add_argument("--report", type=Path)
    parser.add_argument("--from-report", type=Path)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    rows = (json.loads(args.from_report.read_text()) if args.from_report
            else score(args.tenant))
    if args.report:
        args.report.write_text(json.dumps(rows, indent=1))
    theta, model, why = fit(rows, args.refusal)
    print(why)
    print(json.dumps(model.to_dict()))
    if args.write:
        write(theta, model, why)


if __name__ == "__main__":
    main()
