"""The SQL visibility function (migrations/0007_visibility.sql) against the
domain rule, and its plans: the planner inlines ``visible_at``, so a query using it is
planned exactly as the written-out range predicate was (same index use)."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from stichtag.domain.asof import AsOf, visible
from stichtag.domain.bitemporal import Interval

BASE = datetime(2020, 1, 1, tzinfo=UTC)
POINTS = [BASE + timedelta(days=d, microseconds=m) for d in (0, 3, 7) for m in (-1, 0, 1)]


def _intervals() -> list[Interval]:
    out = [Interval(start=s) for s in POINTS]
    out += [Interval(start=s, end=e) for s, e in itertools.combinations(POINTS, 2)]
    return out


def test_visible_at_agrees_with_the_domain_rule(database: str) -> None:
    spans = _intervals()
    with psycopg.connect(database) as conn:
        rows = conn.execute("""
            SELECT t.i, v.i, k.i, a.i,
                   visible_at(tstzrange(t.s, t.e, '[)'), tstzrange(v.s, v.e, '[)'), k.p, a.p)
            FROM unnest(%(ss)s::timestamptz[], %(es)s::timestamptz[]) WITH ORDINALITY
                   AS t(s, e, i)
            CROSS JOIN unnest(%(ss)s::timestamptz[], %(es)s::timestamptz[]) WITH ORDINALITY
                   AS v(s, e, i)
            CROSS JOIN unnest(%(ps)s::timestamptz[]) WITH ORDINALITY AS k(p, i)
            CROSS JOIN unnest(%(ps)s::timestamptz[]) WITH ORDINALITY AS a(p, i)
            WHERE t.i %% 5 = 0 AND v.i %% 3 = 0""",
            {"ss": [s.start for s in spans], "es": [s.end for s in spans],
             "ps": POINTS}).fetchall()
    assert len(rows) > 5_000
    mismatches = [r for r in rows if r[4] != visible(
        tx=spans[r[0] - 1], valid=spans[r[1] - 1],
        at=AsOf(known_at=POINTS[r[2] - 1], valid_at=POINTS[r[3] - 1]))]
    assert mismatches == []


def _plan(conn: psycopg.Connection[Any], predicate: str) -> Any:
    text = ("EXPLAIN (FORMAT JSON, COSTS OFF) SELECT a.assertion_id FROM assertions a "
            f"WHERE {predicate} AND a.confidentiality <= 3")
    row = conn.execute(text, {"known_at": BASE, "valid_at": BASE}).fetchone()
    assert row is not None
    plan = row[0] if not isinstance(row[0], str) else json.loads(row[0])
    return plan


def test_the_function_is_inlined_into_the_same_plan_as_the_written_out_predicate(
        database: str) -> None:
    written = ("a.tx @> %(known_at)s::timestamptz AND a.valid @> %(valid_at)s::timestamptz")
    called = "visible_at(a.tx, a.valid, %(known_at)s::timestamptz, %(valid_at)s::timestamptz)"
    with psycopg.connect(database) as conn:  # the application role: RLS in both plans
        conn.execute("SET enable_seqscan = off")  # make the index path the visible choice
        before, after = _plan(conn, written), _plan(conn, called)
    assert before == after
    shown = json.dumps(after)
    assert "visible_at" not in shown  # inlined: the plan holds the range tests themselves
    assert "tx @>" in shown and "valid @>" in shown
