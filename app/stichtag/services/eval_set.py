"""The labelled as-of question set of an evaluation: its JSONL format, read and checked.

Each item is one JSON object: ``question``, ``valid_at``/``known_at`` (RFC 3339 or plain
date; absent = now), ``answerable`` (bool) and, for answerable items, ``gold``:
``{document, version_file | version_id, span: [start, end] | gold_text}`` (see
``eval/README.md``).

Separate from running the set (:mod:`stichtag.services.evaluate`) because reading it needs no
service: a malformed set is refused before any question is answered, and a gold
``version_file`` is resolved from the corpus files alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stichtag.domain.errors import Invalid
from stichtag.domain.text import normalize, version_id
from stichtag.domain.timeutil import parse_time


@dataclass(frozen=True, kw_only=True)
class Gold:
    """Where the answer to an answerable item is: a document, its version, a span or text."""

    document: str
    version_id: str | None
    span: tuple[int, int] | None
    gold_text: str | None


@dataclass(frozen=True, kw_only=True)
class EvalItem:
    """One labelled question at one as-of pair."""

    id: str
    question: str
    valid_at: datetime
    known_at: datetime
    answerable: bool
    gold: Gold | None


def load_items(path: Path, *, time_zone: str = "UTC",
               version_of_file: Callable[[str], str] | None = None) -> list[EvalItem]:
    """Read a JSONL set (see ``eval/README.md``)."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise Invalid(f"line {number}", f"not JSON: {exc.msg}") from exc
    return parse_items(rows, time_zone=time_zone, version_of_file=version_of_file)


def parse_items(rows: Iterable[dict[str, Any]], *, time_zone: str = "UTC",
                version_of_file: Callable[[str], str] | None = None) -> list[EvalItem]:
    """Check labelled rows and resolve times (tenant zone) and gold version files."""
    now = datetime.now(UTC)
    items = []
    for number, row in enumerate(rows, start=1):
        where = f"item {row.get('id', number)}"
        if not isinstance(row.get("question"), str) or not isinstance(row.get("answerable"), bool):
            raise Invalid(where, "needs question (string) and answerable (bool)")
        gold = _gold(row.get("gold"), where, version_of_file)
        if row["answerable"] and gold is None:
            raise Invalid(where, "an answerable item needs gold")
        items.append(EvalItem(
            id=str(row.get("id", number)), question=row["question"],
            valid_at=parse_time(row["valid_at"], field="valid_at", tz=time_zone)
            if row.get("valid_at") else now,
            known_at=parse_time(row["known_at"], field="known_at", tz=time_zone)
            if row.get("known_at") else now,
            answerable=row["answerable"], gold=gold))
    return items


def _gold(raw: Any, where: str, version_of_file: Callable[[str], str] | None) -> Gold | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("document"), str):
        raise Invalid(where, "gold needs a document")
    vid = raw.get("version_id")
    if vid is None and raw.get("version_file"):
        if version_of_file is None:
            raise Invalid(where, "gold.version_file needs a corpus root to resolve it")
        vid = version_of_file(raw["version_file"])
    span = raw.get("span")
    if span is not None and (len(span) != 2 or vid is None):
        raise Invalid(where, "gold.span is [start, end] in a named version")
    if span is None and not raw.get("gold_text"):
        raise Invalid(where, "gold needs span or gold_text")
    return Gold(document=raw["document"], version_id=vid,
                span=(int(span[0]), int(span[1])) if span else None,
                gold_text=raw.get("gold_text"))


def corpus_versions(root: Path) -> Callable[[str], str]:
    """Map a corpus-relative file to the version id the server gives its text (the
    content address is the blake3 of the normalized text, so no database is needed)."""
    def of(relative: str) -> str:
        return version_id(normalize((root / relative).read_bytes()))
    return of
