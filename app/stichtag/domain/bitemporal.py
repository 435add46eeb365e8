"""Bitemporal rules of docs/architecture.md §3 as pure functions.

Transaction time is never rewritten, valid time can be corrected. Every write is planned
here as a set of assertions to close (their transaction time ends now) and assertions to
open (their transaction time starts now); the store applies a plan in one transaction.
Open ends are ``None`` (infinity). Intervals are half-open ``[start, end)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Literal

CONFIDENTIALITY = ("public", "internal", "confidential", "secret")


class BitemporalError(ValueError):
    """A write that would break the bitemporal rules; names the field and the reason."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True, kw_only=True, slots=True)
class Interval:
    """Half-open ``[start, end)``; ``end=None`` is open (infinity)."""

    start: datetime
    end: datetime | None = None

    def __post_init__(self) -> None:
        if self.end is not None and self.end <= self.start:
            raise BitemporalError("valid_to", "must be later than valid_from")

    def contains(self, instant: datetime) -> bool:
        """True when ``start <= instant < end``."""
        return self.start <= instant and (self.end is None or instant < self.end)

    def overlaps(self, other: Interval) -> bool:
        """True when the two intervals share at least one instant."""
        ends_after = self.end is None or other.start < self.end
        other_ends_after = other.end is None or self.start < other.end
        return ends_after and other_ends_after


@dataclass(frozen=True, kw_only=True, slots=True)
class Meta:
    """Document attributes that travel with each assertion, so history keeps them."""

    title: str | None
    doc_class: str
    confidentiality: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Current:
    """A currently known assertion of one document (its transaction time is still open)."""

    assertion_id: int
    version_id: str
    valid: Interval
    meta: Meta


@dataclass(frozen=True, kw_only=True, slots=True)
class NewAssertion:
    """An assertion a plan opens: the asserted one, or an unchanged part carried over."""

    version_id: str
    valid: Interval
    meta: Meta
    kind: Literal["asserted", "carried"]
    carried_from: int | None = None


Ending = Literal["superseded", "retracted", "corrected"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    """What one write does: close these assertions, open these; empty = idempotent no-op."""

    close: tuple[int, ...]
    open: tuple[NewAssertion, ...]
    ending: Ending

    @property
    def empty(self) -> bool:
        """Nothing to write (an idempotent repeat)."""
        return not self.close and not self.open


def _outside(kept: Current, cut: Interval) -> list[NewAssertion]:
    """The parts of ``kept`` outside ``cut``, re-asserted unchanged."""
    parts: list[NewAssertion] = []
    valid = kept.valid
    if valid.start < cut.start:
        parts.append(
            NewAssertion(
                version_id=kept.version_id,
                valid=Interval(start=valid.start, end=cut.start),
                meta=kept.meta,
                kind="carried",
                carried_from=kept.assertion_id,
            )
        )
    if cut.end is not None and (valid.end is None or valid.end > cut.end):
        parts.append(
            NewAssertion(
                version_id=kept.version_id,
                valid=Interval(start=cut.end, end=valid.end),
                meta=kept.meta,
                kind="carried",
                carried_from=kept.assertion_id,
            )
        )
    return parts


def resolve_valid_to(
    current: Sequence[Current], valid_from: datetime, valid_to: datetime | None
) -> datetime | None:
    """XTDB's rule: an explicit end, else the start of the next known version, else open."""
    if valid_to is not None:
        return valid_to
    later = [c.valid.start for c in current if c.valid.start > valid_from]
    return min(later) if later else None


def plan_ingest(
    current: Sequence[Current],
    *,
    version_id: str,
    meta: Meta,
    valid_from: datetime,
    valid_to: datetime | None,
) -> Plan:
    """Plan a new version in force for ``[valid_from, E)`` (rule 4 of section 3)."""
    window = Interval(start=valid_from, end=resolve_valid_to(current, valid_from, valid_to))
    for c in current:
        if c.version_id == version_id and c.valid == window and c.meta == meta:
            return Plan(close=(), open=(), ending="superseded")
    close: list[int] = []
    opened: list[NewAssertion] = []
    for c in sorted(current, key=lambda a: a.valid.start):
        if c.valid.overlaps(window):
            close.append(c.assertion_id)
            opened.extend(_outside(c, window))
    opened.append(NewAssertion(version_id=version_id, valid=window, meta=meta, kind="asserted"))
    return Plan(close=tuple(close), open=tuple(opened), ending="superseded")


def plan_retract(current: Sequence[Current], *, valid_from: datetime) -> Plan:
    """Plan the end of validity from ``valid_from`` on (rule 5): earlier parts are kept."""
    window = Interval(start=valid_from, end=None)
    close: list[int] = []
    opened: list[NewAssertion] = []
    for c in sorted(current, key=lambda a: a.valid.start):
        if c.valid.overlaps(window):
            close.append(c.assertion_id)
            opened.extend(_outside(c, window))
    if not close:
        raise BitemporalError("valid_from", "nothing is in force on or after this date")
    return Plan(close=tuple(close), open=tuple(opened), ending="retracted")


def plan_correct(current: Sequence[Current], *, assertion_id: int) -> Plan:
    """Plan a correction: the assertion was never true; its transaction time ends, no successor."""
    if not any(c.assertion_id == assertion_id for c in current):
        raise BitemporalError("assertion_id", "no currently known assertion with this id")
    return Plan(close=(assertion_id,), open=(), ending="corrected")


def check_disjoint(assertions: Sequence[Current]) -> None:
    """Invariant 3: the valid ranges of a document's visible assertions never overlap."""
    ordered = sorted(assertions, key=lambda a: a.valid.start)
    for left, right in pairwise(ordered):
        if left.valid.overlaps(right.valid):
            raise BitemporalError("valid_from", f"assertions {left.assertion_id} and "
                                  f"{right.assertion_id} overlap in valid time")


def confidentiality_level(name: str, *, field: str = "confidentiality") -> int:
    """Map a level name to its rank (public 0 .. secret 3)."""
    try:
        return CONFIDENTIALITY.index(name)
    except ValueError as exc:
        raise BitemporalError(field, f"must be one of {', '.join(CONFIDENTIALITY)}") from exc
