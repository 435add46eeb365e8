"""Passage embeddings for tests, kept across runs (docs/testing.md, "The embedding cache").

The e5 embedder wrapped so that a list of passages it has embedded before is read back
instead of computed: an edit that rebuilds a cached corpus (tests/corpus_cache.py) but
leaves its passages alone re-embeds nothing.

The address is the model's hash and graph variant plus the hash of every text of the
call, in order. A single text is not enough: the int8 graph quantizes each batch with its
own scale, so a passage's vector depends on the passages batched with it, and the
embedder plans its batches from the whole list (``OnnxEmbedder.embed_batches``). The same
list gives the same batches and so the same vectors, bit for bit; the cache returns
exactly what the model would. Queries are embedded one at a time and are cheap: they
pass through.

Only the corpus fixtures use it (the ``corpus_embedder`` fixture): tests of the embedder,
the indexer and the worker see the model itself, with its real cost. No server reads the
cache, so nothing one tenant embedded can reach another. ``STICHTAG_TEST_CACHE`` moves it
or switches it off together with the corpus cache.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt


class CachingEmbedder:
    """``inner`` with its passage embeddings read from and written to ``root``."""

    def __init__(self, inner: Any, root: Path) -> None:
        self.inner = inner
        self.root = root / inner.model_hash.replace(":", "-").replace("/", "-")
        self.hits = 0
        self.misses = 0

    def __getattr__(self, name: str) -> Any:  # manifest, dims, variant, …
        return getattr(self.inner, name)

    @property
    def model_hash(self) -> str:
        """The wrapped model's identity: the vectors are its own."""
        return str(self.inner.model_hash)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Passed through: one query per batch, cheap."""
        return np.asarray(self.inner.embed_queries(texts), dtype=np.float32)

    def _path(self, texts: Sequence[str]) -> Path:
        digest = hashlib.sha256(self.model_hash.encode())
        for text in texts:
            encoded = text.encode()
            digest.update(len(encoded).to_bytes(8, "big") + encoded)
        name = digest.hexdigest()
        return self.root / name[:2] / f"{name}.npz"

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The vectors of ``texts`` as the model embeds this exact list."""
        out = np.empty((len(texts), self.inner.dims), dtype=np.float32)
        for rows, vectors in self.embed_batches(texts):
            out[rows] = vectors
        return out

    def embed_batches(self, texts: Sequence[str]
                      ) -> Iterator[tuple[list[int], npt.NDArray[np.float32]]]:
        """The model's own batches: computed (and kept once every batch was taken) on a
        miss, read back in the same plan on a hit."""
        if not texts:
            return
        path = self._path(texts)
        if path.exists():
            self.hits += 1
            with np.load(path) as stored:
                vectors, order, sizes = stored["vectors"], stored["order"], stored["sizes"]
            at = 0
            for size in sizes.tolist():
                rows = order[at:at + size].tolist()
                at += size
                yield rows, vectors[rows]
            return
        self.misses += 1
        whole = np.empty((len(texts), self.inner.dims), dtype=np.float32)
        order: list[int] = []
        sizes: list[int] = []
        for rows, vectors in self.inner.embed_batches(texts):
            whole[rows] = vectors
            order.extend(rows)
            sizes.append(len(rows))
            yield rows, vectors
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.stem}.{os.getpid()}.partial.npz")
        np.savez(partial, vectors=whole, order=np.asarray(order, dtype=np.int64),
                 sizes=np.asarray(sizes, dtype=np.int64))
        partial.rename(path)  # atomic: a reader never sees half a file
