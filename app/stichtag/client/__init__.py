"""A typed Python client for the stichtag API, sync (:class:`Client`) and async
(:class:`AsyncClient`, on ``httpx.AsyncClient``), with the same methods.

The response types are the server's own msgspec Structs (``stichtag.api.schemas`` and
friends), so a client and the server cannot disagree about a field. Errors arrive as
RFC 9457 problem+json and are raised as :class:`ApiError` subclasses that carry the
offending ``field`` and ``reason``. 429 and 503 are retried after their ``Retry-After``,
at most ``retries`` times and never waiting longer than ``max_wait`` seconds at once;
a 503 only for requests that are safe to repeat, and a lost response (connection reset,
timeout) only for idempotent ones: reads, and ingest, which the server deduplicates by
the version's content address and valid range.

Each operation is written once (``stichtag.client.operations``: a function building the
request) and bound to both transports (``stichtag.client.base``); the retry policy and
the pager are I/O-free (``stichtag.client.core``).

::

    with Client("http://127.0.0.1:8000", key) as api:
        api.ingest("deckrv", text, valid_from="2022-01-01")
        answer = api.answer("Welcher Höchstzinssatz gilt?", valid_at="2022-06-01")
        assert api.verify_log("signing.pub").problems == ()
"""

from __future__ import annotations

from stichtag.client.aio import AsyncClient
from stichtag.client.core import Call, ChangesPager, RetryPolicy
from stichtag.client.errors import (
    ERRORS,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    NotFound,
    Throttled,
    TooLarge,
    Unauthorized,
    Unavailable,
    Unprocessable,
    error_for,
)
from stichtag.client.operations import OPERATION_IDS
from stichtag.client.sync import Client

__all__ = ["ERRORS", "OPERATION_IDS", "ApiError", "AsyncClient", "BadRequest", "Call",
           "ChangesPager", "Client", "Conflict", "Forbidden", "Gone", "NotFound", "RetryPolicy",
           "Throttled", "TooLarge", "Unauthorized", "Unavailable", "Unprocessable",
           "error_for"]
