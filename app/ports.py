"""The ports: what the use cases (app/services) need from the world, as Protocols.

Each port has a real adapter (PostgreSQL in app/store, tantivy and the outbox applier in
app/index, onnxruntime in app/models, the generators in app/generators), wired in
app/bootstrap.py, and an in-memory fake in tests/fakes.py for unit tests of the use
cases. Services import this module and app/domain only (tests/unit/test_architecture.py).

Everything that must be one transaction is one call here (``DocumentStore.write`` applies
a bitemporal plan with its outbox rows) or one :class:`UnitOfWork` (a run-log append with
the rows it records, such as a review verdict).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable
from uuid import UUID

import numpy as np
import numpy.typing as npt

from app.domain.answer import Draft, Evidence
from app.domain.asof import AsOf
from app.domain.bitemporal import Current, Plan
from app.domain.extraction import Extracted
from app.domain.generation import Generation, ToolResult
from app.domain.prepared import PreparedVersion
from app.domain.records import (
    AssertionRow,
    IndexStatus,
    KeyRow,
    LogHead,
    OriginalFile,
    RunRow,
    SourceUpload,
    TenantRow,
    ThresholdRow,
    VersionContent,
    VersionRow,
    VersionSource,
    WriteResult,
)
from app.domain.retrieval import Placement, PlacementKey
from app.domain.salience import Aspect, InForce

Vector = npt.NDArray[np.float32]
Planner = Callable[[list[Current]], Plan]
Progress = Callable[[str, int, int], None]
"""``(stage, done, total)`` of a long operation, for a progress bar."""


class Clock(Protocol):
    """The server's wall clock (aware UTC); fixed in unit tests."""

    def now(self) -> datetime:
        """The current instant."""
        ...


# -- tenants and keys ----------------------------------------------------------------------


class TenantStore(Protocol):
    """Tenants by id and by name."""

    def create_tenant(self, tenant_id: UUID, name: str, time_zone: str) -> TenantRow:
        """Insert a tenant; a taken name is a Conflict."""
        ...

    def tenant_by_name(self, name: str) -> TenantRow | None:
        """The tenant with this name (operator commands)."""
        ...

    def tenant(self, tenant_id: UUID) -> TenantRow:
        """The tenant row; NotFound when unknown."""
        ...


class KeyStore(Protocol):
    """API key rows (secrets only as hashes)."""

    def insert_key(self, tenant_id: UUID, **fields: Any) -> KeyRow:
        """Store a key row."""
        ...

    def lookup_key(self, key_id: str) -> tuple[KeyRow, str] | None:
        """The key row for a presented key id across tenants, with its tenant's time zone."""
        ...

    def list_keys(self, tenant_id: UUID) -> list[KeyRow]:
        """All keys of a tenant, newest first."""
        ...

    def revoke_key(self, tenant_id: UUID, key_id: str) -> bool:
        """Revoke now; False when unknown to this tenant or already revoked."""
        ...


# -- documents -----------------------------------------------------------------------------


class DocumentStore(Protocol):
    """The bitemporal store of documents, assertions and immutable versions."""

    def write(self, tenant_id: UUID, *, document_key: str, planner: Planner,
              version: PreparedVersion | None, tx_time: datetime | None,
              provenance: dict[str, Any], reason: str | None = None,
              create_document: bool = True, source: SourceUpload | None = None
              ) -> WriteResult:
        """Apply one bitemporal write (plan, version, outbox rows, clock) in one transaction;
        the planner sees the document's currently known assertions. ``source`` (the
        original the version was extracted from, with its layout map) is stored in the
        same transaction when the plan writes anything."""
        ...

    def assertion_asof(self, tenant_id: UUID, *, key: str, as_of: AsOf,
                       clearance: int) -> AssertionRow | None:
        """The assertion of ``key`` visible at the as-of pair within the clearance."""
        ...

    def history(self, tenant_id: UUID, *, key: str, clearance: int) -> list[AssertionRow]:
        """Every assertion of a document within the clearance."""
        ...

    def changes_window(self, tenant_id: UUID, *, known_from: datetime, known_to: datetime,
                       key: str | None, clearance: int, cap: int
                       ) -> tuple[list[AssertionRow], set[str]]:
        """Assertions starting or ending in ``(known_from, known_to]`` and which of their
        documents were known at ``known_from`` (one consistent read)."""
        ...

    def visible_versions(self, tenant_id: UUID, version_ids: Sequence[str], *,
                         clearance: int) -> set[str]:
        """Which of the versions have some assertion within the clearance (one read)."""
        ...

    def version_row(self, tenant_id: UUID, *, version_id: str,
                    clearance: int) -> VersionRow | None:
        """A version's row (no text), if some assertion of it is within the clearance."""
        ...

    def version_content(self, tenant_id: UUID, *, version_id: str,
                        clearance: int) -> VersionContent | None:
        """A version's text and sentences, if some assertion of it is within clearance."""
        ...

    def version_documents(self, tenant_id: UUID, *, version_id: str,
                          clearance: int) -> list[str]:
        """The document keys a version is asserted for, within the clearance."""
        ...

    def current_version(self, tenant_id: UUID, *, key: str, now: datetime,
                        clearance: int) -> str | None:
        """The version of a document in force now as known now, within the clearance."""
        ...


