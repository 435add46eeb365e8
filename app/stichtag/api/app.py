"""The Litestar app factory: routes, dependencies, errors, lifespan."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from uuid import UUID

import anyio.to_thread
import msgspec
import structlog
from litestar import Litestar, Request, Response, asgi, get
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import NotFoundException
from litestar.middleware import ASGIMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from stichtag.api.answers import (
    AnswerController,
    CitationController,
    GapController,
    ReplayController,
    RunController,
    ThresholdController,
)
from stichtag.api.changes import ChangeController, VersionDiffController
from stichtag.api.compare import CompareController
from stichtag.api.console import CONSOLE_ROUTES
from stichtag.api.deps import principal, request_tenant, services
from stichtag.api.documents import DocumentController, VersionController
from stichtag.api.errors import EXCEPTION_HANDLERS
from stichtag.api.grounding import GroundingController
from stichtag.api.index import IndexController
from stichtag.api.keys import KeyController
from stichtag.api.ledger import SharedLedger, claim_slot
from stichtag.api.limits import Admission, Limits, key_rate
from stichtag.api.log import LogController
from stichtag.api.metrics_listener import MetricsListener, parse_listen
from stichtag.api.nul import reject_nul
from stichtag.api.openapi import document_problems
from stichtag.api.receipts import ReceiptController
from stichtag.api.review import ReviewController
from stichtag.api.schemas import Health
from stichtag.api.search import SearchController
from stichtag.assistant.http import PATH as MCP_PATH
from stichtag.assistant.http import McpMount
from stichtag.bootstrap import Services, bootstrap
from stichtag.config import Settings, load_settings
from stichtag.logging import configure_logging
from stichtag.metrics import count_request
from stichtag.store.replica import (
    CONSISTENCY_HEADER,
    BadToken,
    RequestReads,
    parse_token,
    request_reads,
)


@get("/healthz", operation_id="healthz", tags=["ops"], sync_to_thread=False)
def healthz() -> Health:
    """Liveness: the process answers."""
    return Health(status="ok")


@get("/readyz", operation_id="readyz", tags=["ops"], sync_to_thread=True)
def readyz(state: State) -> Any:
    """Readiness: the database answers through the application role. With a standby
    (``STICHTAG_READ_DATABASE_URL``) the checks also say how far it is behind; a standby
    behind or down leaves the node ready, its reads then go to the primary."""
    svc: Services = state.services
    try:
        with svc.store.pool.connection(timeout=2) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return Response(Health(status="unavailable", checks={"database": type(exc).__name__}),
                        status_code=503)
    return Health(status="ok", checks={"database": "ok", **replica_checks(svc)})


def replica_checks(svc: Services) -> dict[str, str]:
    """The standby's state for /readyz (empty without one), refreshing its gauges."""
    router = svc.store.replica
    if router is None:
        return {}
    st = router.status()
    svc.metrics.observe_replica_status(reachable=st.reachable, lag_bytes=st.lag_bytes,
                                       lag_seconds=st.lag_seconds, paused=st.paused)
    if not st.reachable:
        return {"replica": "unreachable"}
    state = "paused" if st.paused else ("ok" if st.lag_bytes == 0 else "behind")
    return {"replica": state, "replica_lag_bytes": str(st.lag_bytes),
            "replica_lag_seconds": f"{st.lag_seconds:.3f}"}


@get("/metrics", operation_id="metrics", tags=["ops"], sync_to_thread=True,
     media_type="text/plain; version=0.0.4")
def metrics_endpoint(state: State, request: Request[Any, Any, Any]) -> Any:
    """Prometheus metrics of this node (no tenant labels; see app/stichtag/metrics.py), on
    this listener only to ``Authorization: Bearer <STICHTAG_METRICS_KEY>``: the operator's
    own listener serves them (STICHTAG_METRICS_LISTEN). Anyone else gets 404."""
    svc: Services = state.services
    key = svc.settings.metrics_key
    offered = request.headers.get("authorization", "").partition(" ")[2].strip()
    if key is None or not hmac.compare_digest(offered.encode(), key.encode()):
        raise NotFoundException
    return Response(render_metrics(svc), media_type="text/plain; version=0.0.4")


