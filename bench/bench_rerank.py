# ruff: noqa: E402
# E402: the repository goes on sys.path before app is imported (scripts run from bench/).
"""Reranker quality and speed: today's cosine vs the trained cross-encoder (float, int8).

    .venv/bin/python bench/bench_rerank.py --model .data/train/reranker/model/e5-small-rerank \\
        [--int8 DIR] [--models-dir .data/models] [--candidates 8] [--limit 0] [--threads 1]

Three held-out sets, none of them trained on (see app/stichtag/training/data.py):

* **CLAPnq test half** (the split of eval/clapnq_to_eval.py): every CLAPnq document is
  cut into the server's passages; for each test question the ``--candidates`` passages
  nearest by e5 cosine are its candidates (as retrieval hands them to the reranker) and
  its score is the best candidate's. Answerable vs unanswerable is the eval's label.
* **XQuAD-de held-out articles**: each question against its article's passages. The
  "unanswerable" twin of a question is the same question with the passages that hold
  the answer removed (a corpus that lacks the answer); its score is the best of the rest.
* **Law held-out sections**: each templated question against its section's first passage
  and three other sections'; the twin drops the positive.

Columns: ROC AUC of the best score, answerable vs unanswerable; delivery (answerable
with score >= theta) at the theta that refuses 95 % of the unanswerable; refusal at the
theta that delivers 80 %; pairwise: P(positive passage > negative passage of the same
question); pairs/s of scoring (cosine: query embedding + dot products, passages stored).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from stichtag.domain.calibration import roc_auc
from stichtag.models.embedder import OnnxEmbedder
from stichtag.models.reranker import OnnxCrossEncoder
from stichtag.training import data

Scorer = Callable[[str, Sequence[str]], list[float]]


@dataclass(frozen=True)
class Question:
    """One question, its candidate passages and which of them answer it."""

    text: str
    candidates: list[str]
    positive: list[bool]
    answerable: bool


def say(message: str) -> None:
    """Progress on stderr; stdout holds only the tables."""
    print(f"# {message}", file=sys.stderr, flush=True)


def clapnq_set(embedder: OnnxEmbedder, k: int, limit: int, *, half: int = 1) -> list[Question]:
    """CLAPnq questions of one half (1 = test) with their top-k passages by e5 cosine."""
    questions = data.clapnq_questions()
    corpus: list[str] = []
    seen: set[str] = set()
    for q in questions:
        for body in q.passages:
            if body not in seen:
                seen.add(body)
                corpus.append(body)
    say(f"embedding {len(corpus)} CLAPnq passages (e5 int8, as stored at ingest)")
    vectors = embedder.embed_passages(corpus)
    test = [q for q in questions if q.half == half]
    if limit:  # keep both labels: half of the limit from each
        test = ([q for q in test if q.answerable][: (limit + 1) // 2]
                + [q for q in test if not q.answerable][: limit // 2])
    out: list[Question] = []
    for q in test:
        (qvec,) = embedder.embed_queries([q.question])
        top = np.argsort(-(vectors @ qvec), kind="stable")[:k]
        gold = {b for b, p in zip(q.passages, q.positive, strict=True) if p}
        cands = [corpus[i] for i in top]
        out.append(Question(q.question, cands, [c in gold for c in cands], q.answerable))
    return out


def fit_two(x: np.ndarray, y: np.ndarray, *, l2: float = 1e-3, steps: int = 50) -> np.ndarray:
    """Logistic regression on two standardized features by Newton's method: weights
    ``[w1, w2, b]`` (a sketch of a two-signal calibration, not the server's)."""
    design = np.column_stack([x, np.ones(len(x))])
    w = np.zeros(design.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-design @ w))
        grad = design.T @ (p - y) + l2 * np.r_[w[:-1], 0.0]
        hess = (design * (p * (1 - p))[:, None]).T @ design + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def combined_rows(embedder: OnnxEmbedder, scorers: dict[str, Scorer], k: int,
                  test: Sequence[Question], test_scores: dict[str, list[list[float]]]
                  ) -> dict[str, dict[str, float]]:
    """CE best + cosine best, combined by a logistic fit on the CLAPnq calibration half."""
    calibration = clapnq_set(embedder, k, 0, half=0)
    cos_label = next(iter(scorers))
    cal = {label: [max(s) for s in run(calibration, scorer)[0]]
           for label, scorer in scorers.items()}
    y = np.array([q.answerable for q in calibration], dtype=np.float64)
    rows: dict[str, dict[str, float]] = {}
    for label in list(scorers)[1:]:
        x_cal = np.column_stack([cal[label], cal[cos_label]])
        mean, std = x_cal.mean(axis=0), x_cal.std(axis=0) + 1e-12
        w = fit_two((x_cal - mean) / std, y)
        x_test = np.column_stack([[max(s) for s in test_scores[label]],
                                  [max(s) for s in test_scores[cos_label]]])
        z = ((x_test - mean) / std) @ w[:2] + w[2]
        fake = [[float(v)] for v in z]
        single = [Question(q.text, q.candidates[:1], q.positive[:1], q.answerable) for q in test]
        m = metrics(single, fake, twins=False)
        m["pairwise"] = float("nan")
        rows[f"{label} + cosine (logistic, fit on calibration half)"] = {**m,
                                                                         "pairs_per_s": 0.0}
    return rows


