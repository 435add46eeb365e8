"""The as-of pair and the one visibility rule (DESIGN section 3.2, docs/architecture.md).

An assertion is visible at ``(valid_at, known_at)`` iff ``tx_from <= known_at < tx_to``
and ``valid_from <= valid_at < valid_to`` (open ends are infinity). This module is the
rule in Python, the reference the tests compare the other two writings with: the SQL
function ``visible_at`` (migrations/0007_visibility.sql), which every
query uses, and the tantivy range encoding (``app/stichtag/index/ranges.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from stichtag.domain.bitemporal import Interval
from stichtag.domain.timeutil import to_utc
from stichtag.domain.txclock import cap_known_at


@dataclass(frozen=True, kw_only=True, slots=True)
class AsOf:
    """A Stichtag: what was in force at ``valid_at``, as known at ``known_at`` (aware UTC)."""

    valid_at: datetime
    known_at: datetime
    requested_known_at: datetime | None = None
    """The ``known_at`` asked for when it lay after the server's now (then ``known_at`` is
    that now, docs/architecture.md §3.7); None when the request got what it asked for."""

    def __post_init__(self) -> None:
        """Both instants must be timezone-aware (naive times are ambiguous)."""
        to_utc(self.valid_at, field="valid_at")
        to_utc(self.known_at, field="known_at")


def as_of_pair(*, valid_at: datetime | None, known_at: datetime | None,
               now: datetime) -> AsOf:
    """The as-of pair of a read: absent values are ``now``, and a ``known_at`` after
    ``now`` is read as ``now`` and kept as ``requested_known_at`` so the answer says so."""
    asked = known_at or now
    known = cap_known_at(asked, now)
    return AsOf(valid_at=valid_at or now, known_at=known,
                requested_known_at=asked if known != asked else None)


def visible(*, tx: Interval, valid: Interval, at: AsOf) -> bool:
    """The visibility rule: known at ``at.known_at`` and in force at ``at.valid_at``."""
    return tx.contains(at.known_at) and valid.contains(at.valid_at)
