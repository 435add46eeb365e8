"""SQL lives in ``queries/*.sql`` as named blocks, loaded once.

A block starts with ``-- name: <name>`` followed by a one-line ``-- <purpose>`` comment.
Queries use psycopg named placeholders (``%(name)s``); SQL is never built with f-strings.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import LiteralString

_DIR = Path(__file__).resolve().parent / "queries"
_HEADER = re.compile(r"^-- name: ([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


@cache
def _load() -> dict[str, str]:
    blocks: dict[str, str] = {}
    for path in sorted(_DIR.glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        parts = _HEADER.split(text)
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in blocks:
                raise RuntimeError(f"{path.name}: duplicate query name {name!r}")
            if not body.lstrip().startswith("--"):
                raise RuntimeError(f"{path.name}: query {name!r} lacks its purpose comment")
            blocks[name] = body.strip()
    return blocks


def query(name: str) -> LiteralString:
    """The SQL text of the named block (a literal string as far as psycopg is concerned)."""
    try:
        # mypy reads LiteralString as str; the text comes from files, never from input
        return _load()[name]
    except KeyError:
        raise KeyError(f"no SQL block named {name!r} in {_DIR}") from None
