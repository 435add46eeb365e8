"""A typed Python client for the stichtag API (sync, on httpx).

The response types are the server's own msgspec Structs (``stichtag.api.schemas`` and
friends), so a client and the server cannot disagree about a field. Errors arrive as
RFC 9457 problem+json and are raised as :class:`ApiError` subclasses that carry the
offending ``field`` and ``reason``. 429 and 503 are retried after their ``Retry-After``,
at most ``retries`` times and never waiting longer than ``max_wait`` seconds at once;
a 503 only for requests that are safe to repeat (reads, and ingest, which is idempotent
for the same text and range).

::

    with Client("http://127.0.0.1:8000", key) as api:
        api.ingest("deckrv", text, valid_from="2022-01-01")
        answer = api.answer("Welcher Höchstzinssatz gilt?", valid_at="2022-06-01")
        assert api.verify_log("signing.pub").problems == ()
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from stichtag.api import schemas as s
from stichtag.api.log import CheckpointOut, ConsistencyOut, InclusionOut
from stichtag.audit.signing import load_public_key
from stichtag.audit.verify import VerifyReport, verify_export

T = TypeVar("T")
_PROBLEM = "application/problem+json"


class ApiError(Exception):
    """An error response: status, the problem details and, when the server named one,
    the offending ``field`` and its ``reason``."""

    status = 0

    def __init__(self, problem: s.Problem, *, retry_after: float | None = None) -> None:
        self.problem = problem
        self.errors = list(problem.errors or [])
        self.retry_after = retry_after
        first = self.errors[0] if self.errors else None
        self.field: str | None = first.field if first else None
        self.reason: str = first.reason if first else problem.detail
        super().__init__(f"{problem.status} {problem.title}: {problem.detail}")


class BadRequest(ApiError):
    """400: a malformed request (type, unknown or missing field, bad parameter)."""

    status = 400


class Unauthorized(ApiError):
    """401: no valid API key."""

    status = 401


class Forbidden(ApiError):
    """403: the key lacks the scope the operation needs."""

    status = 403


class NotFound(ApiError):
    """404: unknown, foreign and above-clearance ids look the same."""

    status = 404


class Conflict(ApiError):
    """409: the write conflicts with the stored state."""

    status = 409


class TooLarge(ApiError):
    """413: the body or file exceeds a limit."""

    status = 413


class Unprocessable(ApiError):
    """422: a well-formed but unacceptable value; ``field`` names it."""

    status = 422


class Throttled(ApiError):
    """429: back-pressure (``problem.limit`` says which limit); retried before raised."""

    status = 429


class Unavailable(ApiError):
    """503: the node is saturated or its database is down; retried before raised."""

    status = 503


ERRORS: dict[int, type[ApiError]] = {c.status: c for c in (
    BadRequest, Unauthorized, Forbidden, NotFound, Conflict, TooLarge, Unprocessable,
    Throttled, Unavailable)}


def _problem(response: httpx.Response) -> s.Problem:
    """The problem details of an error response (a non-problem body is described)."""
    if response.headers.get("content-type", "").startswith(_PROBLEM):
        try:
            return msgspec.json.decode(response.content, type=s.Problem)
        except msgspec.ValidationError:
            pass
    return s.Problem(type="about:blank", title=response.reason_phrase or "Error",
                     status=response.status_code, detail=response.text[:500])


def error_for(response: httpx.Response) -> ApiError:
    """The typed exception of an error response."""
    retry = response.headers.get("retry-after")
    cls = ERRORS.get(response.status_code, ApiError)
    return cls(_problem(response), retry_after=float(retry) if retry and retry.isdigit()
               else None)


def _clean(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


class Client:
    """The API of one stichtag server, as one tenant's key sees it."""

    def __init__(self, base_url: str, key: str, *, timeout: float = 30.0, retries: int = 3,
                 max_wait: float = 30.0, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout,
                                 headers={"Authorization": f"Bearer {key}"},
                                 transport=transport)
        self.retries = retries
        self.max_wait = max_wait
        self.sleep = sleep

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()

    # -- transport -------------------------------------------------------------------

    def _send(self, method: str, path: str, *, safe: bool, **kwargs: Any) -> httpx.Response:
        """One request with bounded retries after 429 (always: nothing was done) and 503
        (only when ``safe`` to repeat)."""
        for attempt in range(self.retries + 1):
            response = self.http.request(method, path, **kwargs)
            if response.is_success:
                return response
            error = error_for(response)
            retryable = response.status_code == 429 or (response.status_code == 503 and safe)
            if not retryable or attempt == self.retries:
                raise error
            self.sleep(min(error.retry_after or 1.0, self.max_wait))
        raise AssertionError("unreachable")  # pragma: no cover

    def _call(self, kind: type[T], method: str, path: str, *, safe: bool = True,
              **kwargs: Any) -> T:
        response = self._send(method, path, safe=safe, **kwargs)
        return msgspec.json.decode(response.content, type=kind)

    # -- documents -------------------------------------------------------------------

    def ingest(self, document: str, text: str | None = None, *, file: bytes | None = None,
               media_type: str = "text/markdown", valid_from: str | None = None,
               valid_to: str | None = None, title: str | None = None,
               doc_class: str = "document", confidentiality: str = "internal",
               tx_time: str | None = None, source: str | None = None) -> s.IngestResponse:
        """Ingest a version: ``text``, or a ``file`` (PDF, HTML, DOCX, ...) sent as the body
        with ``media_type``. Idempotent for the same text and range, so it is retried."""
        fields = _clean({"valid_from": valid_from, "valid_to": valid_to, "title": title,
                         "doc_class": doc_class, "confidentiality": confidentiality,
                         "tx_time": tx_time, "source": source})
        path = f"/v1/documents/{quote(document, safe='')}/versions"
        if file is not None:
            return self._call(s.IngestResponse, "POST", path, params=fields, content=file,
                              headers={"Content-Type": media_type})
        return self._call(s.IngestResponse, "POST", path,
                          json={"text": text, "media_type": media_type, **fields})

    def ingest_file(self, document: str, path: str | Path, *, media_type: str | None = None,
                    **fields: Any) -> s.IngestResponse:
        """Ingest a file from disk; its type is sniffed by the server unless given."""
        data = Path(path).read_bytes()
        return self.ingest(document, file=data,
                           media_type=media_type or "application/octet-stream", **fields)

    def document(self, document: str, *, valid_at: str | None = None,
                 known_at: str | None = None,
                 include_sentences: bool = False) -> s.DocumentResponse:
        """The version in force at the as-of pair (defaults: now)."""
        return self._call(s.DocumentResponse, "GET", f"/v1/documents/{quote(document, safe='')}",
                          params=_clean({"valid_at": valid_at, "known_at": known_at,
                                         "include_sentences": include_sentences or None}))

    def history(self, document: str) -> s.HistoryResponse:
        """Every assertion of a document on both time axes."""
        return self._call(s.HistoryResponse, "GET",
                          f"/v1/documents/{quote(document, safe='')}/history")

    def retract(self, document: str, *, valid_from: str, reason: str) -> s.WriteResponse:
        """End a document's validity from ``valid_from`` on."""
        return self._call(s.WriteResponse, "POST",
                          f"/v1/documents/{quote(document, safe='')}/retract", safe=False,
                          json={"valid_from": valid_from, "reason": reason})

    def version(self, version_id: str) -> s.VersionResponse:
        """An immutable version with its sentences."""
        return self._call(s.VersionResponse, "GET", f"/v1/versions/{quote(version_id)}")

    def changes(self, *, known_from: str, known_to: str,
                document: str | None = None) -> s.ChangesResponse:
        """What the knowledge base learned, ended or corrected in ``(known_from, known_to]``."""
        return self._call(s.ChangesResponse, "GET", "/v1/changes", params=_clean(
            {"known_from": known_from, "known_to": known_to, "document": document}))

    # -- search, answers, citations --------------------------------------------------

    def search(self, query: str, *, valid_at: str | None = None, known_at: str | None = None,
               k: int = 10) -> s.SearchResponse:
        """Passages of exact versions as of the pair."""
        return self._call(s.SearchResponse, "POST", "/v1/search", json=_clean(
            {"query": query, "valid_at": valid_at, "known_at": known_at, "k": k}))

    def answer(self, question: str, *, valid_at: str | None = None,
               known_at: str | None = None, generator: str = "extractive") -> s.AnswerResponse:
        """An answer with citations, or a reasoned abstention (a result, not an error)."""
        return self._call(s.AnswerResponse, "POST", "/v1/answer", json=_clean(
            {"question": question, "valid_at": valid_at, "known_at": known_at,
             "generator": generator}))

    def resolve(self, version_id: str, start: int, end: int) -> s.ResolveResponse:
        """A citation with its context and its standing in the current version."""
        return self._call(s.ResolveResponse, "GET", "/v1/citations/resolve",
                          params={"version_id": version_id, "start": start, "end": end})

    def anchor(self, selector: list[s.Selector], *, source: str | None = None,
               document: str | None = None) -> s.AnchorResponse:
        """Find a TextQuoteSelector (e.g. ``citation.selector``) in the current version."""
        body = s.AnchorBody(selector=selector, source=source, document=document)
        return self._call(s.AnchorResponse, "POST", "/v1/citations/anchor",
                          content=msgspec.json.encode(body),
                          headers={"Content-Type": "application/json"})

    # -- runs and the log ------------------------------------------------------------

    def run(self, run_id: str) -> s.RunResponse:
        """A recorded run with its record."""
        return self._call(s.RunResponse, "GET", f"/v1/runs/{quote(run_id)}")

    def replay(self, run_id: str) -> s.VerdictOut:
        """Recompute a run at its as-of pair; the verdict names every difference."""
        return self._call(s.VerdictOut, "POST", f"/v1/runs/{quote(run_id)}/replay")

    def checkpoint(self) -> CheckpointOut:
        """A freshly signed checkpoint of the tenant's log."""
        return self._call(CheckpointOut, "GET", "/v1/log/checkpoint")

    def inclusion(self, seq: int, size: int | None = None) -> InclusionOut:
        """The inclusion proof of leaf ``seq``."""
        return self._call(InclusionOut, "GET", "/v1/log/proofs/inclusion",
                          params=_clean({"seq": seq, "size": size}))

    def consistency(self, old: int, new: int | None = None) -> ConsistencyOut:
        """The consistency proof between two tree sizes."""
        return self._call(ConsistencyOut, "GET", "/v1/log/proofs/consistency",
                          params=_clean({"old": old, "new": new}))

    def export_lines(self) -> Iterator[str]:
        """The log export, line by line as it streams (header, records, checkpoint)."""
        with self.http.stream("GET", "/v1/log/export") as response:
            if not response.is_success:
                response.read()
                raise error_for(response)
            yield from (line for line in response.iter_lines() if line)

    def verify_log(self, public_key: str | bytes | Path) -> VerifyReport:
        """Export the log and verify it offline with a key you hold (PEM or its path),
        not the one the server would report."""
        return verify_export(self.export_lines(), load_public_key(public_key))
