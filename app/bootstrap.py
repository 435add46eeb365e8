"""One place builds everything: ``bootstrap(settings)`` returns the wired services.

The Litestar app factory and the CLI both call it; there are no module-level singletons.
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from app.config import Settings
from app.services.access import AccessService
from app.services.documents import DocumentService
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

    def close(self) -> None:
        """Release the pool (the embedded PostgreSQL stops when its last user exits)."""
        self.pool.close()


def bootstrap(settings: Settings, *, run_migrations: bool = True) -> Services:
    """Build the services: database (embedded or configured), migrations, pool, use cases."""
    urls = database_urls(settings)
    if run_migrations and urls.migration_url:
        migrate(urls.migration_url)
    pool = open_pool(urls.app_url, min_size=settings.pool_min, max_size=settings.pool_max)
    store = PgStore(pool)
    return Services(settings=settings, urls=urls, pool=pool, store=store,
                    access=AccessService(store), documents=DocumentService(store))