def xquad_set(limit: int) -> list[Question]:
    """XQuAD-de held-out questions against their article's passages."""
    qs = data.xquad_questions("de", "held-out")
    if limit:
        qs = qs[:limit]
    return [Question(q.question, q.passages, q.positive, True) for q in qs]


def law_set(limit: int) -> list[Question]:
    """Law held-out questions: positive first passage plus three other sections."""
    groups: dict[str, list[data.Pair]] = {}
    for pair in data.law_pairs("held-out"):
        groups.setdefault(pair.group, []).append(pair)
    out = [Question(ps[0].question, [p.passage for p in ps], [bool(p.label) for p in ps], True)
           for ps in groups.values()]
    return out[:limit] if limit else out


def cosine_scorer(embedder: OnnxEmbedder) -> Scorer:
    """Today's default: cosine of the query vector with stored passage vectors."""
    cache: dict[str, np.ndarray] = {}

    def vectors(passages: Sequence[str]) -> np.ndarray:
        missing = [p for p in dict.fromkeys(passages) if p not in cache]
        if missing:
            for p, v in zip(missing, embedder.embed_passages(missing), strict=True):
                cache[p] = v
        return np.stack([cache[p] for p in passages])

    def score(query: str, passages: Sequence[str]) -> list[float]:
        (qvec,) = embedder.embed_queries([query])
        return [float(v) for v in vectors(passages) @ qvec]

    score.prepare = vectors  # type: ignore[attr-defined]
    return score


def run(questions: Sequence[Question], scorer: Scorer) -> tuple[list[list[float]], float]:
    """Scores of every candidate and the scoring throughput in pairs/s."""
    n = sum(len(q.candidates) for q in questions)
    started = time.perf_counter()
    scores = [scorer(q.text, q.candidates) for q in questions]
    return scores, n / (time.perf_counter() - started)


def threshold_rates(answerable: Sequence[float], unanswerable: Sequence[float]) -> tuple[
        float, float]:
    """(delivery at 95 % refusal, refusal at 80 % delivery); delivered iff score >= theta."""
    if not len(answerable) or not len(unanswerable):
        return float("nan"), float("nan")
    ans, una = np.sort(np.asarray(answerable)), np.sort(np.asarray(unanswerable))
    thetas = np.unique(np.concatenate([ans, una, [np.inf]]))
    delivered = np.array([(ans >= t).mean() for t in thetas])
    refused = np.array([(una < t).mean() for t in thetas])
    ok = refused >= 0.95
    delivery = float(delivered[ok].max()) if ok.any() else 0.0
    ok = delivered >= 0.80
    refusal = float(refused[ok].max()) if ok.any() else 0.0
    return delivery, refusal


