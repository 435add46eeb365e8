"""Bodies of the knowledge diff and version diffs."""

from __future__ import annotations

from typing import Any

import msgspec

from stichtag.api.schemas.documents import Assertion, ErasureRecordOut


class ChangeWindow(msgspec.Struct):
    """The transaction-time window of a knowledge diff: ``(known_from, known_to]``."""

    known_from: str
    known_to: str
    rule: str = "known_from < t <= known_to"


class ValidRange(msgspec.Struct):
    """A valid-time range ``[valid_from, valid_to)``; null end = open."""

    valid_from: str
    valid_to: str | None


class DiffSentenceOut(msgspec.Struct):
    """A sentence of one side of a diff, with offsets into that version's text."""

    start: int
    end: int
    utf16_start: int
    utf16_end: int
    text: str
    heading_path: list[str]


class SentenceChangeOut(msgspec.Struct):
    """``added`` (only ``new``), ``removed`` (only ``old``) or ``changed`` (both)."""

    op: str
    old: DiffSentenceOut | None
    new: DiffSentenceOut | None
    similarity: float | None


class SentenceDiffOut(msgspec.Struct):
    """Complete sentence counts and the first ``max_sentences`` changes."""

    added: int
    removed: int
    changed: int
    unchanged: int
    sentences: list[SentenceChangeOut]
    truncated: bool


class VersionPairOut(msgspec.Struct):
    """Content that changed for the listed valid ranges; a null version = nothing in force
    (``from_state``/``to_state``: ``version``, ``new_document`` or ``not_in_force``)."""

    from_version: str | None
    to_version: str | None
    from_state: str
    to_state: str
    ranges: list[ValidRange]
    assertion_ids: list[int]
    diff: SentenceDiffOut | None


class DocumentChangesOut(msgspec.Struct):
    """One document's assertions that appeared, ended or were corrected in the window."""

    document: str
    new_document: bool
    appeared: list[Assertion]
    ended: list[Assertion]
    corrected: list[Assertion]
    pairs: list[VersionPairOut]
    truncated: bool


class ChangesResponse(msgspec.Struct):
    """The knowledge diff between two transaction times (counts are never truncated)."""

    window: ChangeWindow
    document: str | None
    documents: list[DocumentChangesOut]
    counts: dict[str, int]
    truncated: bool
    limits: dict[str, Any]
    erasures: list[ErasureRecordOut] = msgspec.field(default_factory=list)
    """Versions erased in the window (GDPR); their assertions are unchanged."""


class VersionDiffResponse(msgspec.Struct):
    """The sentence diff of two versions (``from_version`` → ``to_version``)."""

    from_version: str
    to_version: str
    diff: SentenceDiffOut
