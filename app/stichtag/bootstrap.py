"""One place builds everything: ``bootstrap(settings)`` returns the wired services.

The Litestar app factory and the CLI both call it; there are no module-level singletons.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stichtag.audit.signing import FileSigner, load_public_key
from stichtag.clock import SystemClock
from stichtag.config import Settings
from stichtag.extract.adapter import PdfiumPageRenderer, RoomExtractor
from stichtag.generators.extractive import ExtractiveGenerator
from stichtag.generators.openai_compat import OpenAICompatGenerator
from stichtag.index.applier import Indexer
from stichtag.index.worker import Worker
from stichtag.metrics import Metrics
from stichtag.ports import Embedder, Generator, Reranker
from stichtag.services.access import AccessService
from stichtag.services.answer import AnswerService
from stichtag.services.changes import ChangesService
from stichtag.services.citations import CitationService, VersionCache
from stichtag.services.compare import CompareService
from stichtag.services.compare_replay import ComparingReplay
from stichtag.services.documents import DocumentService
from stichtag.services.erasure import ErasureService
from stichtag.services.evidence import EvidenceService
from stichtag.services.gaps import GapService
from stichtag.services.grounding import GroundingService
from stichtag.services.index_status import IndexStatusService
from stichtag.services.leverage import LeverageService
from stichtag.services.listing import ListingService
from stichtag.services.receipts import ReceiptService
from stichtag.services.replay import ReplayService
from stichtag.services.review import ReviewService
from stichtag.services.runlog import RunLog
from stichtag.services.runs import RunService
from stichtag.services.search import SearchService
from stichtag.services.sources import SourceService
from stichtag.services.thresholds import ThresholdService
from stichtag.store.database import DatabaseUnavailable, open_standby_pool, probe
from stichtag.store.embedded import (
    APP_ROLE,
    EmbeddedDatabase,
    EmbeddedStatus,
    embedded_status,
    release_embedded,
    start_embedded,
    stop_embedded,
)
from stichtag.store.migrate import migrate
from stichtag.store.pg import PgStore, open_pool

# DatabaseUnavailable is re-exported: the CLI reports it without importing the store.
__all__ = ["DatabaseUnavailable", "DatabaseUrls", "EmbeddedStatus", "ModelsMissing", "Services",
           "bootstrap", "database_urls", "embedded_status", "load_embedder", "load_generators",
           "load_reranker", "release_database", "stop_embedded"]


@dataclass(frozen=True, kw_only=True)
class DatabaseUrls:
    """Where the application connects, and where migrations run."""

    app_url: str
    migration_url: str | None
    embedded: EmbeddedDatabase | None


def database_urls(settings: Settings) -> DatabaseUrls:
    """Start the embedded PostgreSQL when no URL is configured."""
    if settings.database_url:
        return DatabaseUrls(app_url=settings.database_url,
                            migration_url=settings.migration_database_url, embedded=None)
    embedded = start_embedded(settings.pg_dir)
    return DatabaseUrls(app_url=embedded.url(role=APP_ROLE),
                        migration_url=embedded.url(role="postgres"), embedded=embedded)


def release_database(settings: Settings) -> None:
    """Let go of the embedded PostgreSQL (stopped when no other live process uses it);
    ``stichtag serve`` calls it on its way out. Nothing for an external database."""
    if not settings.database_url:
        release_embedded(settings.pg_dir)


def prepare_database(settings: Settings) -> DatabaseUrls:
    """Start the embedded PostgreSQL if used and migrate: what ``serve --workers`` does
    once, before its workers attach (the embedded server stays up while this process
    holds it)."""
    urls = database_urls(settings)
    if urls.migration_url:
        migrate(urls.migration_url)
    return urls


@dataclass(kw_only=True)
class Services:
    """The wired use cases and the resources they hold."""

    settings: Settings
    urls: DatabaseUrls
    store: PgStore
    clock: SystemClock
    access: AccessService
    documents: DocumentService
    changes: ChangesService
    indexer: Indexer
    worker: Worker
    search: SearchService
    thresholds: ThresholdService
    citations: CitationService
    answers: AnswerService | None
    runlog: RunLog
    runs: RunService
    replay: ReplayService | None
    gaps: GapService | None
    metrics: Metrics
    review: ReviewService
    sources: SourceService
    erasures: ErasureService
    grounding: GroundingService | None = None
    """The check of answers written elsewhere (docs/assistants.md)."""
    evidence: EvidenceService | None = None
    """Gated evidence for an outside formulator; None without the ONNX models."""
    leverage: LeverageService | None = None
    """The leverage of τ on the tenant's recorded answers (``calibrate --leverage``)."""
    compare: CompareService | None = None
    """Answers compared across two as-of pairs (needs the models, as answers do)."""
    receipts: ReceiptService
    """Answer receipts that verify offline."""
    index_status: IndexStatusService

    def close(self) -> None:
        """Stop the worker, close indexes and generators, release the pool (the embedded
        PostgreSQL stops with its last user)."""
        self.worker.stop()
        self.indexer.close()
        if self.answers is not None:
            for generator in self.answers.generators.values():
                closer = getattr(generator, "close", None)
                if closer is not None:
                    closer()
        self.store.close()


