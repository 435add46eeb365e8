"""How well a cross-encoder and the e5 cosine separate answering passages, on held-out pairs.

    .venv/bin/python eval/cross_encoder_auc.py --models .data/models [--cross DIR]

Pairs the student never trained on, built as its training pairs are
(``stichtag.training.student_data``): the law question set's test half (German and
English questions over the German law, gold passage against passages of other sections)
and XQuAD's held-out articles in each language and across languages. Prints the ROC AUC
per set for the cosine of the e5 embeddings (the default reranker) and the cross-encoder.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "app"))

from stichtag.domain.calibration import roc_auc  # noqa: E402
from stichtag.models.cross_encoder import RERANK_NAME  # noqa: E402
from stichtag.models.embedder import OnnxEmbedder  # noqa: E402
from stichtag.models.reranker import OnnxCrossEncoder  # noqa: E402
from stichtag.training.data import Pair, xquad_pairs  # noqa: E402
from stichtag.training.student_data import law_question_pairs, xquad_cross_pairs  # noqa: E402


def held_out() -> dict[str, list[Pair]]:
    """Held-out pairs by set."""
    law, _ = law_question_pairs(REPO / "eval" / "law_questions" / "test.jsonl", split="test")
    sets: dict[str, list[Pair]] = defaultdict(list)
    for p in law:
        sets[p.source.replace("law-questions", "law test")].append(p)
    for lang in ("de", "en"):
        sets[f"xquad-{lang} held-out"] = xquad_pairs(lang, "held-out")
    for p in xquad_cross_pairs("held-out"):
        sets[f"{p.source} held-out"].append(p)
    return dict(sets)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=REPO / ".data" / "models")
    ap.add_argument("--cross", type=Path, help=f"default: MODELS/{RERANK_NAME}-int8")
    args = ap.parse_args()
    embedder = OnnxEmbedder(args.models / "e5-small", variant="int8", threads=2)
    cross = OnnxCrossEncoder(args.cross or args.models / f"{RERANK_NAME}-int8", threads=2)
    print(f"cross-encoder {cross.model_hash[:16]} ({cross.label})")
    print("| set | pairs | positives | AUC cosine | AUC cross-encoder |")
    print("| --- | --- | --- | --- | --- |")
    for name, pairs in held_out().items():
        labels = [bool(p.label) for p in pairs]
        qs = embedder.embed_queries([p.question for p in pairs])
        ps = embedder.embed_passages([p.passage for p in pairs])
        cos = [float(v) for v in np.sum(qs * ps, axis=1)]
        logits: list[float] = []
        for i in range(0, len(pairs), 16):
            batch = pairs[i:i + 16]
            logits.extend(float(cross.score(p.question, [p.passage])[0]) for p in batch)
        print(f"| {name} | {len(pairs)} | {sum(labels)} | {roc_auc(cos, labels):.3f} | "
              f"{roc_auc(logits, labels):.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
