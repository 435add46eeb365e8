"""The synchronous client (httpx.Client)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
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


class Client(Operations):
    """The API of one stichtag server, as one tenant's key sees it; every method of
    :class:`~stichtag.client.base.Operations` returns the decoded result."""

    def __init__(self, base_url: str, key: str, *, timeout: float = 30.0, retries: int = 3,
                 max_wait: float = 30.0, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.http = httpx.Client(transport=transport, **http_options(base_url, key, timeout))
        self.policy = RetryPolicy(retries=retries, max_wait=max_wait)
        self.sleep = sleep

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()

    def perform(self, call: Call[T]) -> T:
        """Send ``call`` with the retry policy; the decoded result or the typed error."""
        attempt = 0
        while True:
            try:
                response = self.http.request(call.method, call.path, **call.send_args())
            except httpx.TransportError as lost:
                result = self.policy.settle(call, attempt, lost=lost)
            else:
                result = self.policy.settle(call, attempt, response)
            if not isinstance(result, Retry):
                return result
            self.sleep(result.seconds)
            attempt += 1

    def iter_changes(self, *, known_from: str, known_to: str | None = None,
                     document: str | None = None, diff: bool | None = None,
                     limit: int | None = None,
                     max_sentences: int | None = None) -> Iterator[s.ChangesResponse]:
        """The knowledge diff of the window page by page, none cut by ``limit``
        (:class:`~stichtag.client.core.ChangesPager`)."""
        pager = ChangesPager(op.changes(known_from=known_from, known_to=known_to,
                                        document=document, diff=diff, limit=limit,
                                        max_sentences=max_sentences))
        while (call := pager.next()) is not None:
            page = pager.feed(self.perform(call))
            if page is not None:
                yield page

    def export_lines(self) -> Iterator[str]:
        """The log export, line by line as it streams (header, records, checkpoint),
        never held in memory as a whole."""
        with self.http.stream("GET", EXPORT) as response:
            if not response.is_success:
                response.read()
                raise error_for(response)
            yield from (line for line in response.iter_lines() if line)

    def verify_log(self, public_key: str | bytes | Path) -> VerifyReport:
        """Export the log and verify it offline, as it streams, with a key you hold (PEM
        or its path), not the one the server would report."""
        return verify_export(self.export_lines(), load_public_key(public_key))