class ModelsMissing(RuntimeError):
    """The ONNX models are not built; ``stichtag models build`` builds them offline."""


def load_embedder(settings: Settings) -> Embedder:
    """The e5 embedder from the models directory (built by ``stichtag models build``)."""
    # onnxruntime loads only for commands that embed (the CLI's operator commands do not)
    from stichtag.models.embedder import OnnxEmbedder  # noqa: PLC0415

    model_dir = settings.models_dir / "e5-small"
    if not (model_dir / "manifest.json").is_file():
        raise ModelsMissing(f"no embedding model in {model_dir}; run: stichtag models build")
    return OnnxEmbedder(model_dir, variant=settings.embed_variant, threads=settings.onnx_threads)


_UNSET: Any = object()


def bootstrap(settings: Settings, *, run_migrations: bool = True,
              embedder: Embedder | None = _UNSET, fail_fast: bool = False,
              index_dir: Path | None = None, cross: Reranker | None = _UNSET) -> Services:
    """Build the services: database (embedded or configured), migrations, pool, use cases.

    ``embedder`` defaults to the ONNX model in the data directory; ``None`` runs without
    vector search (operator commands that never search). ``fail_fast`` (the CLI) tries
    one connection first and raises ``DatabaseUnavailable`` at once if it fails, where
    the server's pool waits for a database that is still starting. ``index_dir`` is
    where this process keeps its tantivy replicas (a server worker's slot; default
    ``settings.index_dir``). ``cross`` defaults to the cross-encoder the settings name
    (``load_cross_encoder``); tests pass one loaded once per session.
    """
    urls = database_urls(settings)
    if fail_fast:
        for url in dict.fromkeys((urls.migration_url if run_migrations else None, urls.app_url)):
            if url:
                probe(url)
    if run_migrations and urls.migration_url:
        migrate(urls.migration_url)
    if embedder is _UNSET:
        embedder = load_embedder(settings)
    pool = open_pool(urls.app_url, min_size=settings.pool_min, max_size=settings.pool_max)
    metrics = Metrics()
    read_pool = (open_standby_pool(settings.read_database_url, max_size=settings.pool_max)
                 if settings.read_database_url else None)
    store = PgStore(pool, read_pool=read_pool, read_wait=settings.read_wait,
                    count=metrics.count_replica_read, waited=metrics.replica_wait.observe,
                    lock_wait=settings.lock_wait)
    clock = SystemClock()
    indexer = Indexer(store.feed, store.retrieval, index_dir or settings.index_dir, embedder)
    runlog = RunLog(store.runs, FileSigner(settings.signing_key, previous=tuple(
        load_public_key(path) for path in settings.signing_key_previous)), clock)
    search = SearchService(indexer, store.retrieval, store.retrieval, embedder, runlog,
                           store.units, metrics, index_wait=settings.index_wait)
    thresholds = ThresholdService(store.runs)
    versions = VersionCache(store.documents)
    extractor = RoomExtractor()
    sources = SourceService(store.sources, renderer=PdfiumPageRenderer(), extractor=extractor,
                            documents=store.documents)
    answers = replay = gaps = evidence = compare = None
    grounding = GroundingService(store.documents, versions, runs=store.runs,
                                 thresholds=thresholds, runlog=runlog, units=store.units)
    changes = ChangesService(store.documents, versions, clock)
    runs = RunService(store.runs, documents=store.documents)
    if embedder is not None:
        answers = AnswerService(search, thresholds, versions, load_reranker(settings, embedder),
                                load_generators(settings), store.retrieval, runlog,
                                store.units, metrics, sources=sources,
                                listings=ListingService(search, store.documents),
                                cross=(load_cross_encoder(settings) if cross is _UNSET
                                       else cross))
        evidence = EvidenceService(answers)
        compare = CompareService(answers, changes, store.documents, runlog, store.units)
        replay = ComparingReplay(answers, store.runs, clock, compares=compare,
                                 documents=store.documents, grounding=grounding,
                                 evidence=evidence)
        gaps = GapService(store.runs, embedder, clock)
    return Services(
        settings=settings, urls=urls, store=store, clock=clock,
        access=AccessService(store.tenancy, store.tenancy, clock),
        documents=DocumentService(store.documents, clock, on_write=indexer.notify,
                                  extractor=extractor),
        changes=changes, indexer=indexer,
        worker=Worker(indexer), search=search, thresholds=thresholds,
        citations=CitationService(store.documents, versions, clock, sources=sources),
        answers=answers,
        runlog=runlog, runs=runs, replay=replay,
        gaps=gaps,
        metrics=metrics,
        review=ReviewService(store.review, store.documents, runlog, store.units, versions,
                             runs=store.runs),
        sources=sources,
        erasures=ErasureService(store.documents, runlog, store.units, clock,
                                forget=versions.forget, on_write=indexer.notify),
        grounding=grounding, evidence=evidence,
        leverage=LeverageService(store.runs, thresholds),
        compare=compare, receipts=ReceiptService(runs, store.runs, runlog, versions),
        index_status=IndexStatusService(indexer, embedder.model_hash if embedder else None))


