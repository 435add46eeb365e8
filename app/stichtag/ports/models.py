"""Ports of the model adapters (app/stichtag/models, app/stichtag/generators): embedder, reranker,
generator, the library of documents a generator may open."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from stichtag.domain.answer import Draft, Evidence
from stichtag.domain.generation import Generation, ToolResult
from stichtag.domain.salience import Aspect
from stichtag.ports.common import Vector


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
    run's as-of pair, within the run's tenant and clearance (app/stichtag/services/library.py)."""

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
