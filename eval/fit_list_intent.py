"""Fit the learned rule that tells list questions from content questions, by meaning.

    python eval/fit_list_intent.py [--write]

A question is embedded as a query with the server's e5 model (int8, .data/models, no
network) and scored by two linear models over its vector (a logistic model: the vector is
unit length, so a score is a scaled cosine with the weight vector, plus a bias):

- **intent**: list question (about the collection and its history) versus content;
- **kind**: among list questions, the versions of one document versus documents on a topic.

Fitted on:

- eval/list_intent/fit.jsonl, written by hand: list questions in many phrasings and
  content questions that use the list words ("Welche Fassung der DeckRV galt 2019?",
  "Which list of risks must the insurer keep?"), grouped by template;
- content questions from real sets: eval/law_questions/fit.jsonl, XQuAD de/en without its
  12 held-out articles (as eval/fit_defaults.py holds them out), and the half of CLAPnq
  whose ids hash even (sha256).

The decision threshold comes from grouped 5-fold cross-validation on the fit set (a
template, a law section, an article or a CLAPnq item stays in one fold): the lowest score
at which at most ``MAX_FALSE`` of the fit set's content questions are taken for lists,
raised by ``MARGIN`` (when unsure, a question is about content). The
models are then refitted on the whole fit set. ``--write`` rewrites
app/stichtag/domain/list_intent_fit.py.

It also measures, without fitting on them: eval/list_intent/test.jsonl,
eval/law_questions/test.jsonl, XQuAD's held-out articles and CLAPnq's odd half.

    python eval/fit_list_intent.py --external

only measures the committed rule on ../shared/eval/law-questions-external (its questions,
nothing else; every one is a content question): how many it takes for lists. That set is
never fitted or tuned on.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "app"))

from stichtag.domain.list_intent import subject_words  # noqa: E402
from stichtag.domain.listing import VERSIONS, list_question  # noqa: E402
from stichtag.models.embedder import OnnxEmbedder  # noqa: E402

HERE = REPO / "eval" / "list_intent"
LAW = REPO / "eval" / "law_questions"
SHARED = REPO.parent / "shared" / "eval"
if not SHARED.is_dir():  # a worktree beside the main checkout
    SHARED = Path("/work/shared/eval")
MODELS = REPO / ".data" / "models" / "e5-small"
OUT = REPO / "app" / "stichtag" / "domain" / "list_intent_fit.py"
HELD_OUT = 12  # XQuAD articles held out, as eval/fit_defaults.py
FOLDS = 5
MAX_FALSE = 0.01  # share of content questions taken for lists out of fold: half the bound
MARGIN = 0.5  # logit units added to the cross-validated cut: unsure means content
L2 = 1e-2
STEP = 0.5
WRITTEN_WEIGHT = 20.0  # a hand-written content question counts as this many real ones
Vec = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Item:
    question: str
    is_list: bool
    versions: bool
    group: str
    source: str


def written(path: Path) -> list[Item]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [Item(r["question"], r["label"] == "list", r["kind"] == VERSIONS,
                 f"written:{r['template']}", "written") for r in rows]


def law(split: str) -> list[Item]:
    rows = [json.loads(line) for line in (LAW / f"{split}.jsonl").read_text(
        encoding="utf-8").splitlines() if line]
    return [Item(r["question"], False, False, f"law:{r.get('section') or r['id']}", "law")
            for r in rows]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def xquad(*, held: bool) -> list[Item]:
    english = json.loads((SHARED / "xquad" / "xquad.en.json").read_text(encoding="utf-8"))
    titles = [a["title"] for a in english["data"]]
    out_ = set(sorted(titles, key=_sha)[:HELD_OUT])
    items = []
    for lang in ("de", "en"):
        data = json.loads((SHARED / "xquad" / f"xquad.{lang}.json").read_text(encoding="utf-8"))
        items += [Item(q["question"], False, False, f"xquad:{a['title']}", "xquad")
                  for a in data["data"] if (a["title"] in out_) == held
                  for p in a["paragraphs"] for q in p["qas"]]
    return items


def clapnq(*, held: bool) -> list[Item]:
    items = []
    for name in ("clapnq_dev_answerable.jsonl", "clapnq_dev_unanswerable.jsonl"):
        for line in (SHARED / "clapnq" / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if (int(_sha(str(row["id"]))[-1], 16) % 2 == 1) == held:
                items.append(Item(row["input"], False, False, f"clapnq:{row['id']}", "clapnq"))
    return items


def embed(embedder: OnnxEmbedder, items: list[Item]) -> Vec:
    return np.asarray(embedder.embed_queries([i.question for i in items]), dtype=np.float64)


def logistic(x: Vec, y: Vec, w: Vec, *, steps: int = 1500) -> tuple[Vec, float]:
    """Weighted, L2-regularized logistic regression by full-batch gradient descent with a
    fixed step: deterministic for the same inputs. Each dimension is standardized over
    ``x`` first (e5 vectors share a large common component), and the scaling is folded
    back, so the result applies to raw unit vectors: score = x @ coef + bias."""
    mean, sd = x.mean(axis=0), x.std(axis=0)
    z = (x - mean) / sd
    coef = np.zeros(x.shape[1])
    bias = 0.0
    total = w.sum()
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ coef + bias)))
        g = w * (p - y) / total
        coef -= STEP * (z.T @ g + L2 * coef)
        bias -= STEP * float(g.sum())
    return coef / sd, bias - float((coef * mean / sd).sum())


def weights(items: list[Item]) -> Vec:
    """Balanced classes; a hand-written content question weighs WRITTEN_WEIGHT real ones."""
    raw = np.array([1.0 if i.is_list else (WRITTEN_WEIGHT if i.source == "written" else 1.0)
                    for i in items])
    y = np.array([i.is_list for i in items])
    raw[y] *= raw[~y].sum() / raw[y].sum()
    return raw


def folds(items: list[Item]) -> list[int]:
    return [int(_sha(i.group)[:8], 16) % FOLDS for i in items]


def threshold(items: list[Item], x: Vec) -> float:
    """The cross-validated score at which the fit set's content questions stay content."""
    y = np.array([i.is_list for i in items], dtype=np.float64)
    fold = np.array(folds(items))
    scores = np.empty(len(items))
    for k in range(FOLDS):
        coef, bias = logistic(x[fold != k], y[fold != k], weights(
            [i for i, f in zip(items, fold, strict=True) if f != k]))
        scores[fold == k] = x[fold == k] @ coef + bias
    content = np.sort(scores[~y.astype(bool)])[::-1]
    cut = float(content[int(MAX_FALSE * len(content))])
    recall = float((scores[y == 1] > cut).mean())
    print(f"cross-validated: cut {cut:.3f} (recall {recall:.3f} out of fold), "
          f"margin {MARGIN}")
    return cut + MARGIN


