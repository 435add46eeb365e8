"""What the sync and the async client share, free of any I/O: a request as a value
(:class:`Call`), how its response is decoded, the retry policy, the pager of knowledge
diffs, and the :class:`Operation` descriptor that turns one table of operations
(``stichtag.client.operations``) into the methods of both clients.

A transport (``Client`` or ``AsyncClient``) only sends: it hands each response, or the
transport error it got instead, to :meth:`RetryPolicy.settle`, which returns the decoded
result, raises the typed error, or says how long to wait before the next attempt.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, overload

import httpx
import msgspec

from stichtag.api import schemas as s
from stichtag.client.errors import ApiError, error_for

if TYPE_CHECKING:
    from typing import Self

    from stichtag.client.aio import AsyncClient
    from stichtag.client.sync import Client

T = TypeVar("T")
P = ParamSpec("P")


@functools.cache
def typed(kind: Any) -> Callable[[httpx.Response], Any]:
    """The decoder of a JSON body into ``kind`` (one msgspec decoder per type)."""
    decoder = msgspec.json.Decoder(kind)
    return lambda response: decoder.decode(response.content)


def raw_bytes(response: httpx.Response) -> bytes:
    """A binary body (an original, a page image) as received."""
    return response.content


def raw_text(response: httpx.Response) -> str:
    """A text body (Prometheus metrics)."""
    return response.text


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and how to read its answer.

    ``safe``: a 503 may be repeated (the node refused before doing anything, or the work is
    idempotent). ``idempotent``: a request whose response was lost (connection reset,
    timeout) may be sent again because repeating it changes nothing: reads, and an ingest,
    which the server deduplicates by the version's content address and valid range.
    ``accept``: error statuses whose body is a result (``/readyz`` answers 503 with one).
    """

    method: str
    path: str
    decode: Callable[[httpx.Response], T]
    params: dict[str, Any] | None = None
    json: Any = None
    content: bytes | None = None
    headers: dict[str, str] | None = None
    safe: bool = True
    idempotent: bool = False
    accept: frozenset[int] = field(default_factory=frozenset)

    def send_args(self) -> dict[str, Any]:
        """Keyword arguments of ``httpx.Client.request`` (the same for the async one); no
        empty query or header mapping (httpx would merge it for nothing)."""
        args: dict[str, Any] = {}
        if self.params:
            args["params"] = self.params
        if self.json is not None:
            args["json"] = self.json
        if self.content is not None:
            args["content"] = self.content
        if self.headers:
            args["headers"] = self.headers
        return args


def clean(params: dict[str, Any]) -> dict[str, Any]:
    """Leave out what was not given (the server applies its defaults)."""
    return {k: v for k, v in params.items() if v is not None}


@dataclass(frozen=True, slots=True)
class Retry:
    """Wait this long, then send the call again."""

    seconds: float


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries: a 429 always (nothing was done), a 503 when the call is ``safe``,
    a lost response when it is ``idempotent``; at most ``retries`` times, each wait the
    server's ``Retry-After`` (else 1 s, doubling for lost responses), never above
    ``max_wait`` seconds."""

    retries: int = 3
    max_wait: float = 30.0

    def settle(self, call: Call[T], attempt: int, response: httpx.Response | None = None,
               lost: httpx.TransportError | None = None) -> T | Retry:
        """The result of ``attempt`` (0-based): decoded, a :class:`Retry`, or raised."""
        if response is None:
            assert lost is not None
            if not call.idempotent or attempt >= self.retries:
                raise lost
            return Retry(min(float(2 ** attempt), self.max_wait))
        if response.is_success or response.status_code in call.accept:
            return call.decode(response)
        error: ApiError = error_for(response)
        status = response.status_code
        if attempt >= self.retries or not (status == 429 or (status == 503 and call.safe)):
            raise error
        return Retry(min(error.retry_after or 1.0, self.max_wait))


class Operation(Generic[P, T]):
    """One operation of the API, written once as a function that builds its
    :class:`Call`; on a ``Client`` it is a method returning ``T``, on an ``AsyncClient``
    one returning an awaitable of ``T``. The bound method is cached on the instance."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self.name = build.__name__
        self.__doc__ = build.__doc__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, obj: Client, owner: type[Any]) -> Callable[P, T]: ...

    @overload
    def __get__(self, obj: AsyncClient, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, obj: Any, owner: type[Any]) -> Any:
        if obj is None:
            return self
        build, perform = self.build, obj.perform

        @functools.wraps(build)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return perform(build(*args, **kwargs))

        obj.__dict__[self.name] = bound
        return bound


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _stamp(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


class ChangesPager:
    """The pages of a knowledge diff that the server would cut (``limit``): the window
    ``(known_from, known_to]`` is halved until each part lists all its entries, and the
    parts come back in transaction-time order. They partition the window, so every
    appearance, end and correction is listed on exactly one page; an assertion that
    appeared and ended within the window is listed on the page of each event. A part too
    short to halve (one microsecond) is returned as the server cut it (``truncated``).

    I/O-free: ``first()`` is the call to send, ``feed(response)`` returns the page to
    yield, if any, and the pager's next call is ``next()`` (None when done).
    """

    def __init__(self, call: Call[s.ChangesResponse]) -> None:
        self.template = call
        self.pending: list[tuple[str, str]] = []
        self.current: Call[s.ChangesResponse] | None = call

    def next(self) -> Call[s.ChangesResponse] | None:
        """The call to send now, or None when every part has been returned."""
        return self.current

    def feed(self, page: s.ChangesResponse) -> s.ChangesResponse | None:
        """The page to hand out (None when it was split instead)."""
        listed = sum(len(d.appeared) + len(d.ended) + len(d.corrected) for d in page.documents)
        total = sum(page.counts.get(k, 0) for k in ("appeared", "ended", "corrected"))
        low, high = _instant(page.window.known_from), _instant(page.window.known_to)
        result: s.ChangesResponse | None = page
        if listed < total and high - low > timedelta(microseconds=1):
            middle = low + (high - low) / 2
            self.pending[:0] = [(_stamp(low), _stamp(middle)), (_stamp(middle), _stamp(high))]
            result = None
        if self.pending:
            known_from, known_to = self.pending.pop(0)
            params = {**(self.template.params or {}), "known_from": known_from,
                      "known_to": known_to}
            self.current = replace(self.template, params=params)
        else:
            self.current = None
        return result


def http_options(base_url: str, key: str, timeout: float) -> dict[str, Any]:
    """What ``httpx.Client`` and ``httpx.AsyncClient`` are opened with."""
    return {"base_url": base_url.rstrip("/"), "timeout": timeout,
            "headers": {"Authorization": f"Bearer {key}"}}


EXPORT = "/v1/log/export"
"""The streamed log export (JSON Lines: header, records, checkpoint)."""
