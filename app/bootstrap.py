"""One place builds everything: ``bootstrap(settings)`` returns the wired services.

The Litestar app factory and the CLI both call it; there are no module-level singletons.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg_pool import ConnectionPool

from app.audit.signing import load_public_key
from app.config import Settings
from app.metrics import Metrics
from app.generators.base import Generator
from app.services.access import AccessService
from app.services.answer import AnswerService
from app.services.changes import ChangesService
from app.services.citations import CitationService, VersionCache
from app.services.documents import DocumentService
from app.services.indexer import Embedder, Indexer
from app.services.replay import ReplayService
from app.services.review import ReviewService
from app.services.runlog import RunLog
from app.services.search import SearchService
from app.services.thresholds import ThresholdService
from app.store.embedded import APP_ROLE, EmbeddedDatabase, start_embedded
from app.store.migrate import migrate
from app.store.pg import PgStore, open_pool


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


@dataclass(kw_only=True)
class Services:
    """The wired use cases and the resources they hold."""

    settings: Settings
    urls: DatabaseUrls
    pool: ConnectionPool
    store: PgStore
    access: AccessService
    documents: DocumentService
    changes: ChangesService
    indexer: Indexer
    search: SearchService
    thresholds: ThresholdService
    citations: CitationService
    answers: AnswerService | None
    runlog: RunLog
    replay: ReplayService | None
    metrics: Metrics
    review: ReviewService

    def close(self) -> None:
        """Stop the indexer and release the pool (the embedded PostgreSQL stops with its last user)."""
        self.indexer.stop()
        if self.answers is not None:
            for generator in self.answers.generators.values():
                closer = getattr(generator, "close", None)
                if closer is not None:
                    closer()
        self.pool.close()


class ModelsMissing(RuntimeError):
    """The ONNX models are not built; ``stichtag models build`` builds them offline."""


def load_embedder(settings: Settings) -> Embedder:
    """The e5 embedder from the models directory (built by ``stichtag models build``)."""
    from app.models.embedder import OnnxEmbedder

    model_dir = settings.models_dir / "e5-small"
    if not (model_dir / "manifest.json").is_file():
        raise ModelsMissing(f"no embedding model in {model_dir}; run: stichtag models build")
    return OnnxEmbedder(model_dir, variant=settings.embed_variant, threads=settings.onnx_threads)


_UNSET: Any = object()


def bootstrap(settings: Settings, *, run_migrations: bool = True,
              embedder: Embedder | None = _UNSET) -> Services:
    """Build the services: database (embedded or configured), migrations, pool, use cases.

    ``embedder`` defaults to the ONNX model in the data directory; ``None`` runs without
    vector search (operator commands that never search).
    """
    urls = database_urls(settings)
    if run_migrations and urls.migration_url:
        migrate(urls.migration_url)
    if embedder is _UNSET:
        embedder = load_embedder(settings)
    pool = open_pool(urls.app_url, min_size=settings.pool_min, max_size=settings.pool_max)
    store = PgStore(pool)
    indexer = Indexer(store, settings.index_dir, embedder)
    runlog = RunLog(store, settings.signing_key, previous=tuple(
        load_public_key(path) for path in settings.signing_key_previous))
    search = SearchService(store, indexer, runlog)
    thresholds = ThresholdService(store)
    versions = VersionCache(store)
    answers = None
    metrics = Metrics()
    if embedder is not None:
        answers = AnswerService(store, search, thresholds, versions,
                                load_reranker(settings, embedder), load_generators(settings),
                                metrics)
    return Services(settings=settings, urls=urls, pool=pool, store=store,
                    access=AccessService(store),
                    documents=DocumentService(store, on_write=indexer.notify),
                    changes=ChangesService(store, versions),
                    indexer=indexer, search=search, thresholds=thresholds,
                    citations=CitationService(store, versions), answers=answers, runlog=runlog,
                    replay=ReplayService(answers) if answers is not None else None,
                    metrics=metrics, review=ReviewService(store, runlog, versions))


def load_reranker(settings: Settings, embedder: Embedder) -> Any:
    """A configured ONNX cross-encoder, or the default stored-vector cosine."""
    from app.models.manifest import load_manifest
    from app.models.reranker import OnnxCrossEncoder, StoredVectorReranker

    if settings.reranker_dir is not None:
        return OnnxCrossEncoder(settings.reranker_dir, threads=settings.onnx_threads)
    pair = settings.models_dir / "e5-small-pair"
    if not (pair / "manifest.json").is_file():
        raise ModelsMissing(f"no pair model in {pair}; run: stichtag models build")
    return StoredVectorReranker(embedder, load_manifest(pair))  # type: ignore[arg-type]


def load_generators(settings: Settings) -> dict[str, Generator]:
    """The extractive generator always; openai-compatible when a URL is configured."""
    from app.generators.extractive import ExtractiveGenerator

    generators: dict[str, Generator] = {"extractive": ExtractiveGenerator()}
    if settings.generator_url:
        from app.generators.openai_compat import OpenAICompatGenerator

        generators["openai-compatible"] = OpenAICompatGenerator(
            settings.generator_url, settings.generator_model, api_key=settings.generator_api_key,
            timeout=settings.generator_timeout)
    return generators
