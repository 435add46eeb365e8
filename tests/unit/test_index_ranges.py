"""The tantivy range encoding (stichtag/index/ranges.py) against the domain's visibility rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from stichtag.domain.asof import AsOf, visible
from stichtag.domain.bitemporal import Interval
from stichtag.index.ranges import INF_US, encode, matches, micros, visibility_at

BASE = datetime(2020, 1, 1, tzinfo=UTC)
# Instants on a coarse grid plus one microsecond either side: the boundaries are where an
# inclusive/exclusive mix-up shows.
offsets = st.integers(0, 20).flatmap(
    lambda d: st.sampled_from([timedelta(days=d) + timedelta(microseconds=m)
                               for m in (-1, 0, 1)]))
instants = offsets.map(lambda o: BASE + o)


@st.composite
def intervals(draw: st.DrawFn) -> Interval:
    start = draw(instants)
    end = draw(st.one_of(st.none(), instants.filter(lambda e: e > start)))
    return Interval(start=start, end=end)


@given(tx=intervals(), valid=intervals(), known_at=instants, valid_at=instants)
def test_the_index_filters_agree_with_the_domain_rule(
        tx: Interval, valid: Interval, known_at: datetime, valid_at: datetime) -> None:
    at = AsOf(valid_at=valid_at, known_at=known_at)
    assert matches(visibility_at(at), encode(tx=tx, valid=valid)) == visible(
        tx=tx, valid=valid, at=at)


def test_boundaries_are_half_open() -> None:
    tx = Interval(start=BASE, end=BASE + timedelta(days=1))
    valid = Interval(start=BASE)
    stored = encode(tx=tx, valid=valid)
    assert matches(visibility_at(AsOf(valid_at=BASE, known_at=BASE)), stored)
    end = BASE + timedelta(days=1)
    assert not matches(visibility_at(AsOf(valid_at=BASE, known_at=end)), stored)
    just_before = end - timedelta(microseconds=1)
    assert matches(visibility_at(AsOf(valid_at=BASE, known_at=just_before)), stored)


def test_an_open_end_is_infinity() -> None:
    assert micros(None) == INF_US
    far = datetime(9999, 12, 31, tzinfo=UTC)
    assert micros(far) < INF_US