def metrics(questions: Sequence[Question], scores: Sequence[Sequence[float]],
            *, twins: bool) -> dict[str, float]:
    """Gate and ranking figures for one scorer on one set."""
    best_ans: list[float] = []
    best_una: list[float] = []
    wins = total = 0.0
    for q, s in zip(questions, scores, strict=True):
        pos = [v for v, p in zip(s, q.positive, strict=True) if p]
        neg = [v for v, p in zip(s, q.positive, strict=True) if not p]
        if twins:  # the question with and without its answering passages
            best_ans.append(max(s))
            if neg:
                best_una.append(max(neg))
        else:
            (best_ans if q.answerable else best_una).append(max(s))
        for a in pos:
            for b in neg:
                wins += 1.0 if a > b else 0.5 if a == b else 0.0
                total += 1
    labels = [True] * len(best_ans) + [False] * len(best_una)
    delivery, refusal = threshold_rates(best_ans, best_una)
    return {"auc": roc_auc(best_ans + best_una, labels), "delivery_at_95_refusal": delivery,
            "refusal_at_80_delivery": refusal, "pairwise": wins / total if total else float("nan"),
            "questions": float(len(questions))}


def table(name: str, rows: dict[str, dict[str, float]]) -> str:
    """A Markdown table of one set."""
    head = ("| scorer | ROC AUC ans/unans | delivery @95 % refusal | refusal @80 % delivery "
            "| pairwise | pairs/s |\n| --- | --- | --- | --- | --- | --- |")
    lines = [f"### {name} ({int(next(iter(rows.values()))['questions'])} questions)", "", head]
    for label, m in rows.items():
        lines.append(f"| {label} | {m['auc']:.3f} | {m['delivery_at_95_refusal']:.1%} | "
                     f"{m['refusal_at_80_delivery']:.1%} | {m['pairwise']:.3f} | "
                     f"{m['pairs_per_s']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    """Parse arguments, score every set with every scorer, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, help="float cross-encoder dir (none: cosine only)")
    parser.add_argument("--int8", type=Path, help="int8 dir (default: MODEL-int8 if present)")
    parser.add_argument("--models-dir", type=Path, default=REPO / ".data" / "models")
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--limit", type=int, default=0, help="questions per set (0 = all)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sets", default="clapnq,xquad,law")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--combine", action="store_true",
                        help="CLAPnq: also CE + cosine, logistic fit on the calibration half")
    args = parser.parse_args()
    embedder = OnnxEmbedder(args.models_dir / "e5-small", variant="int8", threads=args.threads)
    scorers: dict[str, Scorer] = {"cosine (e5 int8, today's default)": cosine_scorer(embedder)}
    if args.model is not None:
        int8 = args.int8 or args.model.with_name(args.model.name + "-int8")
        scorers["cross-encoder float"] = OnnxCrossEncoder(args.model, threads=args.threads).score
        if int8.is_dir():
            scorers["cross-encoder int8"] = OnnxCrossEncoder(int8, threads=args.threads).score
    builders = {"clapnq": lambda: clapnq_set(embedder, args.candidates, args.limit),
                "xquad": lambda: xquad_set(args.limit), "law": lambda: law_set(args.limit)}
    names = {"clapnq": "CLAPnq test half", "xquad": "XQuAD-de held-out articles",
             "law": "Law held-out sections"}
    results: dict[str, dict[str, dict[str, float]]] = {}
    for key in args.sets.split(","):
        questions = builders[key]()
        rows: dict[str, dict[str, float]] = {}
        kept: dict[str, list[list[float]]] = {}
        for label, scorer in scorers.items():
            if hasattr(scorer, "prepare"):  # passage vectors are stored at ingest: not timed
                scorer.prepare([c for q in questions for c in q.candidates])
            say(f"{names[key]}: {label}")
            scores, rate = run(questions, scorer)
            kept[label] = scores
            rows[label] = {**metrics(questions, scores, twins=key != "clapnq"),
                           "pairs_per_s": rate}
        if key == "clapnq" and args.combine and len(scorers) > 1:
            say("CLAPnq calibration half for the combination")
            two = dict(list(scorers.items())[:2])  # cosine and the float cross-encoder
            rows.update(combined_rows(embedder, two, args.candidates, questions, kept))
        results[key] = rows
        print(table(names[key], rows) + "\n", flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
