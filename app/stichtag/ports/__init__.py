"""The ports: what the use cases (app/stichtag/services) need from the world, as Protocols.

Each port has a real adapter (PostgreSQL in app/stichtag/store, tantivy and the outbox applier in
app/stichtag/index, onnxruntime in app/stichtag/models, the generators in app/stichtag/generators),
wired in
app/stichtag/bootstrap.py, and an in-memory fake in tests/fakes.py for unit tests of the use
cases. Services import this package and app/stichtag/domain only (tests/unit/test_architecture.py).

Everything that must be one transaction is one call here (``DocumentStore.write`` applies
a bitemporal plan with its outbox rows) or one :class:`UnitOfWork` (a run-log append with
the rows it records, such as a review verdict).
"""

from __future__ import annotations

from stichtag.ports.common import Clock, Planner, Progress, Vector
from stichtag.ports.extraction import Extractor, PageRenderer
from stichtag.ports.index import IndexFeed, IndexMaintenance
from stichtag.ports.models import (
    BatchEmbedder,
    Embedder,
    Generator,
    Library,
    Reranker,
    ToolGenerator,
    VectorReranker,
)
from stichtag.ports.retrieval import LexicalIndex, PassageStore, VectorIndex
from stichtag.ports.runs import (
    ErasureWriter,
    LogWriter,
    ReviewStore,
    ReviewWriter,
    RunStore,
    Signer,
    ThresholdStore,
    Transactions,
    UnitOfWork,
)
from stichtag.ports.store import DocumentStore, KeyStore, SourceStore, TenantStore

__all__ = [
    "BatchEmbedder",
    "Clock",
    "DocumentStore",
    "Embedder",
    "ErasureWriter",
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