# -- originals and extraction ----------------------------------------------------------------


class Extractor(Protocol):
    """Turns the bytes of a PDF, HTML page or DOCX into a version's text and layout map
    (app/extract). CPU-bound and blocking: call it outside any transaction."""

    def sniff(self, data: bytes) -> str | None:
        """The media type the bytes are (magic bytes, never a file name), or None."""
        ...

    def extract(self, data: bytes, media_type: str | None, *,
                password: str | None = None) -> Extracted:
        """The extracted document; raises ExtractionRefused (``field``, ``reason``,
        ``limit``) for anything that cannot become a version. A declared ``media_type``
        must agree with the bytes; None sniffs it."""
        ...


class PageRenderer(Protocol):
    """Renders one page of a PDF original as a PNG (pdfium), for the console."""

    def render_png(self, data: bytes, page: int, *, max_pixels: int) -> bytes:
        """Page ``page`` (1-based), unrotated (the frame of the layout map's boxes), scaled
        so that its longer side has at most ``max_pixels`` pixels. Raises ExtractionRefused
        when the PDF cannot be opened (for example, it is encrypted)."""
        ...


class SourceStore(Protocol):
    """Originals (the uploaded bytes, content-addressed per tenant, immutable) and which
    version was extracted from which original, with its layout map."""

    def sources(self, tenant_id: UUID, version_ids: Sequence[str], *,
                clearance: int) -> dict[str, VersionSource]:
        """The first source of each version that has one and an assertion within the
        clearance (one read)."""
        ...

    def layout(self, tenant_id: UUID, *, version_id: str, original_id: str) -> bytes | None:
        """The serialized layout map of the version as extracted from that original."""
        ...

    def original(self, tenant_id: UUID, *, version_id: str, clearance: int,
                 original_id: str | None = None) -> OriginalFile | None:
        """The bytes of the version's first original (or of ``original_id``, one of its
        sources), if some assertion of the version is within the clearance."""
        ...


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

    def fresh(self, tenant_id: UUID) -> int:
        """Wait (bounded) until the index has applied every outbox row committed before
        the call, so a client reads its own writes; returns the applied sequence."""
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


class Embedder(Protocol):
    """The embedding model (e5 over ONNX)."""

    @property
    def model_hash(self) -> str: ...

    def embed_queries(self, texts: list[str]) -> Vector:
        """Unit vectors for queries (``query:`` prefix), one row per text."""
        ...

    def embed_passages(self, texts: list[str]) -> Vector:
        """Unit vectors for passages (``passage:`` prefix), one row per text."""
        ...


@runtime_checkable
class BatchEmbedder(Embedder, Protocol):
    """An embedder that hands out its passage batches as it computes them, so that the
    indexer can store one batch while the model computes the next."""

    def embed_batches(self, texts: list[str]) -> Iterator[tuple[list[int], Vector]]:
        """``(positions in texts, their vectors)`` per batch; every text exactly once."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Scores passages for a question; raw scores (a gate sees them calibrated)."""

    @property
    def model_hash(self) -> str: ...

    @property
    def label(self) -> str: ...

    def score(self, query: str, passages: Sequence[str]) -> Sequence[float]:
        """One raw score per passage."""
        ...


@runtime_checkable
class VectorReranker(Reranker, Protocol):
    """A reranker whose score follows from the query's and the passages' stored vectors
    (the default e5 pair graph: its score is their cosine)."""

    def score_vectors(self, query: Vector, passages: Vector) -> Sequence[float]:
        """One raw score per passage row."""
        ...


