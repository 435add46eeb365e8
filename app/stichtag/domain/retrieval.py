"""What retrieval returns: passages of exact versions with every score they earned."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime

from stichtag.domain.fundstelle import Fundstelle

PlacementKey = tuple[int, int]
"""Where a passage is visible: (assertion id, passage ordinal in the version)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Placement(Fundstelle):
    """A visible passage as the store reads it: ``quote`` is the passage text
    (``text[start:end]`` of the version), with the assertion it is visible through."""

    assertion_id: int
    passage_ordinal: int
    passage_id: int
    valid_from: datetime
    valid_to: datetime | None
    doc_class: str
    title: str | None

    @property
    def key(self) -> PlacementKey:
        """The placement's key in both candidate lists."""
        return (self.assertion_id, self.passage_ordinal)

    @property
    def text(self) -> str:
        """The passage text (the Fundstelle's quote)."""
        return self.quote


@dataclass(frozen=True, kw_only=True, slots=True)
class Hit(Placement):
    """One retrieved passage with all its scores (None: not in that candidate list)."""

    bm25: float | None
    vector: float | None
    fused: float
    bm25_rank: int | None
    vector_rank: int | None

    @classmethod
    def of(cls, placement: Placement, *, bm25: float | None, vector: float | None,
           fused: float, bm25_rank: int | None, vector_rank: int | None) -> Hit:
        """The placement with its scores attached."""
        values = {f.name: getattr(placement, f.name) for f in fields(Placement)}
        return cls(**values, bm25=bm25, vector=vector, fused=fused, bm25_rank=bm25_rank,
                   vector_rank=vector_rank)
