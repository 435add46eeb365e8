"""The typed exceptions of the client: one per problem+json status, each carrying the
problem details, the offending ``field`` and its ``reason``."""

from __future__ import annotations

import httpx
import msgspec

from stichtag.api import schemas as s

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


class Gone(ApiError):
    """410: the version was erased (GDPR); ``problem.erasure`` holds the erasure record."""

    status = 410


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
    BadRequest, Unauthorized, Forbidden, NotFound, Conflict, Gone, TooLarge, Unprocessable,
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
