"""The MCP server over streamable HTTP, mounted at ``/mcp`` by ``stichtag serve``
(docs/assistants.md, "A hosted assistant over HTTP").

Stateless and JSON: each POST carries its own ``Authorization: Bearer`` key and no
session lives on the node. The key is verified before MCP sees the request (a missing or
bad key is the API's 401 problem); each tool call then runs as one API request of that
same key against this same app, in process (``httpx.ASGITransport``), so it meets the
API's scopes, clearance, rate, admission and tenant wall exactly as a client would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio.to_thread
import httpx
from mcp.server.mcpserver import Context, MCPServer

from stichtag.assistant.tools import build_server
from stichtag.client import AsyncClient
from stichtag.services.access import AccessService, Unauthorized

PATH = "/mcp"
_INTERNAL = "http://stichtag.internal"  # the in-process transport ignores the host


class McpMount:
    """The ASGI app behind ``/mcp`` and the lifespan its session manager needs."""

    def __init__(self, api: Callable[[], Any], access: Callable[[], AccessService]) -> None:
        # Both are looked up per request: the app and its services exist only once the
        # Litestar app is built and its lifespan has run.
        self.api = api
        self.access = access
        self.server: MCPServer[Any] = build_server(self._connect)
        self.server.streamable_http_app(streamable_http_path=PATH, stateless_http=True,
                                        json_response=True, host="0.0.0.0")  # noqa: S104
        # host: not loopback, so the SDK adds no Host/Origin allow-list of its own: the
        # Bearer key, not the browser's origin, is what admits a request here.

    def _connect(self, ctx: Context[Any, Any]) -> AbstractAsyncContextManager[AsyncClient]:
        headers = ctx.headers or {}
        token = headers.get("authorization", "").partition(" ")[2].strip()
        return self._client(token)

    @asynccontextmanager
    async def _client(self, token: str) -> AsyncIterator[AsyncClient]:
        client = AsyncClient(_INTERNAL, token, retries=0,
                             transport=httpx.ASGITransport(app=self.api()))
        try:
            yield client
        finally:
            await client.http.aclose()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the SDK's session manager for the app's lifetime."""
        async with self.server.session_manager.run():
            yield

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Admit the request by its Bearer key, then hand it to the SDK."""
        if scope.get("type") == "http":
            headers = dict(scope.get("headers") or ())
            scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthorized
            await anyio.to_thread.run_sync(self.access().authenticate, token.strip())
        await self.server.session_manager.handle_request(scope, receive, send)
