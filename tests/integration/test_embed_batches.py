"""The embedder's passage batches (docs/operations.md, "Derived indexes"): sorted by token length,
cut to a
token budget, every text once, the same vectors as one ``embed_passages`` call, and the
same again when the texts are tokenized slice by slice."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from stichtag.models import embedder as embedder_module
from stichtag.models.embedder import BATCH_TOKEN_PAIRS, BATCH_TOKENS, OnnxEmbedder

WORDS = ("Versicherer", "Deckungsrückstellung", "Höchstzinssatz", "nach", "§ 341f HGB",
         "der", "Aktuar", "prüft", "jährlich", "die", "Rechnungsgrundlagen")


def _texts(n: int) -> list[str]:
    # lengths from a few tokens to past the model's 512: every kind of batch occurs
    return [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(3 + (i * 37) % 700))
            for i in range(n)]


def test_batches_follow_the_token_budget_and_cover_every_text(embedder: Any) -> None:
    model: OnnxEmbedder = embedder
    texts = _texts(60)
    lengths = [len(e.ids) for e in model._tokenizer.encode_batch(  # the budget is in tokens
        [model.manifest.passage_prefix + t for t in texts])]
    batches = list(model.embed_batches(texts))
    positions = [i for rows, _ in batches for i in rows]
    assert sorted(positions) == list(range(len(texts)))
    assert [lengths[i] for i in positions] == sorted(lengths)  # shortest first
    widths = [max(lengths[i] for i in rows) for rows, _ in batches]
    assert all(len(rows) == 1 or (len(rows) * w <= BATCH_TOKENS
                                  and len(rows) * w * w <= BATCH_TOKEN_PAIRS)
               for (rows, _), w in zip(batches, widths, strict=True))
    assert max(widths) == model.manifest.max_length  # the long end was exercised
    assert len({len(rows) for rows, _ in batches}) > 1  # short texts go in wider batches
    whole = model.embed_passages(texts)
    for rows, vectors in batches:
        assert np.array_equal(whole[rows], vectors)  # the same batches, the same int8 vectors


def test_no_passages_no_batches(embedder: Any) -> None:
    assert list(embedder.embed_batches([])) == []
    assert embedder.embed_passages([]).shape == (0, embedder.dims)


def test_tokenizing_in_slices_gives_the_same_batches_and_vectors(
        embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    model: OnnxEmbedder = embedder
    texts = _texts(40)  # one slice of the default size
    whole = [(rows, vectors) for rows, vectors in model.embed_batches(texts)]
    monkeypatch.setattr(embedder_module, "TOKENIZE_SLICE", 7)  # six slices, the last short
    sliced = list(model.embed_batches(texts))
    assert [rows for rows, _ in sliced] == [rows for rows, _ in whole]
    for (_, a), (_, b) in zip(sliced, whole, strict=True):
        assert np.array_equal(a, b)
