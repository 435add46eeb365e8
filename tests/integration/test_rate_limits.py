"""Back-pressure over real HTTP: per-key rate limits, per-tenant queues, fairness.

Each test sets its limits through the ``settings`` fixture (overridden here, indirectly
parametrized), so the server under test runs exactly those limits.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from stichtag.config import Settings
from stichtag.services.documents import IngestRequest
from tests.conftest import METRICS_AUTH, METRICS_KEY, LiveServer, make_tenant

GENEROUS = {"rate_per_second": 10_000.0, "rate_burst": 10_000, "rate_tenant_inflight": 4,
            "rate_tenant_queue": 64, "rate_node_inflight": 4, "rate_node_queue": 256,
            "rate_queue_timeout": 60.0}


@pytest.fixture
def settings(request: pytest.FixtureRequest, database: str, tmp_path: Path,
             models_dir: Path) -> Settings:
    limits: dict[str, Any] = {**GENEROUS, **getattr(request, "param", {})}
    return Settings(data_dir=tmp_path / "data", database_url=database, max_body_bytes=2 * 2**20,
                    pool_min=1, pool_max=4, models_path=models_dir,
                    metrics_key=METRICS_KEY, **limits)


def _seed(live: LiveServer, name: str) -> tuple[Any, str]:
    who = make_tenant(live.services, name)
    for n in range(3):
        live.services.documents.ingest(who, f"doc{n}", IngestRequest(
            text=f"# Regel {n}\n\n(1) Der Höchstzinssatz beträgt {n},25 Prozent für {name}.\n",
            valid_from=datetime(2020, 1, 1, tzinfo=UTC), confidentiality="public"))
    return who, live.key(who, scopes="read,write")


def _assert_throttle_problem(r: httpx.Response, *, limit: str | None = None) -> int:
    assert r.status_code == 429, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    retry = r.headers["retry-after"]
    assert re.fullmatch(r"[1-9][0-9]*", retry), retry  # delta-seconds, at least 1
    body = r.json()
    assert body["status"] == 429 and body["title"] == "Too Many Requests"
    assert body["retry_after"] == int(retry)
    assert "STICHTAG_RATE_" in body["detail"]  # the body names the limit
    if limit is not None:
        assert body["limit"] == limit
    return int(retry)


RATE = {"rate_per_second": 2.0, "rate_burst": 3}


@pytest.mark.parametrize("settings", [RATE], indirect=True)
def test_a_key_over_its_rate_gets_429_with_retry_after_and_is_served_after_it(
        live: LiveServer) -> None:
    who, token = _seed(live, "rate")
    other = live.key(who, scopes="read")
    with live.client(token) as http:
        codes = [http.get("/v1/documents/doc0").status_code for _ in range(3)]
        assert codes == [200, 200, 200]  # the burst
        refused = http.get("/v1/documents/doc0")
        retry = _assert_throttle_problem(refused, limit="key_rate")
        assert retry == 1  # one token at 2/s is at most 0.5 s away
        # Another key of the same tenant has its own bucket.
        with live.client(other) as second:
            assert second.get("/v1/documents/doc0").status_code == 200
        time.sleep(retry)
        assert http.get("/v1/documents/doc0").status_code == 200
    metrics = httpx.get(f"{live.base_url}/metrics", headers=METRICS_AUTH).text
    assert re.search(r'stichtag_throttled_total\{operation="getDocumentAsOf",'
                     r'reason="key_rate"\} [1-9]', metrics), metrics[-2000:]


@pytest.mark.parametrize("settings", [RATE], indirect=True)
def test_bad_secrets_for_a_key_id_do_not_spend_that_keys_tokens(live: LiveServer) -> None:
    _, token = _seed(live, "victim")
    key_id = token.split("_")[1]
    forged = [f"stk_{key_id}_{'A' * 42}{c}" for c in "BCDEFGHIJKLMNOPQRSTUVWXYZ"]
    statuses = Counter()
    for bad in forged * 2:  # 50 wrong secrets naming the victim's key id
        with httpx.Client(base_url=live.base_url, timeout=30,
                          headers={"Authorization": f"Bearer {bad}"}) as http:
            statuses[http.get("/v1/documents/doc0").status_code] += 1
    assert statuses == Counter({401: 50}), statuses
    with live.client(token) as http:  # the whole burst is still there
        assert [http.get("/v1/documents/doc0").status_code for _ in range(3)] == [200] * 3


FLOOD = {"rate_tenant_inflight": 1, "rate_tenant_queue": 2, "rate_node_inflight": 3,
         "rate_queue_timeout": 5.0}


@pytest.mark.parametrize("settings", [FLOOD], indirect=True)
def test_a_flooding_tenant_gets_429_while_another_tenant_is_served(live: LiveServer) -> None:
    _, token_a = _seed(live, "floods")
    _, token_b = _seed(live, "calm")
    body = {"query": "Höchstzinssatz Prozent", "k": 5}
    stop = threading.Event()
    a_codes: Counter[int] = Counter()
    a_refusals: list[httpx.Response] = []
    lock = threading.Lock()

    def flood() -> None:
        with live.client(token_a) as http:
            while not stop.is_set():
                r = http.post("/v1/search", json=body)
                with lock:
                    a_codes[r.status_code] += 1
                    if r.status_code == 429 and len(a_refusals) < 50:
                        a_refusals.append(r)

    workers = [threading.Thread(target=flood) for _ in range(12)]
    for w in workers:
        w.start()
    b_codes: list[int] = []
    try:
        time.sleep(0.5)  # the flood is under way
        with live.client(token_b) as http:
            for _ in range(15):
                b_codes.append(http.post("/v1/search", json=body).status_code)
    finally:
        stop.set()
        for w in workers:
            w.join(timeout=60)
    assert b_codes == [200] * 15, b_codes
    assert a_codes[200] > 0, a_codes
    assert a_codes[429] > 0, a_codes  # 12 concurrent requests over 1 slot + 2 queued
    assert set(a_codes) <= {200, 429}, a_codes
    for r in a_refusals:
        _assert_throttle_problem(r)
        assert r.json()["limit"] in ("tenant_queue_full", "tenant_queue_timeout")
    services = live.services
    refused = services.metrics.registry.get_sample_value(
        "stichtag_throttled_total", {"operation": "search", "reason": "tenant_queue_full"})
    assert refused is not None and refused > 0
