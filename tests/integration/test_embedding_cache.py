"""The test embedding cache returns exactly what the model gives for the same list, and
nothing for a different list (tests/embedding_cache.py; docs/testing.md, "The embedding
cache")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from stichtag.models.embedder import OnnxEmbedder
from tests.embedding_cache import CachingEmbedder

TEXTS = ["Der Höchstzinssatz beträgt 0,25 Prozent.",
         "Die Deckungsrückstellung ist nach § 341f HGB zu bilden.",
         "A claim is reported within 30 days."]


def test_a_cached_list_is_the_models_own_vectors_bit_for_bit(models_dir: Path,
                                                              tmp_path: Path) -> None:
    model = OnnxEmbedder(models_dir / "e5-small", variant="int8", threads=1)
    cached = CachingEmbedder(model, tmp_path)
    first = cached.embed_passages(TEXTS)
    second = cached.embed_passages(TEXTS)
    assert (cached.misses, cached.hits) == (1, 1)
    assert np.array_equal(first, second)
    assert np.array_equal(second, model.embed_passages(TEXTS))
    assert cached.model_hash == model.model_hash
    # through the batch interface the indexer uses: the model's own plan, read back
    assert _batches(cached.embed_batches(TEXTS)) == _batches(model.embed_batches(TEXTS))


def _batches(batches: Iterator[tuple[list[int], Any]]) -> list[tuple[list[int], bytes]]:
    return [(rows, np.asarray(vectors).tobytes()) for rows, vectors in batches]


def test_a_round_stopped_half_way_is_not_kept(models_dir: Path, tmp_path: Path) -> None:
    model = OnnxEmbedder(models_dir / "e5-small", variant="int8", threads=1)
    cached = CachingEmbedder(model, tmp_path)
    texts = [f"Satz {i}: " + "lang " * (40 * i) for i in range(1, 9)]  # several batches
    assert len(list(model.embed_batches(texts))) > 1
    batches = cached.embed_batches(texts)
    next(batches)
    batches.close()  # the worker was told to stop between two batches
    assert list(tmp_path.rglob("*.npz")) == []
    assert np.array_equal(cached.embed_passages(texts), model.embed_passages(texts))
    assert list(tmp_path.rglob("*.npz")) != []


def test_another_list_or_model_variant_is_not_served_from_the_cache(
        models_dir: Path, tmp_path: Path) -> None:
    int8 = CachingEmbedder(OnnxEmbedder(models_dir / "e5-small", variant="int8", threads=1),
                           tmp_path)
    int8.embed_passages(TEXTS)
    int8.embed_passages(TEXTS[:2])  # a sub-list is batched (and quantized) on its own
    int8.embed_passages(list(reversed(TEXTS)))
    assert (int8.misses, int8.hits) == (3, 0)
    float_model = OnnxEmbedder(models_dir / "e5-small", variant="float", threads=1)
    floats = CachingEmbedder(float_model, tmp_path)
    assert np.array_equal(floats.embed_passages(TEXTS), float_model.embed_passages(TEXTS))
    assert (floats.misses, floats.hits) == (1, 0)
