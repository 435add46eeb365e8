"""Fit the rule that ranks a passage's sentences by how well they answer the question.

The extractive generator cites whole evidence sentences; which sentence of a kept passage
comes first decides whether the answer answers. This script measures that choice on
public sets with a gold sentence per question and fits the weights of the sentence rule
(``stichtag.domain.sentence_rule``) on fit halves only:

- XQuAD de and en: the sentence of the answer's passage that holds the answer text; the
  fit half is every article except the 12 held out by ``xquad_held_out`` (split by
  article, so no paragraph is on both sides);
- CLAPnq answerable questions: the annotators' selected sentences; split by the question
  hash of ``eval/clapnq_to_eval.py`` (half 0 fit, half 1 test);
- the law question set (``eval/law_questions``, German and English questions over the
  German law): the sentence of the gold passage that holds the gold text; fit and test
  halves as the set splits them, by law section.

With ``--cross DIR`` each sentence is also scored by that cross-encoder (question with
the sentence and its headings), and a rule reading its logit is fitted beside the one
without (``meaning-2``).

Candidates are the sentences of the passage (the server's passages, ``passages_of``)
that holds the gold, features exactly as the server computes them: the share of the
question's content words the sentence (with its heading path) carries, and the cosine of
e5 ``query:`` question and ``passage:`` sentence vectors (int8, batched like the server).
It prints top-1 accuracy on the test halves for the rule that served before (word
overlap), cosine alone and the fitted rule, and the fitted weights.

    .venv/bin/python eval/fit_sentence_rule.py --models .data/models [--limit N] \
        [--cross .data/models/e5-small-rerank-int8]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stichtag.domain.passages import embed_text, section_of
from stichtag.domain.prepared import prepare
from stichtag.domain.sentence_rule import overlap_share
from stichtag.domain.text import normalize
from stichtag.models.embedder import OnnxEmbedder
from stichtag.training.data import xquad_held_out

SHARED = Path(__file__).resolve().parents[2] / "shared"


@dataclass(frozen=True, kw_only=True)
class Item:
    """One question, the sentences of its gold passage and which of them are gold."""

    source: str
    half: str  # "fit" or "test"
    question: str
    texts: list[str]  # what the embedder reads: heading context, then the sentence
    overlaps: list[float]
    gold: list[bool]


def _sentences(document: str,
               media: str = "text/plain") -> list[list[tuple[str, tuple[str, ...]]]]:
    """Per server passage: its sentences (quote, heading path), headings left out."""
    version = prepare(document, media)
    flat: list[tuple[str, tuple[str, ...]]] = []
    for block, path in zip(version.blocks, version.paths, strict=True):
        flat.extend((block.text[s:e], path)
                    for s, e in zip(block.sent_starts, block.sent_ends, strict=True))
    out = []
    for p in version.passages:
        rows = flat[p.first_sentence:p.first_sentence + p.n_sentences]
        out.append([(q, h) for q, h in rows if not (h and q == h[-1])])
    return out


@functools.lru_cache(maxsize=16)
def _cut(document: str, media: str) -> list[list[tuple[str, tuple[str, ...]]]]:
    """``_sentences`` of a normalized document, once per document (law versions repeat)."""
    return _sentences(normalize(document), media)


def _item(source: str, half: str, question: str, document: str,
          is_gold: Callable[[str], bool], *, media: str = "text/plain") -> Item | None:
    for rows in _cut(document, media):
        gold = [bool(is_gold(q)) for q, _ in rows]
        if any(gold) and len(rows) >= 2 and not all(gold):
            return Item(source=source, half=half, question=question,
                        texts=[embed_text(section_of(h), q) for q, h in rows],
                        overlaps=[overlap_share(question, q, h) for q, h in rows],
                        gold=gold)
    return None


def xquad_items(lang: str) -> list[Item]:
    """Questions whose answer text lies in exactly one passage of their paragraph."""
    data = json.loads((SHARED / f"eval/xquad/xquad.{lang}.json").read_text(encoding="utf-8"))
    held = set(xquad_held_out(SHARED))
    out: list[Item] = []
    for article in data["data"]:
        half = "test" if article["title"] in held else "fit"
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                answer = normalize(qa["answers"][0]["text"]).strip()
                if not answer:
                    continue
                item = _item(f"xquad-{lang}", half, qa["question"].strip(),
                             paragraph["context"], lambda q, a=answer: a in q)
                if item is not None:
                    out.append(item)
    return out


def clapnq_items() -> list[Item]:
    """Answerable questions with selected sentences; the half of eval/clapnq_to_eval.py."""
    out: list[Item] = []
    path = SHARED / "eval/clapnq/clapnq_dev_answerable.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        selected = (row.get("output") or [{}])[0].get("selected_sentences") or []
        keys = [normalize(s).strip()[:40] for s in selected if s.strip()]
        if not keys:
            continue
        (p,) = row["passages"]
        half = ("fit", "test")[int(hashlib.sha256(row["id"].encode()).hexdigest(), 16) % 2]
        item = _item("clapnq", half, row["input"], f"{p['title']}\n\n{p['text'].strip()}\n",
                     lambda q, ks=keys: any(k in q or q.strip()[:40] in k for k in ks))
        if item is not None:
            out.append(item)
    return out


def law_items() -> list[Item]:
    """Answerable law questions: the gold passage of the gold version, gold by gold text."""
    from stichtag.training.student_data import LAW_CORPUS  # noqa: PLC0415

    out: list[Item] = []
    for half in ("fit", "test"):
        path = Path(__file__).resolve().parent / "law_questions" / f"{half}.jsonl"
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        # grouped by version, so each version is cut once
        for row in sorted(rows, key=lambda r: (r.get("gold") or {}).get("version_file", "")):
            gold = row.get("gold")
            if not row["answerable"] or not gold:
                continue
            text = (SHARED / LAW_CORPUS / gold["version_file"]).read_text(encoding="utf-8")
            key = " ".join(normalize(gold["gold_text"]).split())
            item = _item(f"law-{row['lang']}", half, row["question"], text,
                         lambda q, k=key: k in " ".join(q.split()), media="text/markdown")
            if item is not None:
                out.append(item)
    return out


def cross_logits(model_dir: Path, items: list[Item]) -> list[np.ndarray]:
    """Per item, the cross-encoder's logit of each candidate (one call per item, as the
    server scores one answer's sentences)."""
    from stichtag.models.reranker import OnnxCrossEncoder  # noqa: PLC0415

    model = OnnxCrossEncoder(model_dir, threads=2)
    out = []
    for n, item in enumerate(items):
        out.append(np.asarray(model.score(item.question, item.texts), dtype=float))
        if n % 500 == 0:
            print(f"  cross-encoded {n}/{len(items)}", file=sys.stderr, flush=True)
    return out


