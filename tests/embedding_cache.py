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

Only the tests use it, through the ``embedder`` fixture; no server reads it, so nothing
one tenant embedded can reach another. ``STICHTAG_TEST_CACHE`` moves or switches it off
with the corpus cache.
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

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The vectors of ``texts`` as the model embeds this exact list."""
        if not texts:
            return np.asarray(self.inner.embed_passages(texts), dtype=np.float32)
        digest = hashlib.sha256(self.model_hash.encode())
        for text in texts:
            encoded = text.encode()
            digest.update(len(encoded).to_bytes(8, "big") + encoded)
        path = self.root / digest.hexdigest()[:2] / f"{digest.hexdigest()}.npy"
        if path.exists():
            self.hits += 1
            return np.load(path)
        self.misses += 1
        vectors = np.asarray(self.inner.embed_passages(texts), dtype=np.float32)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.stem}.{os.getpid()}.partial.npy")
        np.save(partial, vectors)
        partial.rename(path)  # atomic: a reader never sees half a file
        return vectors

    def embed_batches(self, texts: Sequence[str]
                      ) -> Iterator[tuple[list[int], npt.NDArray[np.float32]]]:
        """The whole list as one batch (the indexer stores it as it would several)."""
        if texts:
            yield list(range(len(texts))), self.embed_passages(texts)
