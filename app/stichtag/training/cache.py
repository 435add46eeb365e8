"""Hidden states of the frozen lower layers, computed once per pair and kept on disk.

Training only updates layers ``freeze..11`` and the head, so the output of the frozen
embedding and layers ``0..freeze-1`` is a fixed function of the token ids: computing it
once and reading it back each epoch makes a training step cost only the upper layers.

Each row is stored at its true length (float32, ``[len, 384]``, concatenated in one
file with an offset table). Padding a row again for a batch is exact: padded keys get
a -1e4 attention bias whose exp underflows to 0, so real tokens never see them.

A cache directory is keyed by everything its numbers depend on (base weights hash,
freeze depth, token ids), so a stale cache is never read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from stichtag.models.e5_convert.weights import E5Weights
from stichtag.training import encoder
from stichtag.training.pairs import pad_rows

CACHE_VERSION = "1"
_BUCKET = 32


def bucket(length: int, max_length: int) -> int:
    """Batch width for a longest row of ``length``: the next multiple of 32 (few shapes
    means few XLA compilations)."""
    return min(max_length, -(-length // _BUCKET) * _BUCKET)


@dataclass(frozen=True)
class HiddenCache:
    """Read access to one cache directory."""

    directory: Path
    offsets: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    hidden: npt.NDArray[np.float32]

    def batch(
        self, index: Sequence[int] | npt.NDArray[np.int64], width: int, rows: int
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int32]]:
        """Hidden states ``[rows, width, H]`` and mask; rows past ``index`` are empty."""
        h = self.hidden.shape[1]
        out = np.zeros((rows, width, h), dtype=np.float32)
        mask = np.zeros((rows, width), dtype=np.int32)
        for r, i in enumerate(index):
            n = int(self.lengths[i])
            start = int(self.offsets[i])
            out[r, :n] = self.hidden[start : start + n]
            mask[r, :n] = 1
        return out, mask


def cache_key(base_sha256: str, freeze: int, rows: Sequence[npt.NDArray[np.int64]]) -> str:
    """Identity of a cache: base weights, depth, and every row's ids."""
    digest = hashlib.sha256(f"{CACHE_VERSION}|{base_sha256}|{freeze}|".encode())
    for row in rows:
        digest.update(np.asarray(row, dtype="<i8").tobytes())
        digest.update(b"|")
    return digest.hexdigest()[:24]


def build_cache(
    root: Path,
    weights: E5Weights,
    base_sha256: str,
    freeze: int,
    rows: Sequence[npt.NDArray[np.int64]],
    *,
    max_length: int,
    batch_size: int = 16,
    progress: Callable[[int, int], None] | None = None,
) -> HiddenCache:
    """Compute (or reuse) the cache for ``rows``; written to a temp name, then renamed."""
    directory = root / cache_key(base_sha256, freeze, rows)
    if not (directory / "done.json").is_file():
        _compute(directory, weights, freeze=freeze, rows=rows, max_length=max_length,
                 batch_size=batch_size, progress=progress)
    index = np.load(directory / "index.npz")
    total = int(index["offsets"][-1] + index["lengths"][-1]) if len(rows) else 0
    hidden = np.memmap(directory / "hidden.f32", dtype=np.float32, mode="r",
                       shape=(max(total, 1), weights.config.hidden))
    return HiddenCache(directory=directory, offsets=index["offsets"], lengths=index["lengths"],
                       hidden=hidden)


def _compute(
    directory: Path,
    weights: E5Weights,
    *,
    freeze: int,
    rows: Sequence[npt.NDArray[np.int64]],
    max_length: int,
    batch_size: int,
    progress: Callable[[int, int], None] | None,
) -> None:
    cfg = weights.config
    tmp = directory.with_name(directory.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    lengths = np.array([len(r) for r in rows], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    total = int(lengths.sum())
    hidden = np.memmap(tmp / "hidden.f32", dtype=np.float32, mode="w+",
                       shape=(max(total, 1), cfg.hidden))
    params = {"emb.ln.w": weights.f32["emb.ln.w"].reshape(-1),
              "emb.ln.b": weights.f32["emb.ln.b"].reshape(-1)}
    for i in range(freeze):
        params.update(encoder.layer_params(weights, i))
    jparams = {k: jnp.asarray(v) for k, v in params.items()}
    lower = jax.jit(lambda p, e, m: encoder.lower_forward(p, e, m, cfg, freeze))
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        width = bucket(max(len(rows[i]) for i in chunk), max_length)
        batch = [rows[i] for i in chunk]
        batch += [batch[-1]] * (batch_size - len(batch))  # fixed batch shape
        ids, mask = pad_rows(batch, weights.vocab.pad, width)
        out = np.asarray(lower(jparams, jnp.asarray(encoder.embed(weights, ids)),
                               jnp.asarray(mask.astype(np.int32))))
        for r, i in enumerate(chunk):
            hidden[offsets[i] : offsets[i] + lengths[i]] = out[r, : lengths[i]]
        if progress is not None:
            progress(min(start + batch_size, len(order)), len(order))
    hidden.flush()
    del hidden
    np.savez(tmp / "index.npz", offsets=offsets, lengths=lengths)
    (tmp / "done.json").write_text(json.dumps({"rows": len(rows), "freeze": freeze}) + "\n")
    tmp.rename(directory)
