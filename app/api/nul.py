"""Refuse NUL characters in any request field, naming the field, before a handler runs.

PostgreSQL cannot store U+0000 in ``text`` nor in ``jsonb`` strings, so a NUL that slips
through to the store (a title, a reason, a key label, a search query recorded in the run
log, an id in a path) ends as a 500 from deep inside psycopg. ``normalize`` already
rejects NUL in document text; this hook does the same for every other field, once, at
the edge: path and query parameters, and every string (keys included) of a JSON body.

The common case costs one bytes search: a JSON body can only carry NUL as the escape
``\\u0000``, so the body is decoded and walked only when that escape occurs.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request

from app.domain.text import TextError

_ESCAPED_NUL = b"\\u0000"


def _walk(value: Any, where: str) -> str | None:
    """The path of the first string (value or key) holding NUL, else None."""
    if isinstance(value, str):
        return where if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{where}.{key}" if where else str(key)
            if "\x00" in key:
                return name
            found = _walk(item, name)
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _walk(item, f"{where}[{i}]")
            if found:
                return found
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
    if _ESCAPED_NUL not in body:
        return
    try:
        decoded = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return  # malformed JSON: the handler's own decoding answers with a 400
    field = _walk(decoded, "")
    if field:
        raise TextError(field, "NUL character is not allowed")
