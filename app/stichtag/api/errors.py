"""Domain errors become RFC 9457 problem+json responses, here and nowhere else."""

from __future__ import annotations

import re
from typing import Any

import psycopg
import psycopg.errors
import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException

from stichtag.api.limits import Throttled, whole_seconds
from stichtag.domain.bitemporal import BitemporalError
from stichtag.domain.errors import Conflict, Gone, Invalid, NotFound
from stichtag.domain.extraction import ExtractionRefused
from stichtag.domain.text import TextError
from stichtag.domain.timeutil import TimeError, format_time
from stichtag.domain.txclock import ObservedPast
from stichtag.services.access import Forbidden, Unauthorized
from stichtag.services.erasure import erasure_record
from stichtag.services.runlog import SigningKeyMismatchError

PROBLEM = "application/problem+json"
# One body for every unknown, foreign or above-clearance id: nothing to tell them apart.
NOT_FOUND_BODY = {"type": "about:blank", "title": "Not Found", "status": 404,
                  "detail": "No such resource."}


def problem(status: int, title: str, detail: str, *,
            errors: list[dict[str, str]] | None = None,
            headers: dict[str, str] | None = None) -> Response[Any]:
    """A problem+json response."""
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status,
                            "detail": detail}
    if errors:
        body["errors"] = errors
    return Response(body, status_code=status, media_type=PROBLEM, headers=headers)