def render_metrics(svc: Services) -> bytes:
    """The node's metrics after refreshing the gauges read at scrape time."""
    replica_checks(svc)
    index_backlog(svc)
    return svc.metrics.render()


def index_backlog(svc: Services) -> None:
    """The index backlog gauges: sums over the tenants this process keeps replicas of,
    no tenant label (docs/operations.md, "Metrics and dashboards")."""
    pending = lexical = filling = 0
    for tenant_id in svc.indexer.held():
        status = svc.indexer.status(tenant_id)
        behind = max(0, status.outbox_seq - status.lexical_seq)
        pending += status.pending_embeddings
        lexical += behind
        filling += bool(behind or status.pending_embeddings)
    svc.metrics.index_pending_embeddings.set(pending)
    svc.metrics.index_lexical_pending.set(lexical)
    svc.metrics.index_filling.set(filling)


def create_app(settings: Settings, *, built: Services | None = None,
               on_close: Callable[[], None] | None = None) -> Litestar:
    """Build the ASGI app; services come from ``bootstrap`` in the lifespan unless given."""

    holder: dict[str, Services] = {}
    limits = build_limits(settings)
    # MCP over streamable HTTP (docs/assistants.md): its tool calls come back into this
    # app with the caller's key, so the API's rules are its rules.
    built_app: list[Litestar] = []
    mcp = McpMount(lambda: built_app[0], lambda: holder["svc"].access)

    @asgi(MCP_PATH, is_mount=True, copy_scope=True)
    async def mcp_endpoint(scope: Any, receive: Any, send: Any) -> None:
        await mcp(scope, receive, send)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        # This process's worker slot on the node: its row of the shared admission counts
        # and its own tantivy replicas (app/stichtag/api/ledger.py). A node with several
        # server processes is several nodes to the index, one node to the limits.
        run_dir = settings.data_dir / "run"
        slot = claim_slot(run_dir)
        ledger = SharedLedger(run_dir / "admission", slot.number)
        limits.admission.attach(ledger)
        try:
            svc = (built if built is not None
                   else bootstrap(settings, index_dir=slot.index_dir(settings.data_dir)))
        except BaseException:
            ledger.close()
            slot.release()
            raise
        app.state.services = svc
        holder["svc"] = svc
        svc.metrics.worker_slot.set(slot.number)
        listener = _metrics_listener(settings, slot.number, svc)
        svc.worker.start()
        try:
            async with mcp.running():
                yield
        finally:
            if listener is not None:
                listener.close()
            if built is None:
                svc.close()
            else:
                svc.worker.stop()
            ledger.close()
            slot.release()
            if on_close is not None:
                on_close()

    app = Litestar(
        route_handlers=[healthz, readyz, metrics_endpoint, DocumentController, VersionController,
                        KeyController, SearchController, AnswerController, CompareController,
                        CitationController, ReceiptController,
                        RunController, ThresholdController, LogController, ReplayController,
                        GapController, ChangeController, VersionDiffController, ReviewController,
                        GroundingController, IndexController, mcp_endpoint,
                        *CONSOLE_ROUTES],
        dependencies={
            "svc": Provide(services, sync_to_thread=False),
            "who": Provide(principal),
        },
        exception_handlers=EXCEPTION_HANDLERS,
        state=State({"limits": limits}),
        before_request=reject_nul,
        middleware=[_metrics_middleware(holder)],
        lifespan=[lifespan],
        # Logging is configured once by stichtag.logging (structlog renders stdlib records too);
        # Litestar's default would replace the root handler with its own plain format.
        logging_config=None,
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="stichtag", version="0.1.0",
            description="Bitemporal, versioned knowledge base: answers as of a Stichtag.",
            components=Components(security_schemes={
                "bearer": SecurityScheme(type="http", scheme="bearer",
                                         description="API key: stk_<id>_<secret>")}),
            security=[{"bearer": []}],
        ),
    )
    # The generated document is built once, now that every route is registered; the
    # served /schema/openapi.json is rendered from this same object.
    document_problems(app.openapi_schema)
    built_app.append(app)
    return app


