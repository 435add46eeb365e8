"""The tenant's transaction clock (docs/architecture.md §3.6): no write into an observed past.

Each tenant's clock has two hands: the latest write (``last_tx``, the ``tx_from`` of its
latest change) and the latest observation (``observed_to``, the largest ``known_at`` of
a recorded run). A run recorded at ``known_at`` has seen every assertion with
``tx_from <= known_at``; an import that set ``tx_from`` to such an instant later would
change that run's view, and replay would no longer reproduce it. So both hands only move
forward, and an admin import must lie strictly after the observation and not before the
latest write — at the same instant as the latest write is allowed, because an archive
often records several documents at one instant (a crawl date) and nothing has observed
that instant yet. (Two changes of one *document* at one instant are refused by the
store: the earlier one would vanish from every view.)

The rules here are pure: the store applies them to the clock row it locked, the fakes to
a dictionary.
"""

from __future__ import annotations

from datetime import datetime

from stichtag.domain.errors import Conflict
from stichtag.domain.timeutil import MICRO, format_time


class ObservedPast(Conflict):
    """An admin import's ``tx_time`` in the tenant's observed past (409, names the clock)."""

    def __init__(self, clock: datetime, *, observed: bool) -> None:
        stamp = format_time(clock)
        reason = (f"must be after the tenant's transaction clock {stamp}: a recorded run has "
                  "already observed that time" if observed else
                  f"must not be before the tenant's transaction clock {stamp}, its latest "
                  "write")
        super().__init__("tx_time", reason)
        self.clock = clock


def latest(*times: datetime | None) -> datetime | None:
    """The latest of the given instants (None: nothing yet)."""
    known = [t for t in times if t is not None]
    return max(known) if known else None


def next_tx(last_tx: datetime | None, observed_to: datetime | None, now: datetime,
            requested: datetime | None) -> datetime:
    """The transaction time of the next write: ``now``, strictly after both hands even if
    the wall clock stepped back (or a node's clock ran ahead of the database's); or an
    admin import's ``requested`` time, not before the latest write, strictly after the
    latest observation, and not after ``now``."""
    if requested is None:
        clock = latest(last_tx, observed_to)
        return now if clock is None or now > clock else clock + MICRO
    if observed_to is not None and requested <= observed_to:
        raise ObservedPast(observed_to, observed=True)
    if last_tx is not None and requested < last_tx:
        raise ObservedPast(last_tx, observed=False)
    if requested > now:
        raise Conflict("tx_time", "must not be in the future")
    return requested


def observe(observed_to: datetime | None, known_at: datetime) -> datetime:
    """The observation hand after a run recorded at ``known_at``: it never moves back."""
    return known_at if observed_to is None or known_at > observed_to else observed_to


def cap_known_at(known_at: datetime, now: datetime) -> datetime:
    """A ``known_at`` after ``now`` is read as ``now``: nothing is known about the future of
    knowledge, and a run must never claim a state of knowledge that a later write could
    still change."""
    return now if known_at > now else known_at
