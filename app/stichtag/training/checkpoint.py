"""Checkpoints of a training run: written atomically, restored only for the same run.

A checkpoint (``OUT/checkpoint/``) holds the params, the optimizer leaves and the step,
which fixes the data position and the dropout keys, so a resumed run continues bit for
bit; ``state.json`` also records the config, data hash, base hash and step total, and a
checkpoint written for other values is refused. Separate from the loop
(:mod:`stichtag.training.train`) because exporting a finished run (``--export-only``) reads a
checkpoint without training.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from stichtag.training.state import TrainConfig, TrainResult, TrainState

CHECKPOINT = "checkpoint"


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