@dataclass(frozen=True)
class Rule:
    intent: Vec
    intent_bias: float
    cut: float
    kind: Vec
    kind_bias: float


def learned(rule: Rule, x: Vec) -> npt.NDArray[np.bool_]:
    return np.asarray(x @ rule.intent + rule.intent_bias > rule.cut)


def report(name: str, items: list[Item], x: Vec, rule: Rule) -> str:
    """Recall on list questions, false lists on content questions, kind accuracy."""
    taken = learned(rule, x)
    pattern = np.array([list_question(i.question) is not None for i in items])
    either = taken | pattern
    y = np.array([i.is_list for i in items])
    parts = [name]
    if y.any():
        kind_ok = [(float(v @ rule.kind + rule.kind_bias) > 0) == i.versions
                   for v, i, t in zip(x, items, taken, strict=True) if i.is_list and t]
        parts.append(f"lists {int(either[y].sum())}/{int(y.sum())} "
                     f"({either[y].mean():.3f}; learned alone {taken[y].mean():.3f}, "
                     f"patterns alone {pattern[y].mean():.3f}), "
                     f"kind right {sum(kind_ok)}/{len(kind_ok)}")
    if (~y).any():
        wrong = [i.question for i, e in zip(items, either, strict=True) if e and not i.is_list]
        parts.append(f"content taken for lists {len(wrong)}/{int((~y).sum())} "
                     f"({len(wrong) / int((~y).sum()):.4f}; learned alone "
                     f"{int(taken[~y].sum())}, patterns alone {int(pattern[~y].sum())})")
        parts += [f"  false: {q}" for q in wrong[:5]]
    line = "; ".join(p for p in parts if not p.startswith("  "))
    print(line)
    for p in parts:
        if p.startswith("  "):
            print(p)
    return line


