"""Refuse NUL characters in any request field, naming the field, before a handler runs.

PostgreSQL cannot store U+0000 in ``text`` nor in ``jsonb`` strings, so a NUL that slips
through to the store (a title, a reason, a key label, a search query recorded in the run
log, an id in a path) ends as a 500 from deep inside psycopg. ``normalize`` already
rejects NUL in document text; this hook does the same for every other field, once, at
the edge: path and query parameters, and every string (keys included) of a JSON body.

A JSON body can only carry NUL as the escape ``\\u0000``, so the decoded body is walked
only when that escape occurs. Every body is decoded here once, though (msgspec: about
16 ms for the largest allowed body), because that also bounds nesting: thousands of
levels make msgspec raise RecursionError, which in the handler's own decoding ended as a
500; here it is the client's 400.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request
from litestar.exceptions import ValidationException

from stichtag.api.uploads import is_json
from stichtag.domain.text import TextError

_ESCAPED_NUL = b"\\u0000"


def _walk(value: Any) -> str | None:
    """The path of the first string (value or key) holding NUL, else None. Iterative: the
    body may be nested as deep as the decoder allows."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return where
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                name = f"{where}.{key}" if where else str(key)
                if "\x00" in key:
                    return name
                stack.append((child, name))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in reversed(list(enumerate(item))))
    return None


async def reject_nul(request: Request[Any, Any, Any]) -> None:
    """Raise a field error (422) for the first request field that contains NUL."""
    for source in (request.path_params, request.query_params):
        for name, value in source.items():
            if isinstance(value, str) and "\x00" in value:
                raise TextError(name, "NUL character is not allowed")
    if request.method not in ("POST", "PUT", "PATCH"):
        return
    body = await request.body()  # bounded by request_max_body_size (413 above it)
    if not body:
        return
    operation = getattr(request.scope.get("route_handler"), "operation_id", None)
    if operation == "ingestVersion" and not is_json(body, request.headers.get("content-type")):
        return  # a raw upload is a file, not JSON: its text is checked when it is extracted
    try:
        decoded = msgspec.json.decode(body)
    except RecursionError:
        raise ValidationException("Request body is nested too deeply", extra=[
            {"key": "body", "message": "JSON nested too deeply"}]) from None
    except msgspec.DecodeError:
        return  # malformed JSON: the handler's own decoding answers with a 400
    if _ESCAPED_NUL not in body:
        return
    field = _walk(decoded)
    if field:
        raise TextError(field, "NUL character is not allowed")
