"""Pair tokenization for training, identical to what ``OnnxCrossEncoder.encode`` feeds.

The row is the e5 tokenizer's pair template ``<s> query: q </s> passage: p </s>`` with
every token type 0 (see ``stichtag.models.cross_encoder``). Truncation follows the reranker
port: the query is kept whole and the passage's tail is cut; only a query that alone
leaves no room for a passage token is cut too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from stichtag.models.cross_encoder import PASSAGE_PREFIX, QUERY_PREFIX
from stichtag.models.e5_convert.tokenizer import build_tokenizer
from stichtag.models.e5_convert.weights import E5Vocab
from stichtag.models.reranker import pair_lengths

SPECIALS = 3  # <s>, </s>, </s>


def pair_tokenizer(vocab: E5Vocab, max_length: int) -> Tokenizer:
    """The tokenizer written next to the exported graph, with truncation handled here."""
    tok = build_tokenizer(vocab, max_length=max_length, pair_types=(0, 0))
    tok.no_truncation()
    tok.no_padding()
    return tok


def encode_pairs(
    tok: Tokenizer, pairs: Sequence[tuple[str, str]], max_length: int
) -> list[npt.NDArray[np.int64]]:
    """Token ids of each (question, passage) row, truncated like the reranker port."""
    queries = tok.encode_batch([QUERY_PREFIX + q for q, _ in pairs], add_special_tokens=False)
    passages = tok.encode_batch([PASSAGE_PREFIX + p for _, p in pairs], add_special_tokens=False)
    budget = max_length - SPECIALS
    rows: list[npt.NDArray[np.int64]] = []
    for q, p in zip(queries, passages, strict=True):
        n_q, n_p = len(q.ids), len(p.ids)
        keep_q, keep_p = pair_lengths(n_q, n_p, budget)
        if keep_q < n_q:
            q.truncate(keep_q)
        if keep_p < n_p:
            p.truncate(keep_p)
        row = tok.post_process(q, p, add_special_tokens=True)
        rows.append(np.asarray(row.ids, dtype=np.int64))
    return rows


def pad_rows(
    rows: Sequence[npt.NDArray[np.int64]], pad_id: int, width: int | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``input_ids`` and ``attention_mask`` ``[B, width]`` (width: the longest row)."""
    width = width or max(len(r) for r in rows)
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return ids, mask
