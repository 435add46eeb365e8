"""The tenant's transaction clock (docs/architecture.md §3.6): no write into an observed past.

Each tenant has one clock: the latest transaction time anything has observed — a write
(its ``tx_from``) or a recorded run (its ``known_at``). A run recorded at ``known_at``
has seen every assertion with ``tx_from <= known_at``; an import that set ``tx_from`` to
such an instant later would change that run's view, and replay would no longer reproduce
it. So the clock only moves forward and an admin import must lie strictly after it.

The rules here are pure: the store applies them to the clock row it locked, the fakes to
a dictionary.
"""

from __future__ import annotations

from datetime import datetime

from app.domain.errors import Conflict
from app.domain.timeutil import MICRO, format_time


class ObservedPast(Conflict):
    """An admin import's ``tx_time`` at or before the tenant's clock (409, names the clock)."""

    def __init__(self, clock: datetime) -> None:
        stamp = format_time(clock)
        super().__init__("tx_time", f"must be after the tenant's transaction clock {stamp}: "
                                    "a write or a recorded run has already observed that time")
        self.clock = clock


def next_tx(clock: datetime | None, now: datetime, requested: datetime | None) -> datetime:
    """The transaction time of the next write: ``now`` (strictly after the clock even if
    the wall clock stepped back), or an admin import's ``requested`` time, which must lie
    after the clock and not after ``now``."""
    if requested is None:
        return now if clock is None or now > clock else clock + MICRO
    if clock is not None and requested <= clock:
        raise ObservedPast(clock)
    if requested > now:
        raise Conflict("tx_time", "must not be in the future")
    return requested


def observe(clock: datetime | None, known_at: datetime) -> datetime:
    """The clock after a run recorded at ``known_at``: it never moves back."""
    return known_at if clock is None or known_at > clock else clock


def cap_known_at(known_at: datetime, now: datetime) -> datetime:
    """A ``known_at`` after ``now`` is read as ``now``: nothing is known about the future of
    knowledge, and a run must never claim a state of knowledge that a later write could
    still change."""
    return now if known_at > now else known_at
