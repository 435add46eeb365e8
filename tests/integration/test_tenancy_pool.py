"""Tenants interleaved over a small connection pool never see each other's data or setting.

``app.tenant_id`` is set per transaction (``set_config(..., true)``); these tests hammer a
pool of a few connections with several tenants at once, over HTTP and at the store, and
check that a connection returned to the pool carries no tenant into its next checkout.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stichtag.bootstrap import Services, bootstrap
from stichtag.config import Settings
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from tests.conftest import LiveServer, make_tenant

TENANTS = 5
ROUNDS = 84  # 5 requests per round: 5 tenants x 84 x 5 = 2,100 requests


def _text(i: int, n: int) -> str:
    return f"# Mandant {i}\n\n(1) Mandant{i}Marke Fassung {n}.\n"


@dataclass
class Tenant:
    index: int
    who: Principal
    token: str
    own_key: str


def _run_threads(count: int, work: Any) -> list[BaseException]:
    """Run ``work(i, barrier)`` on ``count`` threads; return what they raised."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            work(i, barrier)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    return errors


def test_interleaved_http_requests_see_only_their_tenant(live: LiveServer) -> None:
    assert live.services.settings.pool_max <= 4
    tenants: list[Tenant] = []
    for i in range(TENANTS):
        who = make_tenant(live.services, f"pool{i}")
        for key in (f"own-{i}", "common"):  # "common" exists in every tenant, own-i in one
            live.services.documents.ingest(who, key, IngestRequest(
                text=_text(i, 0), valid_from=datetime(2020, 1, 1, tzinfo=UTC),
                confidentiality="public"))
        tenants.append(Tenant(i, who, live.key(who, scopes="read,write"), f"own-{i}"))
    other_keys = {t.index: [u.own_key for u in tenants if u is not t] for t in tenants}
    counts: dict[int, int] = defaultdict(int)
    wrong: list[str] = []

    def work(i: int, barrier: threading.Barrier) -> None:
        me = tenants[i]
        marker = f"Mandant{i}Marke"
        with live.client(me.token) as http:
            barrier.wait()
            for n in range(ROUNDS):
                # A write of this tenant between the reads (takes the tenant's clock lock).
                r = http.post("/v1/documents/common/versions", json={
                    "text": _text(i, n + 1), "valid_from": "2020-01-01",
                    "confidentiality": "public"})
                if r.status_code != 201 or marker not in _text(i, n + 1):
                    wrong.append(f"tenant {i} write: {r.status_code} {r.text[:200]}")
                current = r.json().get("version_id")
                r = http.get("/v1/documents/common")
                body = r.json()
                # Later writes of this same thread only; the current version is exactly ours.
                if (r.status_code != 200 or body["version_id"] != current
                        or marker not in body["text"]):
                    wrong.append(f"tenant {i} common: {r.status_code} {r.text[:200]}")
                r = http.get(f"/v1/documents/{me.own_key}/history")
                hist = r.json().get("assertions", [])
                if r.status_code != 200 or not hist or any(
                        a["document"] != me.own_key for a in hist):
                    wrong.append(f"tenant {i} history: {r.status_code} {r.text[:200]}")
                r = http.get(f"/v1/versions/{current}")
                if r.status_code != 200 or r.json()["text"] != _text(i, n + 1):
                    wrong.append(f"tenant {i} version: {r.status_code} {r.text[:200]}")
                other = other_keys[i][n % len(other_keys[i])]
                r = http.get(f"/v1/documents/{other}", params={"valid_at": "2021-01-01"})
                if r.status_code != 404 or "Marke" in r.text:
                    wrong.append(f"tenant {i} saw {other}: {r.status_code} {r.text[:200]}")
                counts[i] += 5
                if len(wrong) > 20:
                    return

    errors = _run_threads(TENANTS, work)
    assert not errors, errors
    assert not wrong, "\n".join(wrong[:20])
    assert sum(counts.values()) >= 2000, counts
    # Every tenant's history holds exactly its own writes, none lost to another tenant.
    for t in tenants:
        hist = live.services.documents.history(t.who, "common")
        mine = {a.version_id for a in hist}
        assert len(mine) == ROUNDS + 1


# -- store level, a pool of two connections -------------------------------------------


@pytest.fixture
def small_pool(database: str, tmp_path: Path) -> Iterator[Services]:
    """Services over a pool of at most two connections (no search, so no model)."""
    svc = bootstrap(Settings(data_dir=tmp_path / "data", database_url=database,
                             pool_min=2, pool_max=2), run_migrations=False, embedder=None)
    yield svc
    svc.close()


