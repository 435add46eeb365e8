"""The standby read rule's pure parts: tokens, LSNs and the stable-past test
(app/stichtag/store/replica.py; docs/architecture.md, "Reads from a standby")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stichtag.store.replica import BadToken, format_lsn, parse_lsn, parse_token, stable_past

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_lsn_round_trips_and_orders(value: int) -> None:
    text = format_lsn(value)
    assert parse_lsn(text) == value
    assert parse_lsn(text.lower()) == value


def test_lsn_order_is_numeric_not_textual() -> None:
    assert parse_lsn("0/A0000000") > parse_lsn("0/9FFFFFFF")
    assert parse_lsn("1/0") > parse_lsn("0/FFFFFFFF")


@pytest.mark.parametrize("bad", ["", "16", "16/", "/1", "G/1", "1/2/3", "123456789/0", "0x1/2"])
def test_a_malformed_token_is_refused(bad: str) -> None:
    with pytest.raises(BadToken):
        parse_lsn(bad)


@given(st.integers(min_value=0, max_value=10**18 - 1))
def test_a_token_is_a_decimal_position(value: int) -> None:
    assert parse_token(str(value)) == value


@pytest.mark.parametrize("bad", ["", "-1", "1.5", "0/3032AD0", "ab", "1" * 19, " ", "+1"])
def test_a_malformed_consistency_token_is_refused(bad: str) -> None:
    with pytest.raises(BadToken):
        parse_token(bad)


def test_stable_past() -> None:
    second = timedelta(seconds=1)
    # at or before the observation: no write can land there any more
    assert stable_past(T0, last_tx=None, observed_to=T0)
    assert stable_past(T0 - second, last_tx=None, observed_to=T0)
    assert not stable_past(T0 + second, last_tx=None, observed_to=T0)
    # strictly before the latest write; an import may still reuse last_tx itself
    assert stable_past(T0 - second, last_tx=T0, observed_to=None)
    assert not stable_past(T0, last_tx=T0, observed_to=None)
    assert stable_past(T0, last_tx=T0, observed_to=T0)
    # a tenant the standby does not have yet: nothing is stable
    assert not stable_past(T0 - 1000 * second, last_tx=None, observed_to=None)