def app_from_environment() -> Litestar:
    """The app of one worker process of ``stichtag serve --workers N`` (uvicorn's factory):
    settings from the environment the parent passed on, logging as the parent's."""
    settings = load_settings()
    configure_logging(settings, stream="stdout")
    return create_app(settings)


def build_limits(settings: Settings) -> Limits:
    """The per-key rate and the admission slots; the lifespan attaches the node's shared
    admission counts (app/stichtag/api/ledger.py) before the first request."""
    return Limits(
        key_rate(settings.rate_per_second, settings.rate_burst),
        Admission(tenant_slots=settings.tenant_inflight,
                  tenant_queue=settings.rate_tenant_queue,
                  node_slots=settings.node_inflight, node_queue=settings.rate_node_queue,
                  wait_seconds=settings.rate_queue_timeout),
        refusal_delay=settings.rate_refusal_delay)


def _metrics_middleware(holder: dict[str, Services]) -> Any:
    """Count requests once the services (and their registry) exist."""
    class _Count(ASGIMiddleware):
        async def handle(self, scope: Any, receive: Any, send: Any, next_app: Any) -> None:
            svc = holder.get("svc")
            if svc is None:
                await next_app(scope, receive, send)
                return
            await count_request(svc.metrics, scope, receive, send,
                                _consistent(svc, next_app))

    return _Count()


_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _consistent(svc: Services, next_app: Any) -> Any:
    """The consistency token: a successful write answers ``Stichtag-Consistency: <n>``, the
    tenant's outbox position after it; a request that sends it back never reads from a
    standby that lacks that position (app/stichtag/store/replica.py). A per-tenant number, not
    a WAL position, which would count every tenant's writes (docs/architecture.md §9)."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await next_app(scope, receive, send)
            return
        raw = next((v for k, v in scope.get("headers", ()) if k == CONSISTENCY_HEADER_B), None)
        token = None
        if raw is not None:
            try:
                token = parse_token(raw.decode("latin-1"))
            except BadToken as exc:
                await _bad_token(send, str(exc))
                return
        write = scope.get("method") in _WRITES
        caller: list[UUID] = []

        async def stamp(message: Any) -> None:
            if message["type"] == "http.response.start" and write and caller \
                    and 200 <= message["status"] < 300:
                try:
                    head = await anyio.to_thread.run_sync(svc.store.feed.outbox_head, caller[0])
                except Exception:  # the write has committed: answer it, without a token
                    head = None
                if head is not None:
                    message = {**message, "headers": [
                        *message.get("headers", ()),
                        (CONSISTENCY_HEADER_B, str(head).encode("ascii"))]}
            await send(message)

        reset = request_reads.set(RequestReads(token=token))
        reset_caller = request_tenant.set(caller)
        try:
            await next_app(scope, receive, stamp)
        finally:
            request_tenant.reset(reset_caller)
            request_reads.reset(reset)

    return app


CONSISTENCY_HEADER_B = CONSISTENCY_HEADER.encode("ascii")


async def _bad_token(send: Any, detail: str) -> None:
    body = msgspec.json.encode({"type": "about:blank", "title": "Bad Request", "status": 400,
                                "detail": f"Stichtag-Consistency: {detail}",
                                "errors": [{"field": "Stichtag-Consistency", "reason": detail}]})
    await send({"type": "http.response.start", "status": 400, "headers": [
        (b"content-type", b"application/problem+json"),
        (b"content-length", str(len(body)).encode("ascii"))]})
    await send({"type": "http.response.body", "body": body})


def _metrics_listener(settings: Settings, slot: int, svc: Services) -> MetricsListener | None:
    """The operator's ``/metrics`` listener of this worker slot (port + slot), or None
    when it is off."""
    where = parse_listen(settings.metrics_listen)
    if where is None:
        return None
    host, port = where
    try:
        return MetricsListener(host, port + slot if port else 0, lambda: render_metrics(svc))
    except OSError as exc:
        # Another server on this machine holds the port (a second checkout's make serve):
        # serve the tenants anyway and say loudly where the metrics are not.
        structlog.get_logger("stichtag.api").error(
            "metrics_listener_unavailable", listen=f"{host}:{port + slot}", error=str(exc))
        return None
