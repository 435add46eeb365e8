"""Ports of retrieval: the lexical index, the vector index and the passage vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol
from uuid import UUID

from stichtag.domain.asof import AsOf
from stichtag.domain.records import IndexBacklog
from stichtag.domain.retrieval import Placement, PlacementKey
from stichtag.domain.salience import InForce
from stichtag.ports.common import Vector

# -- retrieval -----------------------------------------------------------------------------


class LexicalIndex(Protocol):
    """BM25 search over the passages visible at an as-of pair (tantivy, per tenant)."""

    @property
    def analyzer_id(self) -> str:
        """The versioned text analyzer (recorded with every search run)."""
        ...

    def search(self, tenant_id: UUID, text: str, *, as_of: AsOf, clearance: int,
               k: int) -> list[tuple[PlacementKey, float]]:
        """BM25-ranked placements, filtered inside the index."""
        ...

    def fresh(self, tenant_id: UUID, *, at_least: int = 0) -> int:
        """Wait (bounded) until the index has applied every outbox row committed before
        the call that readers wait for (not those of a bulk load) and the position
        ``at_least`` (the reader's consistency token), so a client reads its own writes;
        returns the applied sequence."""
        ...

    def in_force(self, tenant_id: UUID, *, as_of: AsOf, clearance: int) -> InForce:
        """Document frequencies of index terms among the passages visible at the as-of
        pair, and the vocabulary known then within the clearance (question salience)."""
        ...


class VectorIndex(Protocol):
    """Nearest passages by cosine over the passages visible at an as-of pair (pgvector)."""

    def nearest(self, tenant_id: UUID, query: Vector, *, as_of: AsOf, clearance: int,
                k: int, model_hash: str, exact: bool = False,
                hnsw_from: int | None = None) -> list[tuple[PlacementKey, float]]:
        """Cosine-ranked placements of passages embedded with ``model_hash``."""
        ...

    def backlog(self, tenant_id: UUID, *, as_of: AsOf, clearance: int) -> IndexBacklog:
        """The tenant's outbox head and its passages visible at the as-of pair within the
        clearance that have no vector yet (0 at once when the tenant has none pending)."""
        ...


class PassageStore(Protocol):
    """Visible placements with their text, and the passages' stored vectors."""

    def placements(self, tenant_id: UUID, keys: Sequence[PlacementKey], *, as_of: AsOf,
                   clearance: int) -> list[Placement]:
        """The placements among ``keys`` that are visible (re-checked), in no order."""
        ...

    def vectors(self, tenant_id: UUID, passage_ids: Sequence[int], *,
                model_hash: str) -> dict[int, Vector]:
        """Stored vectors of ``model_hash`` for the passages that have one."""
        ...

    def store_vectors(self, tenant_id: UUID, passage_ids: Sequence[int], vectors: Vector,
                      model_hash: str) -> None:
        """Store vectors; a passage that already has one of this model keeps it (first
        writer wins: a run may have used it)."""
        ...