def cosines(embedder: OnnxEmbedder, items: list[Item]) -> list[np.ndarray]:
    """Per item, the cosine of each candidate to the question. An item's sentences are
    embedded as one list, as the server embeds one answer's evidence."""
    out = []
    for n, item in enumerate(items):
        q = embedder.embed_queries([item.question])[0]
        out.append(embedder.embed_passages(item.texts) @ q)
        if n % 200 == 0:
            print(f"  embedded {n}/{len(items)}", file=sys.stderr, flush=True)
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3) -> np.ndarray:
    """Weights of P(gold) = sigmoid(x @ w) by Newton's method with a small ridge."""
    w = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + l2 * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-9:
            break
    return w


def top1(items: list[Item], scores: list[np.ndarray]) -> float:
    """Share of items whose best-scored sentence is gold (ties: the earlier sentence)."""
    hits = [item.gold[int(np.argmax(s))] for item, s in zip(items, scores, strict=True)]
    return sum(hits) / len(hits) if hits else math.nan


def main() -> int:
    """Fit on the fit halves, print test-half accuracy per source and variant."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path(".data/models"))
    ap.add_argument("--limit", type=int, default=0, help="items per source (0: all)")
    ap.add_argument("--cross", type=Path, help="a cross-encoder model directory")
    args = ap.parse_args()
    embedder = OnnxEmbedder(args.models / "e5-small", variant="int8", threads=2)
    items: list[Item] = []
    for source in (xquad_items("de"), xquad_items("en"), clapnq_items(), law_items()):
        items.extend(source[:args.limit] if args.limit else source)
    cos = cosines(embedder, items)
    feats = [np.column_stack([np.ones(len(i.texts)), i.overlaps, c])
             for i, c in zip(items, cos, strict=True)]
    fit = [n for n, i in enumerate(items) if i.half == "fit"]
    gold = np.concatenate([np.asarray(items[n].gold, float) for n in fit])
    w = fit_logistic(np.vstack([feats[n] for n in fit]), gold)
    print(f"fitted on {len(fit)} fit-half questions "
          f"({sum(len(items[n].texts) for n in fit)} sentences): "
          f"bias {w[0]:.4f}, overlap {w[1]:.4f}, cosine {w[2]:.4f}")
    variants = {"overlap (before)": lambda n: np.asarray(items[n].overlaps),
                "cosine alone": lambda n: cos[n],
                "fitted rule": lambda n: feats[n] @ w}
    if args.cross is not None:
        logits = cross_logits(args.cross, items)
        both = [np.column_stack([f, x]) for f, x in zip(feats, logits, strict=True)]
        w2 = fit_logistic(np.vstack([both[n] for n in fit]), gold)
        print(f"with the cross-encoder: bias {w2[0]:.4f}, overlap {w2[1]:.4f}, "
              f"cosine {w2[2]:.4f}, cross {w2[3]:.4f}")
        variants["cross alone"] = lambda n: logits[n]
        variants["fitted + cross"] = lambda n: both[n] @ w2
    print("| source | half | questions | " + " | ".join(variants) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in variants) + " |")
    for source in dict.fromkeys(i.source for i in items):
        for half in ("fit", "test"):
            ns = [n for n, i in enumerate(items) if i.source == source and i.half == half]
            sel = [items[n] for n in ns]
            cells = [f"{top1(sel, [v(n) for n in ns]):.3f}" for v in variants.values()]
            print(f"| {source} | {half} | {len(ns)} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
