"""The visibility rule as tantivy range filters: the one place the encoding lives.

The index stores each (assertion, passage) with its valid and transaction ranges as i64
microseconds since the Unix epoch (UTC), an open end as ``INF_US``. The rule of
``stichtag.domain.asof.visible`` then becomes four one-sided ranges, each either an inclusive
upper bound (``tx_from <= known_at``) or an exclusive lower bound (``known_at < tx_to``).
``matches`` evaluates the same filters in Python; tests/unit/test_index_ranges.py checks
it against the domain rule, and tests/integration/test_tantivy_index.py the index itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from stichtag.domain.asof import AsOf
from stichtag.domain.bitemporal import Interval
from stichtag.domain.timeutil import to_micros

INF_US = 2**62
"""Microsecond timestamp standing for an open end (+infinity) of a range."""


def micros(value: datetime | None) -> int:
    """An instant as index microseconds; an open end (None) is ``INF_US``."""
    return to_micros(value, infinity=INF_US)


@dataclass(frozen=True, kw_only=True, slots=True)
class FieldRange:
    """``lower < field`` (exclusive) and/or ``field <= upper`` (inclusive)."""

    field: str
    lower: int | None = None
    upper: int | None = None

    def holds(self, value: int) -> bool:
        """Whether a stored value passes this filter."""
        return ((self.lower is None or self.lower < value)
                and (self.upper is None or value <= self.upper))


def encode(*, tx: Interval, valid: Interval) -> dict[str, int]:
    """The four stored time fields of an assertion."""
    return {"tx_from": micros(tx.start), "tx_to": micros(tx.end),
            "valid_from": micros(valid.start), "valid_to": micros(valid.end)}


def visibility(*, valid_at: int, known_at: int) -> tuple[FieldRange, ...]:
    """The filters a document must pass to be visible at (valid_at, known_at), both in
    index microseconds."""
    return (FieldRange(field="tx_from", upper=known_at),
            FieldRange(field="tx_to", lower=known_at),
            FieldRange(field="valid_from", upper=valid_at),
            FieldRange(field="valid_to", lower=valid_at))


def visibility_at(at: AsOf) -> tuple[FieldRange, ...]:
    """The filters of ``visibility`` for an as-of pair."""
    return visibility(valid_at=micros(at.valid_at), known_at=micros(at.known_at))


def matches(filters: tuple[FieldRange, ...], stored: Mapping[str, int]) -> bool:
    """Whether stored fields pass every filter (what tantivy evaluates)."""
    return all(f.holds(stored[f.field]) for f in filters)


@dataclass(frozen=True, kw_only=True, slots=True)
class Extent:
    """Upper bounds of what one index state holds: no document has a finite tx time above
    ``tx``, a finite valid time above ``valid``, or a level above ``level``."""

    tx: int
    valid: int
    level: int


def canonical(*, valid_at: int, known_at: int, clearance: int,
              extent: Extent) -> tuple[int, int, int]:
    """The representative of (valid_at, known_at, clearance) for ``extent``: the same
    documents pass ``visibility`` and the level filter at both, on every state within it.

    Beyond every finite time of a kind, an instant compares the same with each stored value
    as the largest one does (later than each finite value, earlier than an open end), so
    "now" and every later instant become ``extent.tx`` and share one memoized count;
    likewise a clearance above the highest level. ``INF_US`` itself is no instant (it is
    not earlier than an open end) and stays as it is.
    """
    def clamp(at: int, bound: int) -> int:
        return at if at >= INF_US else min(at, bound)

    return (clamp(valid_at, extent.valid), clamp(known_at, extent.tx),
            min(clearance, extent.level))


def passing(filters: Sequence[FieldRange], extent: Extent) -> tuple[FieldRange, ...]:
    """``filters`` without the upper-bound ones every document of ``extent`` passes.

    A lower-bound filter (``known_at < tx_to``) always stays: it is what keeps a document
    without time fields (the index's sequence marker) out of every count.
    """
    bound = {"tx_from": extent.tx, "valid_from": extent.valid, "confidentiality": extent.level}
    return tuple(f for f in filters
                 if not (f.lower is None and f.upper is not None and f.field in bound
                         and f.upper >= bound[f.field]))