def fit(embedder: OnnxEmbedder) -> tuple[Rule, list[str]]:
    items = written(HERE / "fit.jsonl") + law("fit") + xquad(held=False) + clapnq(held=False)
    x = embed(embedder, items)
    y = np.array([i.is_list for i in items], dtype=np.float64)
    cut = threshold(items, x)
    coef, bias = logistic(x, y, weights(items))
    lists = [k for k, i in enumerate(items) if i.is_list]
    kinds = np.array([items[k].versions for k in lists], dtype=np.float64)
    kcoef, kbias = logistic(x[lists], kinds, np.ones(len(lists)))
    rule = Rule(coef, bias, cut, kcoef, kbias)
    lines = [report("fit", items, x, rule)]
    for name, held in (("test (written)", written(HERE / "test.jsonl")),
                       ("law test", law("test")), ("xquad held out", xquad(held=True)),
                       ("clapnq held out", clapnq(held=True))):
        lines.append(report(name, held, embed(embedder, held), rule))
    subjectless = [i.question for i in items if i.is_list and not subject_words(i.question)]
    print(f"{len(subjectless)} fit list questions name no subject")
    return rule, lines


def external(embedder: OnnxEmbedder) -> None:
    """The committed rule (patterns, then the learned rule with its subject) on the
    external law questions, which are all content questions."""
    from stichtag.domain.list_intent import learned_list_question  # noqa: PLC0415

    root = SHARED / "law-questions-external"
    questions = [json.loads(line)["question"] for name in ("de.jsonl", "en.jsonl", "refuse.jsonl")
                 for line in (root / name).read_text(encoding="utf-8").splitlines() if line]
    vectors = embedder.embed_queries(questions)
    taken = [q for q, v in zip(questions, vectors, strict=True)
             if list_question(q) or learned_list_question(q, v.tolist(), embedder.model_hash)]
    print(f"external: {len(taken)}/{len(questions)} content questions taken for lists")
    for q in taken:
        print(f"  {q}")


def _text(text: str) -> str:
    return "".join(f"    {json.dumps(text[k:k + 80], ensure_ascii=False)}\n"
                   for k in range(0, len(text), 80))


def _floats(values: Vec) -> str:
    row = 8  # numbers a line: the module stays short
    return "".join("    " + " ".join(f"{v:.6f}," for v in values[k:k + row]) + "\n"
                   for k in range(0, len(values), row))


def write(rule: Rule, model: str, lines: list[str]) -> None:
    digest = hashlib.sha256((HERE / "fit.jsonl").read_bytes()).hexdigest()[:12]
    OUT.write_text(
        '"""The learned list-intent rule\'s parameters.\n\n'
        "Written by ``eval/fit_list_intent.py``; do not edit by hand — rerun it\n"
        '(docs/semantics.md, "List questions by meaning").\n"""\n\n'
        "from __future__ import annotations\n\n"
        f"MODEL = {json.dumps(model)}\n"
        '"""The embedding model (manifest hash) the weights belong to."""\n'
        f"INTENT_BIAS = {rule.intent_bias:.6f}\n"
        f"INTENT_CUT = {rule.cut:.6f}\n"
        '"""A question is a list question when its intent score exceeds this."""\n'
        f"KIND_BIAS = {rule.kind_bias:.6f}\n"
        f"RATIONALE = (\n{_text(f'fit.jsonl sha256 {digest}; ' + ' | '.join(lines))})\n"
        f"INTENT = (\n{_floats(rule.intent)})\n"
        f"KIND = (\n{_floats(rule.kind)})\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--external", action="store_true", help="measure only, fit nothing")
    args = parser.parse_args()
    embedder = OnnxEmbedder(MODELS, variant="int8", threads=2)
    if args.external:
        external(embedder)
        return
    rule, lines = fit(embedder)
    if args.write:
        write(rule, embedder.model_hash.split(":")[0], lines)


if __name__ == "__main__":
    main()
