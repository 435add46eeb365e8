"""How ``Database.tx`` starts a transaction: settings in the ``BEGIN`` round trip, quoted.

The settings travel as literals in one simple query with ``BEGIN`` (app/stichtag/store/
database.py), so their quoting is the store's own; these tests give it hostile values and
count the round trips a transaction costs, which bench/bench_transactions.py reports per
answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import psycopg
import pytest

from stichtag.store.database import Database, open_pool


@pytest.fixture
def db(database: str) -> Iterator[Database]:
    pool = open_pool(database, min_size=1, max_size=2, name="tx-start")
    try:
        yield Database(pool)
    finally:
        pool.close()


@pytest.mark.parametrize("value", ["O'Brien", "a\\b'; SELECT 1; --", "Zürich \u2028 \"q\"", ""])
def test_a_setting_arrives_verbatim_and_only_inside_its_transaction(db: Database,
                                                                    value: str) -> None:
    tenant = uuid4()
    with db.tx(tenant, tenant_name=value) as conn:
        got = conn.execute("SELECT current_setting('app.tenant_id'), "
                           "current_setting('app.tenant_name')").fetchone()
    assert got == (str(tenant), value)
    with db.tx(None) as conn:  # the same pooled connection, next transaction: nothing left
        left = conn.execute("SELECT current_setting('app.tenant_id', true), "
                            "current_setting('app.tenant_name', true)").fetchone()
    assert left in {(None, None), ("", "")}


def test_an_error_rolls_back_and_the_connection_serves_the_next_transaction(
        db: Database) -> None:
    with db.tx(None) as conn:
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS t (x int)")
    with pytest.raises(psycopg.errors.DivisionByZero), db.tx(None) as conn:
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("SELECT 1 / 0")
    with db.tx(None) as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_a_transaction_costs_two_round_trips_besides_its_statements(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    trips = []
    original = psycopg.Connection.wait

    def wait(conn: psycopg.Connection[Any], *args: Any, **kwargs: Any) -> Any:
        trips.append(1)
        return original(conn, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "wait", wait)
    with db.tx(uuid4(), key_lookup="k1") as conn:
        conn.execute("SELECT 1")
        conn.execute("SELECT 2")
    assert len(trips) == 4  # BEGIN + settings, two statements, COMMIT


def test_a_connection_killed_while_idle_is_replaced_at_begin(db: Database,
                                                             database: str) -> None:
    with db.tx(None) as conn:
        victim = conn.execute("SELECT pg_backend_pid()").fetchone()
    with psycopg.connect(database, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", victim)
    with db.tx(uuid4()) as conn:  # no error: the dead connection failed at BEGIN
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert pid != victim
