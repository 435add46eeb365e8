"""The tantivy range encoding (app/stichtag/index/ranges.py) against the domain's visibility
rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from stichtag.domain.asof import AsOf, visible
from stichtag.domain.bitemporal import Interval
from stichtag.index.ranges import (
    INF_US,
    Extent,
    FieldRange,
    canonical,
    encode,
    matches,
    micros,
    passing,
    visibility,
    visibility_at,
)

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


# -- the canonical as-of point of an index state --------------------------------------

GRID = [-INF_US, -7, 0, 3, 5, 9, INF_US]
points = st.sampled_from(sorted({max(min(g + d, INF_US), -INF_US)
                                 for g in GRID for d in (-1, 0, 1)}))


@st.composite
def stored_docs(draw: st.DrawFn) -> list[dict[str, int]]:
    docs = []
    for _ in range(draw(st.integers(1, 6))):
        tx_from, tx_to = sorted(draw(st.lists(st.sampled_from(GRID), min_size=2, max_size=2,
                                              unique=True)))
        valid_from, valid_to = sorted(draw(st.lists(st.sampled_from(GRID), min_size=2,
                                                    max_size=2, unique=True)))
        docs.append({"tx_from": tx_from, "tx_to": tx_to, "valid_from": valid_from,
                     "valid_to": valid_to, "confidentiality": draw(st.integers(0, 3))})
    return docs


def extent_of(docs: list[dict[str, int]], slack: int) -> Extent:
    """The tightest extent, loosened by ``slack`` (an upper bound is all it must be)."""
    def largest(*fields: str) -> int:
        return max(d[f] for d in docs for f in fields if d[f] < INF_US) + slack
    return Extent(tx=largest("tx_from", "tx_to"), valid=largest("valid_from", "valid_to"),
                  level=max(d["confidentiality"] for d in docs) + slack)


@given(docs=stored_docs(), valid_at=points, known_at=points, clearance=st.integers(0, 4),
       slack=st.sampled_from([0, 0, 1, 5]))
def test_the_canonical_point_selects_the_same_documents(
        docs: list[dict[str, int]], valid_at: int, known_at: int, clearance: int,
        slack: int) -> None:
    extent = extent_of(docs, slack)
    v, k, c = canonical(valid_at=valid_at, known_at=known_at, clearance=clearance,
                        extent=extent)
    exact = (*visibility(valid_at=valid_at, known_at=known_at),
             FieldRange(field="confidentiality", upper=clearance))
    short = passing((*visibility(valid_at=v, known_at=k),
                     FieldRange(field="confidentiality", upper=c)), extent)
    for doc in docs:
        assert matches(short, doc) == matches(exact, doc)
    # The marker document (no time fields) is kept out by a filter that always stays.
    assert any(f.lower is not None for f in short)


def test_now_and_later_share_one_point() -> None:
    extent = Extent(tx=100, valid=90, level=2)
    assert canonical(valid_at=500, known_at=700, clearance=9, extent=extent) == (90, 100, 2)
    assert canonical(valid_at=50, known_at=60, clearance=1, extent=extent) == (50, 60, 1)
    assert canonical(valid_at=INF_US, known_at=INF_US, clearance=0,
                     extent=extent) == (INF_US, INF_US, 0)
