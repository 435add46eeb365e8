"""One optimizer step of the cross-encoder fine-tuning, and the scores of cached rows.

Loss: binary cross-entropy on each (question, passage) pair. The relevance gate compares
one absolute score across questions (the best candidate's), and CLAPnq's unanswerable
questions have no positive at all, so a listwise softmax over one positive and k
negatives (which only orders passages within a question and is blind to a common
shift) cannot learn what the gate needs; BCE can, and hard negatives of the same
question still sit in the same data.

Also here: the trainable parameters, AdamW with its schedule, and the data order of an
epoch. Separate from the loop (:mod:`stichtag.training.train`) because these are the pure,
jitted functions of (params, batch, step) that make a run deterministic; the loop only
feeds them, logs and checkpoints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
import optax

from stichtag.models.e5_convert.weights import E5Weights
from stichtag.training import encoder
from stichtag.training.cache import HiddenCache, bucket
from stichtag.training.state import TrainConfig

_CHUNK = 32  # batches per length-sorted chunk (less padding, order still random)


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