SETTING = "SELECT current_setting('app.tenant_id', true), app_tenant(), pg_backend_pid()"


def test_store_transactions_over_two_connections_keep_tenants_apart(small_pool: Services) -> None:
    svc = small_pool
    tenants = [make_tenant(svc, f"small{i}") for i in range(6)]
    for i, who in enumerate(tenants):
        svc.documents.ingest(who, "doc", IngestRequest(text=_text(i, 0), confidentiality="public"))
    seen_by_pid: dict[int, set[int]] = defaultdict(set)
    wrong: list[str] = []
    done = [0]
    lock = threading.Lock()

    def work(i: int, barrier: threading.Barrier) -> None:
        who = tenants[i]
        barrier.wait()
        for n in range(400):
            kind = n % 4
            if kind == 0:
                with svc.store.tx(who.tenant_id) as conn:
                    setting, current, pid = conn.execute(SETTING).fetchone()
                    rows = conn.execute("SELECT DISTINCT tenant_id FROM documents").fetchall()
                if (setting != str(who.tenant_id) or current != who.tenant_id
                        or rows != [(who.tenant_id,)]):
                    wrong.append(f"tenant {i}: setting {setting!r}, rows {rows}")
                with lock:
                    seen_by_pid[pid].add(i)
            elif kind == 1:
                with svc.store.tx(None) as conn:
                    setting, current, _ = conn.execute(SETTING).fetchone()
                    count = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
                if setting not in (None, "") or current is not None or count != 0:
                    wrong.append(f"untenanted: setting {setting!r}, {count} documents")
            elif kind == 2:
                _, content = svc.documents.get(who, "doc", valid_at=datetime.now(UTC),
                                                 known_at=datetime.now(UTC))
                if content.text != _text(i, 0):
                    wrong.append(f"tenant {i} read {content.text!r}")
            else:
                hist = svc.documents.history(who, "doc")
                if len(hist) != 1 or f"Mandant{i}Marke" not in svc.store.documents.version_content(
                        who.tenant_id, version_id=hist[0].version_id, clearance=3).text:
                    wrong.append(f"tenant {i} history {hist}")
            with lock:
                done[0] += 1

    errors = _run_threads(len(tenants), work)
    assert not errors, errors
    assert not wrong, "\n".join(wrong[:20])
    assert done[0] == 2400
    # Two connections carried all six tenants: the interleaving really happened.
    assert 1 <= len(seen_by_pid) <= 2, seen_by_pid
    assert max(len(v) for v in seen_by_pid.values()) >= 3, seen_by_pid


LEFTOVERS = ("SELECT current_setting('app.tenant_id', true),"
             " current_setting('app.tenant_name', true),"
             " current_setting('app.key_lookup', true), app_tenant()::text")


def _checkout_pid(svc: Services, pid: int) -> tuple[Any, ...]:
    """Check out connections until the one with backend ``pid``; return its app settings."""
    with svc.store.pool.connection() as first:
        if first.execute("SELECT pg_backend_pid()").fetchone()[0] == pid:
            return tuple(first.execute(LEFTOVERS).fetchone())
        with svc.store.pool.connection() as second:  # the pool holds two: this must be it
            assert second.execute("SELECT pg_backend_pid()").fetchone()[0] == pid
            return tuple(second.execute(LEFTOVERS).fetchone())


class Boom(Exception):
    pass


@pytest.mark.parametrize("ending", ["commit", "exception", "extra settings"])
def test_next_checkout_of_a_connection_carries_no_tenant(small_pool: Services, ending: str) -> None:
    svc = small_pool
    who = make_tenant(svc, "xray")
    tenant = who.tenant_id
    pid = None
    extra = ({"key_lookup": "0123456789abcdef", "tenant_name": "xray"}
             if ending == "extra settings" else {})
    try:
        with svc.store.tx(tenant, **extra) as conn:
            setting, current, pid = conn.execute(SETTING).fetchone()
            assert (setting, current) == (str(tenant), tenant)
            for name, value in extra.items():
                assert conn.execute("SELECT current_setting(%s, true)", (f"app.{name}",)
                                    ).fetchone()[0] == value
            if ending == "exception":
                raise Boom
    except Boom:
        pass
    assert pid is not None
    leftovers = _checkout_pid(svc, pid)
    assert all(v in (None, "") for v in leftovers), leftovers
    # And the next untenanted transaction sees no rows at all (not even by tenant name).
    with svc.store.tx(None) as conn:
        assert conn.execute("SELECT count(*) FROM tenants").fetchone() == (0,)
    assert svc.store.tenancy.tenant(tenant).name == "xray"
