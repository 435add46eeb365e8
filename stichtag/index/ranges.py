"""The visibility rule as tantivy range filters: the one place the encoding lives.

The index stores each (assertion, passage) with its valid and transaction ranges as i64
microseconds since the Unix epoch (UTC), an open end as ``INF_US``. The rule of
``stichtag.domain.asof.visible`` then becomes four one-sided ranges, each either an inclusive
upper bound (``tx_from <= known_at``) or an exclusive lower bound (``known_at < tx_to``).
``matches`` evaluates the same filters in Python; tests/unit/test_index_ranges.py checks
it against the domain rule, and tests/integration/test_tantivy_index.py the index itself.
"""

from __future__ import annotations

from collections.abc import Mapping
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
