"""The knowledge diff: what the system learned or dropped between two transaction times.

The window is half-open on the left and closed on the right: ``(known_from, known_to]``.
So consecutive windows ``(t0, t1]``, ``(t1, t2]`` partition the history, and a change
recorded exactly at ``known_from`` belongs to the state *as of* ``known_from``.

Per document, an assertion

- **appeared** when its ``tx_from`` lies in the window (asserted, imported or carried);
- **ended** when its ``tx_to`` lies in the window and it ended as ``superseded`` or
  ``retracted``;
- was **corrected** when its ``tx_to`` lies in the window and it ended as ``corrected``
  ("never true", no successor).

An assertion that appeared and ended inside the window is listed in both lists.

Version pairs say which content changed for which valid time, comparing the state as of
``known_from`` with the assertions that appeared: for each appeared assertion, every
version visible at ``known_from`` for the same valid time is paired with it (equal versions
are no change, so carried-over parts drop out); valid time that nothing covered at
``known_from`` pairs with nothing (``new_document`` when the document had no visible
assertion at all then, else ``not_in_force``). Valid time that was covered at
``known_from`` and is covered by nothing at ``known_to`` pairs the old version with nothing
(a retraction or correction). Only the rows touched by the window are needed: a version
visible at ``known_from`` that overlaps a later assertion must have ended in the window
(invariant 3), and the same holds for the state at ``known_to``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from stichtag.domain.bitemporal import Interval

State = Literal["version", "new_document", "not_in_force"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Window:
    """The transaction-time window ``(known_from, known_to]``."""

    known_from: datetime
    known_to: datetime

    def __post_init__(self) -> None:
        if self.known_to < self.known_from:
            raise ValueError("known_to must not be earlier than known_from")

    def contains(self, instant: datetime | None) -> bool:
        """True when ``known_from < instant <= known_to`` (None, an open end, never is)."""
        return instant is not None and self.known_from < instant <= self.known_to


@dataclass(frozen=True, kw_only=True, slots=True)
class Stated:
    """An assertion as the diff sees it: both ranges, how it started and how it ended."""

    assertion_id: int
    document: str
    version_id: str
    valid: Interval
    tx_from: datetime
    tx_to: datetime | None
    ended: str | None

    def known_at(self, instant: datetime) -> bool:
        """Visible in transaction time at ``instant``: ``tx_from <= instant < tx_to``."""
        return self.tx_from <= instant and (self.tx_to is None or instant < self.tx_to)


@dataclass(frozen=True, kw_only=True, slots=True)
class VersionPair:
    """Content that changed for some valid time: ``from_version`` → ``to_version``."""

    from_version: str | None
    to_version: str | None
    from_state: State
    to_state: State
    ranges: tuple[Interval, ...]
    assertion_ids: tuple[int, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class DocumentChanges:
    """One document's changes in the window, in transaction-time order."""

    document: str
    new_document: bool
    appeared: tuple[Stated, ...]
    ended: tuple[Stated, ...]
    corrected: tuple[Stated, ...]
    pairs: tuple[VersionPair, ...]

    @property
    def size(self) -> int:
        """How many assertion entries the document lists."""
        return len(self.appeared) + len(self.ended) + len(self.corrected)


def intersect(a: Interval, b: Interval) -> Interval | None:
    """The common part of two intervals, or None."""
    if not a.overlaps(b):
        return None
    start = max(a.start, b.start)
    ends = [e for e in (a.end, b.end) if e is not None]
    return Interval(start=start, end=min(ends) if ends else None)


def subtract(a: Interval, cuts: Iterable[Interval]) -> list[Interval]:
    """The parts of ``a`` that none of ``cuts`` covers, in order."""
    parts = [a]
    for cut in cuts:
        rest: list[Interval] = []
        for p in parts:
            if not p.overlaps(cut):
                rest.append(p)
                continue
            if p.start < cut.start:
                rest.append(Interval(start=p.start, end=cut.start))
            if cut.end is not None and (p.end is None or p.end > cut.end):
                rest.append(Interval(start=cut.end, end=p.end))
        parts = rest
    return sorted(parts, key=lambda p: p.start)


def _merge(ranges: Sequence[Interval]) -> tuple[Interval, ...]:
    """Sorted ranges with touching or overlapping neighbours joined."""
    out: list[Interval] = []
    for r in sorted(ranges, key=lambda x: x.start):
        if out and (out[-1].end is None or out[-1].end >= r.start):
            last = out[-1]
            end = None if last.end is None or r.end is None else max(last.end, r.end)
            out[-1] = Interval(start=last.start, end=end)
        else:
            out.append(r)
    return tuple(out)


def pair_versions(rows: Sequence[Stated], window: Window, *,
                  known_before: bool) -> tuple[VersionPair, ...]:
    """Which versions replaced which, for which valid time (see the module docstring)."""
    before = [r for r in rows if r.known_at(window.known_from)]
    after = [r for r in rows if r.known_at(window.known_to)]
    appeared = [r for r in rows if window.contains(r.tx_from)]
    found: dict[tuple[str | None, str | None, State, State],
                tuple[list[Interval], list[int]]] = {}

    def add(key: tuple[str | None, str | None, State, State], part: Interval,
            ids: Iterable[int]) -> None:
        ranges, members = found.setdefault(key, ([], []))
        ranges.append(part)
        members.extend(i for i in ids if i not in members)

    for new in appeared:
        for old in before:
            common = intersect(new.valid, old.valid)
            if common is not None and old.version_id != new.version_id:
                add((old.version_id, new.version_id, "version", "version"), common,
                    (old.assertion_id, new.assertion_id))
        empty: State = "not_in_force" if known_before else "new_document"
        for part in subtract(new.valid, (old.valid for old in before)):
            add((None, new.version_id, empty, "version"), part, (new.assertion_id,))
    for old in before:
        for part in subtract(old.valid, (r.valid for r in after)):
            add((old.version_id, None, "version", "not_in_force"), part, (old.assertion_id,))
    pairs = [VersionPair(from_version=k[0], to_version=k[1], from_state=k[2], to_state=k[3],
                         ranges=_merge(ranges), assertion_ids=tuple(ids))
             for k, (ranges, ids) in found.items()]
    return tuple(sorted(pairs, key=lambda p: (p.ranges[0].start, p.from_version or "",
                                              p.to_version or "")))


def classify(rows: Sequence[Stated], window: Window, *,
             known_before: frozenset[str]) -> list[DocumentChanges]:
    """Group the rows the window touches by document and classify them.

    ``known_before`` names the documents that had a visible assertion at ``known_from``.
    Rows the window does not touch are ignored.
    """
    by_doc: dict[str, list[Stated]] = {}
    for r in rows:
        if window.contains(r.tx_from) or window.contains(r.tx_to):
            by_doc.setdefault(r.document, []).append(r)
    out: list[DocumentChanges] = []
    for document in sorted(by_doc):
        doc_rows = sorted(by_doc[document],
                          key=lambda r: (r.tx_from, r.valid.start, r.assertion_id))
        ending = sorted((r for r in doc_rows if window.contains(r.tx_to)),
                        key=lambda r: (r.tx_to, r.valid.start, r.assertion_id))
        out.append(DocumentChanges(
            document=document, new_document=document not in known_before,
            appeared=tuple(r for r in doc_rows if window.contains(r.tx_from)),
            ended=tuple(r for r in ending if r.ended != "corrected"),
            corrected=tuple(r for r in ending if r.ended == "corrected"),
            pairs=pair_versions(doc_rows, window, known_before=document in known_before)))
    return out
