"""The tenant's transaction clock as pure rules (docs/architecture.md §3.6, §3.7)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from stichtag.domain.asof import as_of_pair
from stichtag.domain.errors import Conflict
from stichtag.domain.timeutil import MICRO
from stichtag.domain.txclock import ObservedPast, cap_known_at, next_tx, observe

CLOCK = datetime(2026, 3, 1, 12, tzinfo=UTC)
NOW = CLOCK + timedelta(hours=1)


def test_a_write_without_tx_time_is_strictly_after_both_hands() -> None:
    assert next_tx(None, None, NOW, None) == NOW
    assert next_tx(CLOCK, None, NOW, None) == NOW
    assert next_tx(CLOCK, None, CLOCK, None) == CLOCK + MICRO  # the wall clock did not move
    assert next_tx(NOW, None, CLOCK, None) == NOW + MICRO  # ... or stepped back
    assert next_tx(CLOCK, NOW, CLOCK, None) == NOW + MICRO  # a run's node clock ran ahead


@pytest.mark.parametrize("requested", [CLOCK - timedelta(days=400), CLOCK - MICRO, CLOCK])
def test_an_import_at_or_before_what_a_run_observed_is_refused_naming_it(
        requested: datetime) -> None:
    with pytest.raises(ObservedPast) as refused:
        next_tx(CLOCK - timedelta(days=500), CLOCK, NOW, requested)
    assert refused.value.clock == CLOCK
    assert refused.value.field == "tx_time"
    assert "2026-03-01T12:00:00Z" in refused.value.reason
    assert "recorded run" in refused.value.reason
    assert isinstance(refused.value, Conflict)  # a 409 wherever Conflict is one


def test_an_import_before_the_latest_write_is_refused_at_it_is_not() -> None:
    with pytest.raises(ObservedPast, match="latest write") as refused:
        next_tx(CLOCK, None, NOW, CLOCK - MICRO)
    assert refused.value.clock == CLOCK
    # Several documents recorded at one instant (an archive's crawl date): nothing has
    # observed that instant yet, so the same instant as the latest write is free.
    assert next_tx(CLOCK, None, NOW, CLOCK) == CLOCK
    assert next_tx(CLOCK, CLOCK - MICRO, NOW, CLOCK) == CLOCK


def test_an_import_after_the_clock_and_not_after_now_is_accepted() -> None:
    assert next_tx(CLOCK, CLOCK, NOW, CLOCK + MICRO) == CLOCK + MICRO
    assert next_tx(CLOCK, None, NOW, NOW) == NOW
    assert next_tx(None, None, NOW, CLOCK - timedelta(days=4000)) == CLOCK - timedelta(days=4000)
    with pytest.raises(Conflict, match="future"):
        next_tx(CLOCK, None, NOW, NOW + MICRO)


def test_a_run_moves_the_observation_forward_only() -> None:
    assert observe(None, CLOCK) == CLOCK
    assert observe(CLOCK, NOW) == NOW
    assert observe(NOW, CLOCK) == NOW


def test_a_future_known_at_is_read_as_now_and_the_pair_says_so() -> None:
    assert cap_known_at(NOW + timedelta(days=1), NOW) == NOW
    assert cap_known_at(CLOCK, NOW) == CLOCK
    future = as_of_pair(valid_at=None, known_at=NOW + timedelta(days=9), now=NOW)
    assert (future.valid_at, future.known_at) == (NOW, NOW)
    assert future.requested_known_at == NOW + timedelta(days=9)
    past = as_of_pair(valid_at=CLOCK, known_at=CLOCK, now=NOW)
    assert (past.valid_at, past.known_at, past.requested_known_at) == (CLOCK, CLOCK, None)
    assert as_of_pair(valid_at=None, known_at=None, now=NOW).requested_known_at is None
