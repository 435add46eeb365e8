"""Reciprocal-rank fusion of ranked candidate lists (Cormack et al., 2009)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
RRF_K = 60


def rrf(rankings: Sequence[Sequence[K]], *, k: int = RRF_K) -> dict[K, float]:
    """Fused score per key: sum over lists of 1 / (k + rank), ranks starting at 1."""
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return scores