def _field_error(_: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    field = getattr(exc, "field", "body")
    reason = getattr(exc, "reason", str(exc))
    status = 409 if isinstance(exc, Conflict) else 422
    title = "Conflict" if status == 409 else "Unprocessable Content"
    return problem(status, title, f"{field}: {reason}", errors=[{"field": field, "reason": reason}])


def _observed_past(_: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    # An import into a past that a write or a recorded run has already observed: the
    # client needs the clock to choose a later tx_time, so it is a field of its own too.
    assert isinstance(exc, ObservedPast)
    body: dict[str, Any] = {"type": "about:blank", "title": "Conflict", "status": 409,
                            "detail": f"{exc.field}: {exc.reason}",
                            "errors": [{"field": exc.field, "reason": exc.reason}],
                            "tenant_clock": format_time(exc.clock)}
    return Response(body, status_code=409, media_type=PROBLEM)


def _refused(_: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    # A file that cannot become a version: 413 for one over a limit (pages, size, zip
    # ratio, time), 422 for one that cannot be read (encrypted, no text layer, corrupt).
    assert isinstance(exc, ExtractionRefused)
    status = 413 if exc.limit else 422
    title = "Content Too Large" if exc.limit else "Unprocessable Content"
    return problem(status, title, f"{exc.field}: {exc.reason}",
                   errors=[{"field": exc.field, "reason": exc.reason}])


def _gone(_: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    # An erased version: its text is gone, its erasure record is what remains to show. Only
    # raised for a version the key may see (else it is the same 404 as an unknown id).
    assert isinstance(exc, Gone)
    record = erasure_record(exc.erasure)
    body: dict[str, Any] = {"type": "about:blank", "title": "Gone", "status": 410,
                            "detail": f"version {record['version_id']} was erased on "
                                      f"{record['erased_at']}: {record['reason']}",
                            "erasure": record}
    return Response(body, status_code=410, media_type=PROBLEM)


def _not_found(_: Request[Any, Any, Any], __: Exception) -> Response[Any]:
    return Response(NOT_FOUND_BODY, status_code=404, media_type=PROBLEM)


def _unauthorized(_: Request[Any, Any, Any], __: Exception) -> Response[Any]:
    return problem(401, "Unauthorized", "A valid API key is required: "
                   "'Authorization: Bearer stk_…'.", headers={"WWW-Authenticate": "Bearer"})


def _forbidden(_: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    return problem(403, "Forbidden", f"This key lacks the '{exc}' scope.")


def _validation(_: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    assert isinstance(exc, ValidationException)
    errors: list[dict[str, str]] = []
    extra = exc.extra if isinstance(exc.extra, list) else []
    for item in extra:
        if isinstance(item, dict):
            message = str(item.get("message", "invalid"))
            field = str(item.get("key") or item.get("source") or "body")
            if field == "data":  # the JSON body: name the field msgspec points at
                field = _body_field(message)
            errors.append({"field": field, "reason": message})
    if not errors:
        # A missing query/path/header parameter comes without ``extra``; name it anyway.
        missing = _MISSING_PARAM.search(str(exc.detail))
        errors.append({"field": missing.group(1) if missing else "body",
                       "reason": str(exc.detail)})
    detail = "; ".join(f"{e['field']}: {e['reason']}" for e in errors)
    return problem(400, "Bad Request", detail, errors=errors)


_MISSING_PARAM = re.compile(r"^Missing required \w+ parameter '([^']+)'")
_AT_PATH = re.compile(r"at `\$\.([^`]+)`")
_UNKNOWN = re.compile(r"unknown field `([^`]+)`")
_MISSING = re.compile(r"missing required field `([^`]+)`")


def _body_field(message: str) -> str:
    """The body field a msgspec message refers to, e.g. ``text`` for "... at `$.text`"."""
    for pattern in (_AT_PATH, _UNKNOWN, _MISSING):
        match = pattern.search(message)
        if match:
            return match.group(1)
    return "body"


def _http(_: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return Response(NOT_FOUND_BODY, status_code=404, media_type=PROBLEM)
    title = {413: "Content Too Large", 405: "Method Not Allowed",
             429: "Too Many Requests"}.get(exc.status_code, "Error")
    detail = str(exc.detail)
    if exc.status_code == 413:
        detail = "The request body exceeds the configured limit (STICHTAG_MAX_BODY_BYTES)."
    return problem(exc.status_code, title, detail, headers=exc.headers)


def _unavailable(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    # The database is unreachable or restarting, or the pool timed out (PoolTimeout is an
    # OperationalError): the request's
    # outcome is unknown to the client either way, and retrying later is the right move,
    # so say so with 503 + Retry-After instead of a 500 that reads like a bug.
    structlog.get_logger("stichtag.api").warning(
        "database_unavailable", path=request.url.path, method=request.method,
        error=type(exc).__name__)
    return problem(503, "Service Unavailable", "The database is not available right now; "
                   "retry the request (writes are idempotent for the same text and range).",
                   headers={"Retry-After": "1"})



def _lock_wait(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    # lock_timeout fired: a write of the same tenant held its clock row longer than
    # STICHTAG_LOCK_WAIT (docs/operations.md, "Bounded waits"). Nothing of this request
    # was committed; the client retries once that write is done.
    services = getattr(request.app.state, "services", None)
    wait = services.settings.lock_wait if services is not None else 1.0
    retry = whole_seconds(wait)
    structlog.get_logger("stichtag.api").warning(
        "lock_wait_exceeded", path=request.url.path, method=request.method, waited_s=wait)
    body: dict[str, Any] = {
        "type": "about:blank", "title": "Service Unavailable", "status": 503,
        "detail": f"Waited {wait:g} s for another write of this tenant to finish; nothing "
                  "was done. Retry after it (writes are idempotent for the same text and "
                  "range).",
        "limit": "tenant_write", "retry_after": retry}
    return Response(body, status_code=503, media_type=PROBLEM,
                    headers={"Retry-After": str(retry)})


def _throttled(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    assert isinstance(exc, Throttled)
    operation = getattr(request.scope.get("route_handler"), "operation_id", None)
    services = getattr(request.app.state, "services", None)
    if services is not None:
        services.metrics.throttled.labels(
            operation if isinstance(operation, str) else "unmatched", exc.reason).inc()
    title = "Too Many Requests" if exc.status == 429 else "Service Unavailable"
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": exc.status,
                            "detail": exc.detail, "limit": exc.reason,
                            "retry_after": exc.retry_after}
    return Response(body, status_code=exc.status, media_type=PROBLEM,
                    headers={"Retry-After": str(exc.retry_after)})


def _misconfigured(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    # The node's signing key did not sign the tenant's log head: an operator's mistake on
    # this node (docs/operations.md, key rotation). The log names the cause; the client
    # learns nothing about keys or paths, only to use another node.
    structlog.get_logger("stichtag.api").error(
        "signing_key_mismatch", path=request.url.path, method=request.method, error=str(exc))
    return problem(503, "Service Unavailable", "This node cannot extend the run log with its "
                   "signing key; nothing was recorded. Retry on another node; the operator "
                   "has been told why in the server log.")


EXCEPTION_HANDLERS: dict[type[Exception] | int, Any] = {
    psycopg.errors.LockNotAvailable: _lock_wait,
    psycopg.OperationalError: _unavailable,
    SigningKeyMismatchError: _misconfigured,
    Throttled: _throttled,
    ExtractionRefused: _refused,
    TextError: _field_error,
    TimeError: _field_error,
    BitemporalError: _field_error,
    Invalid: _field_error,
    ObservedPast: _observed_past,
    Conflict: _field_error,
    Gone: _gone,
    NotFound: _not_found,
    Unauthorized: _unauthorized,
    Forbidden: _forbidden,
    ValidationException: _validation,
    HTTPException: _http,
}


def _internal(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    # Log the type and place, never the request body (it may hold document text).
    structlog.get_logger("stichtag.api").error(
        "unhandled_error", path=request.url.path, method=request.method,
        error=type(exc).__name__, exc_info=exc)
    return problem(500, "Internal Server Error", "An unexpected error occurred; it was logged.")


EXCEPTION_HANDLERS[Exception] = _internal
