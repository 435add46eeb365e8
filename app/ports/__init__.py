"""The ports: what the use cases (app/services) need from the world, as Protocols.

Each port has a real adapter (PostgreSQL in app/store, tantivy and the outbox applier in
app/index, onnxruntime in app/models, the generators in app/generators), wired in
app/bootstrap.py, and an in-memory fake in tests/fakes.py for unit tests of the use
cases. Services import this package and app/domain only (tests/unit/test_architecture.py).

Everything that must be one transaction is one call here (``DocumentStore.write`` applies
a bitemporal plan with its outbox rows) or one :class:`UnitOfWork` (a run-log append with
the rows it records, such as a review verdict).
"""

from __future__ import annotations

from app.ports.common import Clock, Planner, Progress, Vector
from app.ports.extraction import Extractor, PageRenderer
from app.ports.index import IndexFeed, IndexMaintenance
from app.ports.models import (
    BatchEmbedder,
    Embedder,
    Generator,
    Library,
    Reranker,
    ToolGenerator,
    VectorReranker,
)
from app.ports.retrieval import LexicalIndex, PassageStore, VectorIndex
from app.ports.runs import (
    LogWriter,
    ReviewStore,
    ReviewWriter,
    RunStore,
    Signer,
    ThresholdStore,
    Transactions,
    UnitOfWork,
)
from app.ports.store import DocumentStore, KeyStore, SourceStore, TenantStore

__all__ = [
    "BatchEmbedder",
    "Clock",
    "DocumentStore",
    "Embedder",
    "Extractor",
    "Generator",
    "IndexFeed",
    "IndexMaintenance",
    "KeyStore",
    "LexicalIndex",
    "Library",
    "LogWriter",
    "PageRenderer",
    "PassageStore",
    "Planner",
    "Progress",
    "Reranker",
    "ReviewStore",
    "ReviewWriter",
    "RunStore",
    "Signer",
    "SourceStore",
    "TenantStore",
    "ThresholdStore",
    "ToolGenerator",
    "Transactions",
    "UnitOfWork",
    "Vector",
    "VectorIndex",
    "VectorReranker",
]