class Generator(Protocol):
    """Formulates an answer from the evidence it is given (and only from that)."""

    name: str
    deterministic: bool
    """True when the same question and evidence always give the same draft: replay then
    regenerates it; otherwise (an LLM) replay verifies the recorded draft."""

    def generate(self, question: str, evidence: Sequence[Evidence],
                 aspects: Sequence[Aspect] = ()) -> Draft:
        """The draft; raises GeneratorError when none can be produced. ``aspects`` are
        the question's salient aspects, which the answer should address."""
        ...

    def run(self, question: str, evidence: Sequence[Evidence],
            aspects: Sequence[Aspect] = ()) -> Generation:
        """The draft with the raw exchanges for the run record; raises GeneratorError."""
        ...


class Library(Protocol):
    """What a tool-calling generator may read during one run: the versions in force at the
    run's as-of pair, within the run's tenant and clearance (app/services/library.py)."""

    def call(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Run one tool call (``read_section``, ``read_document``, ``list_documents``);
        anything it cannot serve is a result with ``refused`` set, never an exception."""
        ...


@runtime_checkable
class ToolGenerator(Protocol):
    """A generator that can call tools (the openai-compatible one): ``run_with_tools``
    is ``Generator.run`` with the run's library; the results are in the Generation."""

    def run_with_tools(self, question: str, evidence: Sequence[Evidence],
                       aspects: Sequence[Aspect], library: Library) -> Generation:
        """The draft, the exchanges and every tool result; raises GeneratorError."""
        ...


# -- runs, the log, thresholds, review --------------------------------------------------------


class LogWriter(Protocol):
    """The run-log rows of one transaction (the head row is locked until it ends)."""

    def observe(self, known_at: datetime) -> datetime:
        """Move the observation hand of the tenant's transaction clock to ``known_at``
        (never back), after any write of the tenant in flight has ended; returns the hand
        (docs/architecture.md §3.6)."""
        ...

    def lock_head(self, empty_root: bytes) -> LogHead:
        """The tenant's log head, created empty if missing, locked: appends serialize."""
        ...

    def insert_leaf(self, *, run_id: UUID, kind: str, key_id: str, record: dict[str, Any],
                    seq: int, leaf: bytes) -> None:
        """Store a record as leaf ``seq``."""
        ...

    def set_head(self, head: LogHead) -> None:
        """Advance the head after an append."""
        ...


class ReviewWriter(Protocol):
    """Append-only review rows of one transaction."""

    def insert_sample(self, **fields: Any) -> None:
        """Store a sample's header."""
        ...

    def insert_items(self, items: Sequence[Mapping[str, Any]]) -> None:
        """Store a sample's items."""
        ...

    def insert_verdict(self, **fields: Any) -> datetime:
        """Store a verdict; its creation time. Conflict when the item was judged meanwhile."""
        ...


class UnitOfWork(Protocol):
    """One transaction of one tenant for what must commit together."""

    @property
    def log(self) -> LogWriter:
        """The run-log rows of this transaction."""
        ...

    @property
    def review(self) -> ReviewWriter:
        """The review rows of this transaction."""
        ...


class Transactions(Protocol):
    """Opens units of work."""

    def unit(self, tenant_id: UUID) -> AbstractContextManager[UnitOfWork]:
        """A unit of work: committed when the block ends, rolled back on an exception."""
        ...


class Signer(Protocol):
    """Signs log checkpoints with a key kept outside the database."""

    @property
    def name(self) -> str:
        """Where the key lives, for error messages (never the key)."""
        ...

    def sign(self, body: str) -> str:
        """The signed note of a checkpoint body."""
        ...

    def public_key_pem(self) -> str:
        """PEM of the verification key."""
        ...

    def signed_by_us(self, note: str) -> bool:
        """Whether this key (or a declared previous one) signed ``note``."""
        ...


class RunStore(Protocol):
    """Recorded runs and the stored log."""

    def run(self, tenant_id: UUID, run_id: UUID) -> RunRow | None:
        """One recorded run of the tenant."""
        ...

    def answer_runs(self, tenant_id: UUID, *, since: datetime) -> list[RunRow]:
        """Answer runs since ``since``, oldest first."""
        ...

    def abstained_questions(self, tenant_id: UUID, *, since: datetime, limit: int,
                            reasons: Sequence[str]) -> list[RunRow]:
        """Recent answer runs that abstained with one of ``reasons`` or recorded one of
        them as their gap (``result.gap``: a list answer that named nothing), newest
        first; each record's ``result.reason`` is the one that matched."""
        ...

    def log_head(self, tenant_id: UUID) -> LogHead | None:
        """The current head (None: nothing logged yet)."""
        ...

    def log_leaves(self, tenant_id: UUID, size: int) -> list[bytes]:
        """Leaf hashes in order, up to ``size``."""
        ...

    def log_records(self, tenant_id: UUID, size: int) -> list[dict[str, Any]]:
        """Records in order, up to ``size`` (for export)."""
        ...


class ThresholdStore(Protocol):
    """Versioned gate thresholds of a tenant."""

    def current_thresholds(self, tenant_id: UUID) -> ThresholdRow | None:
        """The newest version (None: the built-in defaults apply)."""
        ...

    def threshold_history(self, tenant_id: UUID) -> list[ThresholdRow]:
        """Every recorded version, oldest first."""
        ...

    def insert_thresholds(self, tenant_id: UUID, **fields: Any) -> ThresholdRow:
        """Record the next version (numbers serialized per tenant)."""
        ...


class ReviewStore(Protocol):
    """Reads of support-review samples (writes go through a UnitOfWork)."""

    def population(self, tenant_id: UUID, *, clearance: int, run_from: datetime,
                   run_to: datetime) -> list[tuple[UUID, dict[str, Any], datetime]]:
        """Answer runs that may be sampled: (run id, record, created at)."""
        ...

    def samples(self, tenant_id: UUID, *, clearance: int) -> list[dict[str, Any]]:
        """Sample headers within the clearance, newest first."""
        ...

    def sample(self, tenant_id: UUID, sample_id: UUID, *, clearance: int
               ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]] | None:
        """(header, items, verdicts) of one sample within the clearance."""
        ...