def load_reranker(settings: Settings, embedder: Embedder) -> Reranker:
    """A configured ONNX cross-encoder, or the default stored-vector cosine."""
    # onnxruntime loads only when answering
    from stichtag.models.manifest import load_manifest  # noqa: PLC0415
    from stichtag.models.reranker import (  # noqa: PLC0415
        OnnxCrossEncoder,
        QueryEmbedder,
        StoredVectorReranker,
    )

    if settings.reranker_dir is not None:
        return OnnxCrossEncoder(settings.reranker_dir, threads=settings.onnx_threads)
    pair = settings.models_dir / "e5-small-pair"
    if not (pair / "manifest.json").is_file():
        raise ModelsMissing(f"no pair model in {pair}; run: stichtag models build")
    if not isinstance(embedder, QueryEmbedder):
        raise ModelsMissing("the default reranker needs the ONNX e5 embedder and its manifest")
    return StoredVectorReranker(embedder, load_manifest(pair))


def load_cross_encoder(settings: Settings) -> Reranker | None:
    """The cross-encoder every answer reads: ``STICHTAG_CROSS_ENCODER`` (``auto``, ``off``
    or a model directory); ``auto`` is the int8 student built by ``stichtag models build``
    (docs/models.md, "The student cross-encoder"), or none when it was not built."""
    from stichtag.models.cross_encoder import RERANK_NAME  # noqa: PLC0415
    from stichtag.models.reranker import OnnxCrossEncoder  # noqa: PLC0415

    choice = settings.cross_encoder
    if choice == "off":
        return None
    if choice == "auto":
        built = settings.models_dir / f"{RERANK_NAME}-int8"
        if not (built / "manifest.json").is_file():
            return None
        return OnnxCrossEncoder(built, threads=settings.onnx_threads)
    path = Path(choice)
    if not (path / "manifest.json").is_file():
        raise ModelsMissing(f"STICHTAG_CROSS_ENCODER={choice}: no manifest.json there")
    return OnnxCrossEncoder(path, threads=settings.onnx_threads)


def load_generators(settings: Settings) -> dict[str, Generator]:
    """The extractive generator always; openai-compatible when a URL is configured."""
    generators: dict[str, Generator] = {"extractive": ExtractiveGenerator()}
    if settings.generator_url:
        generators["openai-compatible"] = OpenAICompatGenerator(
            settings.generator_url, settings.generator_model, api_key=settings.generator_api_key,
            timeout=settings.generator_timeout, tools=settings.generator_tools)
    return generators
