"""Settings: one frozen dataclass, read once from ``STICHTAG_*`` environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal


class SettingsError(ValueError):
    """A setting that cannot be used; the message names the variable."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Server and CLI configuration. Every field maps to ``STICHTAG_<NAME>``."""

    data_dir: Path = field(default_factory=lambda: Path(".data").resolve())
    """Holds the embedded database, the tantivy indexes, the models and the signing key."""

    database_url: str | None = None
    """PostgreSQL URL for the application role; unset means the embedded PostgreSQL."""

    migration_database_url: str | None = None
    """URL of the role that owns the schema and runs migrations (external databases only)."""

    read_database_url: str | None = None
    """URL of a hot standby of that database for the application role; set, as-of reads of
    search, answers and documents go there when it is exact for them (docs/operations.md,
    "Read replicas"). Writes and run-log appends always go to the primary."""

    read_wait: float = 0.5
    """Seconds a read waits for the standby to replay what the primary has flushed before
    it goes to the primary instead (``STICHTAG_READ_WAIT``)."""

    lock_wait: float = 10.0
    """Most seconds a request's statement waits for a row lock, above all the tenant's
    write clock while another write of the tenant is in flight (``STICHTAG_LOCK_WAIT``);
    then the request ends in 503 with ``Retry-After`` and ``limit: tenant_write``."""

    index_wait: float = 30.0
    """Most seconds a search or answer with ``wait_for_index`` waits for the embedding and
    lexical backlog at its as-of pair (``STICHTAG_INDEX_WAIT``); then it runs, flagged."""

    host: str = "127.0.0.1"
    """Interface the HTTP server binds to."""

    metrics_listen: str = "off"
    """Where the operator's ``/metrics`` listener binds (``STICHTAG_METRICS_LISTEN``,
    ``HOST:PORT`` or ``off``); worker slot N of ``serve --workers`` adds N to the port.
    From the environment the default is ``127.0.0.1:9108``; settings built in code (tests,
    benchmarks, an embedding application) bind nothing unless they say where."""

    metrics_key: str | None = None
    """With it set (``STICHTAG_METRICS_KEY``), the public listener also answers
    ``/metrics`` to ``Authorization: Bearer <key>``; unset, it answers 404 there."""

    port: int = 8000
    """TCP port of the HTTP server."""

    log_format: Literal["json", "console"] = "console"
    """``json`` for production log shipping, ``console`` for people."""

    log_level: str = "info"
    """Minimum log level."""

    max_body_bytes: int = 16 * 2**20
    """Largest accepted request body; larger bodies get 413 before they are read whole."""

    pool_min: int = 1
    """Minimum connections in the application pool."""

    pool_max: int = 8
    """Maximum connections in the application pool."""

    embed_variant: Literal["int8", "float"] = "int8"
    """ONNX graph for embeddings: dynamic int8 (about 2x faster, cosine >= 0.99) or float."""

    onnx_threads: int = 2
    """Threads per ONNX session (bounded so requests and the indexer share the cores)."""

    rate_per_second: float = 10.0
    """Requests per second each API key may sustain (a token bucket per verified key id);
    ``0`` switches the per-key rate limit off (local use only)."""

    rate_burst: int = 50
    """Requests a key may send at once above its rate (the bucket's size)."""

    rate_tenant_inflight: int | None = None
    """Expensive requests (answer, search, ingest, replay) one tenant may run at once on
    this node; unset = half the node's cores (at least 1), see ``tenant_inflight``."""

    rate_tenant_queue: int = 16
    """Expensive requests of one tenant that may wait for a slot; more get 429."""

    rate_node_inflight: int | None = None
    """Expensive requests this node runs at once over all tenants; unset = ``pool_max - 2``
    (at least 1), so cheap reads and key lookups always find a database connection."""

    rate_node_queue: int = 64
    """Expensive requests that may wait on this node over all tenants; more get 503."""

    rate_queue_timeout: float = 2.0
    """Seconds a request waits in a queue for a slot before it is refused (429 or 503)."""

    rate_refusal_delay: float = 1.0
    """Seconds a repeated refusal (a token refused again within seconds, a client that
    ignores Retry-After) is held back before it is sent, never past its Retry-After;
    0 sends it at once."""

    workers: int = 1
    """Server processes of ``stichtag serve`` on this node (``--workers``)."""

    @property
    def tenant_inflight(self) -> int:
        """A tenant's slot count (``rate_tenant_inflight`` or derived, at most the node's).

        The expensive operations are CPU-bound, so a tenant's share is counted in cores:
        running on at most half of them, it always leaves another tenant a core (on 2
        cores one request at a time; a flood then costs the other tenant one competing
        request, not three). A node that serves one tenant raises it.
        """
        if self.rate_tenant_inflight is not None:
            return self.rate_tenant_inflight
        return max(1, min((os.cpu_count() or 2) // 2, self.node_inflight))

    @property
    def node_inflight(self) -> int:
        """The node's slot count for expensive requests (``rate_node_inflight`` or derived)."""
        if self.rate_node_inflight is not None:
            return self.rate_node_inflight
        return max(1, self.pool_max - 2)

    @property
    def signing_key(self) -> Path:
        """Path of the checkpoint signing key."""
        return self.signing_key_path or self.data_dir / "signing.key"

    @property
    def pg_dir(self) -> Path:
        """Data directory of the embedded PostgreSQL."""
        return self.data_dir / "pg"

    @property
    def index_dir(self) -> Path:
        """Root of the per-tenant tantivy indexes."""
        return self.data_dir / "index"

    reranker_dir: Path | None = None
    """A Hugging Face cross-encoder exported to ONNX (manifest.json, tokenizer.json, the
    graph); unset = the default: cosine of the stored e5 vectors (labelled as such)."""

    cross_encoder: str = "auto"
    """``STICHTAG_CROSS_ENCODER``: the cross-encoder every answer reads (the ``cross``
    feature of gate 1, docs/models.md "The student cross-encoder"). ``auto``: the int8
    student that ``stichtag models build`` assembles into the models directory (absent:
    none); ``off``: none (thresholds that read ``cross`` then refuse, fail-closed); or the
    path of a cross-encoder model directory."""

    generator_url: str | None = None
    """Base URL of an OpenAI-compatible chat-completions server; enables ``openai-compatible``."""

    generator_model: str = "default"
    """Model name sent to that server."""

    generator_api_key: str | None = None
    """Bearer token for that server (never written to run records or logs)."""

    generator_timeout: float = 20.0
    """Seconds per request phase before the generator retries, then abstains."""

    generator_tools: bool = False
    """Offer that server the tools read_section, read_document and list_documents
    (``STICHTAG_GENERATOR_TOOLS=on``; chat-completions tool calling, docs/architecture.md §7). Off
    by
    default: not every server supports tool calling."""

    signing_key_path: Path | None = None
    """Ed25519 key that signs run-log checkpoints (``STICHTAG_SIGNING_KEY``); it must live
    outside the database. Default ``<data dir>/signing.key``, created with mode 0600."""

    signing_key_previous: tuple[Path, ...] = ()
    """Public keys (PEM files, ``STICHTAG_SIGNING_KEY_PREVIOUS``, comma-separated) of signing
    keys rotated out: a log head one of them signed may be extended with the current key.
    Without it a node refuses to extend a log that another key signed (two nodes with
    different keys would leave checkpoints no single key verifies)."""

    models_path: Path | None = None
    """Where the ONNX models live (``STICHTAG_MODELS_DIR``); default ``<data dir>/models``."""

    @property
    def models_dir(self) -> Path:
        """Where ``stichtag models build`` puts the ONNX models."""
        return self.models_path or self.data_dir / "models"


def _int(env: Mapping[str, str], name: str, default: int, *, minimum: int = 0) -> int:
    raw = env.get(f"STICHTAG_{name}")
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise SettingsError(f"STICHTAG_{name}: expected an integer, got {raw!r}") from exc
    if value < minimum:
        raise SettingsError(f"STICHTAG_{name}: must be >= {minimum}, got {value}")
    return value


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read settings from the environment (or ``env``), validating each value."""
    source = os.environ if env is None else env
    log_format = source.get("STICHTAG_LOG_FORMAT", "console")
    if log_format not in ("json", "console"):
        raise SettingsError(f"STICHTAG_LOG_FORMAT: expected json or console, got {log_format!r}")
    data_dir = Path(source.get("STICHTAG_DATA_DIR") or ".data").expanduser().resolve()
    settings = Settings(
        data_dir=data_dir,
        database_url=source.get("STICHTAG_DATABASE_URL") or None,
        migration_database_url=source.get("STICHTAG_MIGRATION_DATABASE_URL") or None,
        read_database_url=source.get("STICHTAG_READ_DATABASE_URL") or None,
        read_wait=_float(source, "READ_WAIT", 0.5),
        index_wait=_float(source, "INDEX_WAIT", 30.0),
        lock_wait=_float(source, "LOCK_WAIT", 10.0, minimum=0.001),
        host=source.get("STICHTAG_HOST", "127.0.0.1"),
        metrics_listen=_listen(source, "METRICS_LISTEN", "127.0.0.1:9108"),
        metrics_key=source.get("STICHTAG_METRICS_KEY") or None,
        port=_int(source, "PORT", 8000, minimum=0),
        log_format=log_format,  # type: ignore[arg-type]
        log_level=source.get("STICHTAG_LOG_LEVEL", "info"),
        max_body_bytes=_int(source, "MAX_BODY_BYTES", 16 * 2**20, minimum=1024),
        pool_min=_int(source, "POOL_MIN", 1, minimum=1),
        pool_max=_int(source, "POOL_MAX", 8, minimum=1),
        embed_variant=_choice(source, "EMBED_VARIANT", ("int8", "float"), "int8"),  # type: ignore[arg-type]
        onnx_threads=_int(source, "ONNX_THREADS", 2, minimum=1),
        models_path=_path(source, "MODELS_DIR"),
        reranker_dir=_path(source, "RERANKER_DIR"),
        cross_encoder=source.get("STICHTAG_CROSS_ENCODER") or "auto",
        signing_key_path=_path(source, "SIGNING_KEY"),
        signing_key_previous=tuple(
            Path(part.strip()).expanduser().resolve()
            for part in (source.get("STICHTAG_SIGNING_KEY_PREVIOUS") or "").split(",")
            if part.strip()),
        generator_url=source.get("STICHTAG_GENERATOR_URL") or None,
        generator_model=source.get("STICHTAG_GENERATOR_MODEL") or "default",
        generator_api_key=source.get("STICHTAG_GENERATOR_API_KEY") or None,
        generator_timeout=float(_int(source, "GENERATOR_TIMEOUT", 20, minimum=1)),
        generator_tools=_choice(source, "GENERATOR_TOOLS", ("on", "off"), "off") == "on",
        rate_per_second=_float(source, "RATE_PER_SECOND", 10.0),
        rate_burst=_int(source, "RATE_BURST", 50, minimum=1),
        rate_tenant_inflight=(_int(source, "RATE_TENANT_INFLIGHT", 1, minimum=1)
                              if source.get("STICHTAG_RATE_TENANT_INFLIGHT") else None),
        rate_tenant_queue=_int(source, "RATE_TENANT_QUEUE", 16, minimum=0),
        rate_node_inflight=(_int(source, "RATE_NODE_INFLIGHT", 1, minimum=1)
                            if source.get("STICHTAG_RATE_NODE_INFLIGHT") else None),
        rate_node_queue=_int(source, "RATE_NODE_QUEUE", 64, minimum=0),
        rate_queue_timeout=_float(source, "RATE_QUEUE_TIMEOUT", 2.0, minimum=0.01),
        rate_refusal_delay=_float(source, "RATE_REFUSAL_DELAY", 1.0),
        workers=_int(source, "WORKERS", 1, minimum=1),
    )
    # An explicit per-tenant cap above the node's slots is a mistake worth a refusal; the
    # default one is simply capped at the node's slots (see app/stichtag/api/limits.py).
    if (source.get("STICHTAG_RATE_TENANT_INFLIGHT")
            and settings.tenant_inflight > settings.node_inflight):
        raise SettingsError(
            f"STICHTAG_RATE_TENANT_INFLIGHT ({settings.tenant_inflight}) exceeds the node's "
            f"{settings.node_inflight} slots (STICHTAG_RATE_NODE_INFLIGHT, default "
            "STICHTAG_POOL_MAX - 2): one tenant could then take the whole node")
    return settings


def _float(env: Mapping[str, str], name: str, default: float, *, minimum: float = 0.0) -> float:
    raw = env.get(f"STICHTAG_{name}")
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise SettingsError(f"STICHTAG_{name}: expected a number, got {raw!r}") from exc
    if not value >= minimum or value == float("inf"):
        raise SettingsError(f"STICHTAG_{name}: must be a finite number >= {minimum}, got {raw!r}")
    return value


def _path(env: Mapping[str, str], name: str) -> Path | None:
    raw = env.get(f"STICHTAG_{name}")
    return Path(raw).expanduser().resolve() if raw else None


def _choice(env: Mapping[str, str], name: str, options: tuple[str, ...], default: str) -> str:
    raw = env.get(f"STICHTAG_{name}") or default
    if raw not in options:
        raise SettingsError(f"STICHTAG_{name}: expected one of {', '.join(options)}, got {raw!r}")
    return raw


def _listen(env: Mapping[str, str], name: str, default: str) -> str:
    raw = env.get(f"STICHTAG_{name}") or default
    host, sep, port = raw.strip().rpartition(":")
    if raw.strip().lower() != "off" and (not sep or not host or not port.isdigit()
                                         or int(port) > 65535):
        raise SettingsError(f"STICHTAG_{name}: expected HOST:PORT or off, got {raw!r}")
    return raw.strip()
