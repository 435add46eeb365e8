"""The asynchronous client (httpx.AsyncClient): the same operations as ``Client``,
awaited."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import httpx

from stichtag.api import schemas as s
from stichtag.audit.signing import load_public_key
from stichtag.audit.verify import VerifyReport, verify_export
from stichtag.client import operations as op
from stichtag.client.base import Operations
from stichtag.client.core import EXPORT, Call, ChangesPager, Retry, RetryPolicy, http_options
from stichtag.client.errors import error_for

T = TypeVar("T")


class AsyncClient(Operations):
    """The API of one stichtag server for asyncio code; every method of
    :class:`~stichtag.client.base.Operations` returns an awaitable of the decoded result.

    ::

        async with AsyncClient("http://127.0.0.1:8000", key) as api:
            answer = await api.answer("Welcher Höchstzinssatz gilt?", valid_at="2022-06-01")
    """

    def __init__(self, base_url: str, key: str, *, timeout: float = 30.0, retries: int = 3,
                 max_wait: float = 30.0, transport: httpx.AsyncBaseTransport | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.http = httpx.AsyncClient(transport=transport,
                                      **http_options(base_url, key, timeout))
        self.policy = RetryPolicy(retries=retries, max_wait=max_wait)
        self.sleep = sleep

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.http.aclose()

    async def perform(self, call: Call[T]) -> T:
        """Send ``call`` with the retry policy; the decoded result or the typed error."""
        attempt = 0
        while True:
            try:
                response = await self.http.request(call.method, call.path, **call.send_args())
            except httpx.TransportError as lost:
                result = self.policy.settle(call, attempt, lost=lost)
            else:
                result = self.policy.settle(call, attempt, response)
            if not isinstance(result, Retry):
                return result
            await self.sleep(result.seconds)
            attempt += 1

    async def iter_changes(self, *, known_from: str, known_to: str | None = None,
                           document: str | None = None, diff: bool | None = None,
                           limit: int | None = None, max_sentences: int | None = None,
                           ) -> AsyncIterator[s.ChangesResponse]:
        """The knowledge diff of the window page by page, none cut by ``limit``
        (:class:`~stichtag.client.core.ChangesPager`)."""
        pager = ChangesPager(op.changes(known_from=known_from, known_to=known_to,
                                        document=document, diff=diff, limit=limit,
                                        max_sentences=max_sentences))
        while (call := pager.next()) is not None:
            page = pager.feed(await self.perform(call))
            if page is not None:
                yield page

    async def export_lines(self) -> AsyncIterator[str]:
        """The log export, line by line as it streams, never held in memory as a whole."""
        async with self.http.stream("GET", EXPORT) as response:
            if not response.is_success:
                await response.aread()
                raise error_for(response)
            async for line in response.aiter_lines():
                if line:
                    yield line

    async def verify_log(self, public_key: str | bytes | Path) -> VerifyReport:
        """Export the log into a temporary file as it streams, then verify it offline in
        a worker thread with a key you hold (PEM or its path)."""
        key = load_public_key(public_key)
        with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
            async for line in self.export_lines():
                spool.write(line + "\n")
            spool.seek(0)
            return await asyncio.to_thread(verify_export, spool, key)