# -- derived indexes -------------------------------------------------------------------------


class IndexFeed(Protocol):
    """What the outbox applier reads from the store (app/index)."""

    def outbox_rows(self, tenant_id: UUID, after: int, limit: int) -> list[dict[str, Any]]:
        """Outbox rows after ``after`` in commit order."""
        ...

    def index_docs(self, tenant_id: UUID, assertion_ids: list[int], *,
                   part: int) -> Iterator[list[dict[str, Any]]]:
        """The index documents of the assertions, at most ``part`` per list, all read
        from one consistent state."""
        ...

    def outbox_head(self, tenant_id: UUID) -> int:
        """The newest outbox sequence (0 when empty)."""
        ...

    def indexable(self, tenant_id: UUID) -> Iterator[tuple[int, int, datetime | None]]:
        """Every (assertion, ordinal, tx_to) the lexical index should hold."""
        ...

    def pending_passages(self, tenant_id: UUID, *, model_hash: str, limit: int,
                         after: int = 0) -> list[tuple[int, str]]:
        """Passages still to embed with the model, oldest first, ids above ``after``:
        (id, text)."""
        ...

    def embedding_owner(self, tenant_id: UUID, *,
                        wait: bool) -> AbstractContextManager[bool]:
        """Own the tenant's embedding work for the block (one owner per tenant across
        every process on the database); yields ``False`` when another process owns it
        and ``wait`` is false."""
        ...

    def pending_count(self, tenant_id: UUID, *, model_hash: str) -> int:
        """How many passages still lack a vector of the model."""
        ...


class IndexMaintenance(Protocol):
    """Operator work on a tenant's derived indexes (the CLI, tests, benchmarks)."""

    def catch_up(self, tenant_id: UUID, *, progress: Progress | None = None) -> IndexStatus:
        """Bring the lexical index and every embedding fully up to date; ``progress`` is
        told ``(stage, done, total)`` along the way."""
        ...

    def status(self, tenant_id: UUID) -> IndexStatus:
        """How far the derived indexes are behind PostgreSQL."""
        ...

    def rebuild(self, tenant_id: UUID) -> int:
        """Recreate the lexical index from PostgreSQL; the applied sequence."""
        ...

    def check(self, tenant_id: UUID) -> dict[str, Any]:
        """Compare the lexical index with PostgreSQL."""
        ...

    def notify(self, tenant_id: UUID) -> None:
        """Wake the background worker for a tenant (writes and pending embeddings)."""
        ...
