"""Several server processes on one node (docs/operations.md, "Several server processes on one
node"): real ``stichtag serve``
processes on loopback, one data directory, one database.

- ``serve --workers 2``: both workers serve, each from its own tantivy replica (its worker
  slot), with the same hits; a killed worker is restarted and takes its slot back.
- The limits hold for the node, not per process: a key's rate (PostgreSQL) and a
  tenant's slots and queue (the node's shared counts) are the same whichever process a
  request reaches. Two ``serve`` processes on one data directory are addressed one by
  one here, so each request's process is known; ``--workers`` shares the same way.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from stichtag.api.ledger import SharedLedger
from stichtag.bootstrap import Services, bootstrap
from stichtag.config import Settings
from stichtag.index.tantivy_index import TenantIndex
from stichtag.models.manifest import load_manifest, model_hash
from stichtag.services.documents import IngestRequest
from tests.conftest import METRICS_AUTH, free_port, make_tenant, start_server

QUERY = {"query": "Höchstzinssatz Prozent", "k": 5}


@pytest.fixture
def node(tmp_path: Path, database: str, models_dir: Path) -> Iterator[dict[str, str]]:
    """The environment of one node: data directory, database, models."""
    env = {"STICHTAG_DATA_DIR": str(tmp_path / "node"), "STICHTAG_DATABASE_URL": database,
           "STICHTAG_MODELS_DIR": str(models_dir), "STICHTAG_RATE_REFUSAL_DELAY": "0"}
    yield env


@pytest.fixture
def services(node: dict[str, str]) -> Iterator[Services]:
    """Operator services on the node's database (tenants, keys, documents)."""
    svc = bootstrap(Settings(data_dir=Path(node["STICHTAG_DATA_DIR"]),
                             database_url=node["STICHTAG_DATABASE_URL"]), embedder=None)
    yield svc
    svc.close()


def _tenant(svc: Services, name: str) -> tuple[Any, str]:
    who = make_tenant(svc, name)
    for n in range(3):
        svc.documents.ingest(who, f"doc{n}", IngestRequest(
            text=f"# Regel {n}\n\n(1) Der Höchstzinssatz beträgt {n},25 Prozent für {name}.\n",
            valid_from=datetime(2020, 1, 1, tzinfo=UTC), confidentiality="public"))
    _, token = svc.access.create_key(who.tenant_id, scopes=["read", "write"], clearance=3)
    return who, token


def _stop(proc: Any) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except Exception:
            proc.kill()
            proc.wait()


@contextmanager
def _two_servers(env: dict[str, str]) -> Iterator[list[int]]:
    """Two ``stichtag serve`` processes on one node (one data directory); their ports."""
    ports = [free_port(), free_port()]
    procs = [start_server(env, port) for port in ports]
    try:
        yield ports
    finally:
        for proc in procs:
            _stop(proc)


def _workers(pid: int) -> list[psutil.Process]:
    """The live worker processes of a ``serve --workers`` supervisor (not multiprocessing's
    resource tracker, which is a child too)."""
    found = []
    for child in psutil.Process(pid).children():
        try:
            if (child.status() != psutil.STATUS_ZOMBIE
                    and "resource_tracker" not in " ".join(child.cmdline())):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def _embedded(services: Services, node: dict[str, str], who: Any) -> None:
    """Wait until the server has embedded the tenant's passages: a search before that is
    lexical only, and one after it is fused with the vectors, another order."""
    manifest = load_manifest(Path(node["STICHTAG_MODELS_DIR"]) / "e5-small")
    model = f"{model_hash(manifest)}:int8"  # the server's embedder (the default variant)
    deadline = time.monotonic() + 120
    while services.store.feed.pending_count(who.tenant_id, model_hash=model):
        assert time.monotonic() < deadline, "the server did not embed the passages"
        time.sleep(0.1)


def _hits(r: httpx.Response) -> list[tuple[Any, ...]]:
    assert r.status_code == 200, r.text
    return [(h["document"], h["version_id"], h["start"], h["end"]) for h in r.json()["hits"]]


def test_two_workers_serve_from_their_own_replicas_and_a_killed_one_comes_back(
        node: dict[str, str], services: Services) -> None:
    who, token = _tenant(services, "workers")
    port = free_port()
    proc = start_server({**node, "STICHTAG_WORKERS": "2"}, port)
    base = f"http://127.0.0.1:{port}"
    data = Path(node["STICHTAG_DATA_DIR"])
    try:
        with httpx.Client(base_url=base, timeout=60,
                          headers={"Authorization": f"Bearer {token}"}) as http:
            _hits(http.post("/v1/search", json=QUERY))  # names the tenant to a worker
        _embedded(services, node, who)
        slots: Counter[str] = Counter()
        hits = set()
        for _ in range(200):  # fresh connections: the kernel hands them to either worker
            with httpx.Client(base_url=base, timeout=60,
                              headers={"Authorization": f"Bearer {token}"}) as http:
                hits.add(tuple(_hits(http.post("/v1/search", json=QUERY))))
                metrics = http.get("/metrics", headers=METRICS_AUTH).text
            slots[next(line.split()[1] for line in metrics.splitlines()
                       if line.startswith("stichtag_worker_slot "))] += 1
            replicas = [d / str(who.tenant_id) for d in (data / "index", data / "index-1")]
            if len(slots) == 2 and all(r.is_dir() for r in replicas):
                break
        assert set(slots) == {"0.0", "1.0"}, slots  # both workers answered
        assert all(r.is_dir() for r in replicas), replicas  # each searched its own replica
        assert len(hits) == 1 and hits != {()}, hits  # and both found the same

        workers = _workers(proc.pid)
        assert len(workers) == 2, workers
        os.kill(workers[0].pid, signal.SIGKILL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # uvicorn's supervisor starts a new one
            alive = [p for p in _workers(proc.pid) if p.pid != workers[0].pid]
            if len(alive) == 2:
                break
            time.sleep(0.2)
        assert len(alive) == 2, alive
        seen: set[str] = set()
        deadline = time.monotonic() + 180  # the new worker loads its models first
        while time.monotonic() < deadline:
            with httpx.Client(base_url=base, timeout=60,
                              headers={"Authorization": f"Bearer {token}"}) as http:
                r = http.post("/v1/search", json=QUERY)
                if r.status_code == 503:  # the new worker still starting up
                    time.sleep(0.1)
                    continue
                assert tuple(_hits(r)) in hits
                scraped = http.get("/metrics", headers=METRICS_AUTH).text
                seen.add(next(line.split()[1] for line in scraped.splitlines()
                              if line.startswith("stichtag_worker_slot ")))
            if len(seen) == 2:
                break
        assert seen == {"0.0", "1.0"}, seen  # the restarted worker took the free slot back
        assert not (data / "index-2").exists()
    finally:
        _stop(proc)


def test_a_write_through_one_process_reaches_the_others_replica_without_a_read_there(
        node: dict[str, str], services: Services) -> None:
    """The outbox insert notifies at commit; every process applies it to its replica then,
    not when its next reader would have to wait for it."""
    who, token = _tenant(services, "notified")
    replica = Path(node["STICHTAG_DATA_DIR"]) / "index-1" / str(who.tenant_id)
    with _two_servers(node) as ports:
        headers = {"Authorization": f"Bearer {token}"}
        for port in ports:  # each process builds its replica of the tenant
            _hits(httpx.post(f"http://127.0.0.1:{port}/v1/search", json=QUERY, headers=headers,
                             timeout=60))
        assert replica.is_dir()
        r = httpx.post(f"http://127.0.0.1:{ports[0]}/v1/documents/news/versions", json={
            "text": "# Neu\n\n(1) Der Höchstzinssatz beträgt neu 9,75 Prozent.\n",
            "valid_from": "2021-01-01", "confidentiality": "public"}, headers=headers,
            timeout=60)
        assert r.status_code == 201, r.text
        head = services.indexer.feed.outbox_head(who.tenant_id)
        index = TenantIndex(replica)  # read-only here: the second process writes it
        try:
            deadline = time.monotonic() + 60
            while index.applied_seq() < head:  # nobody reads through the second process
                assert time.monotonic() < deadline, "the second process never applied it"
                time.sleep(0.05)  # tantivy's reload watcher picks up the other's commits
        finally:
            index.close()


def test_a_keys_rate_holds_across_server_processes(
        node: dict[str, str], services: Services) -> None:
    _, token = _tenant(services, "rated")
    env = {**node, "STICHTAG_RATE_PER_SECOND": "0.2", "STICHTAG_RATE_BURST": "2"}
    with _two_servers(env) as ports:
        codes: dict[int, list[int]] = {port: [] for port in ports}
        started = time.monotonic()
        for n in range(8):  # alternating processes, well within one 5 s interval
            port = ports[n % 2]
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                              headers={"Authorization": f"Bearer {token}"}) as http:
                codes[port].append(http.get("/v1/documents/doc0").status_code)
        assert time.monotonic() - started < 5, "too slow to test a 0.2/s rate"
        # Per-process buckets would have let 2 through on each process (4 in all).
        assert sorted(codes[ports[0]] + codes[ports[1]]) == [200] * 2 + [429] * 6, codes
        assert 429 in codes[ports[0]] and 429 in codes[ports[1]], codes


def test_a_tenants_slots_and_queue_hold_across_server_processes(
        node: dict[str, str], services: Services) -> None:
    who, token = _tenant(services, "queued")
    env = {**node, "STICHTAG_RATE_TENANT_INFLIGHT": "1", "STICHTAG_RATE_TENANT_QUEUE": "1",
           "STICHTAG_RATE_NODE_INFLIGHT": "4", "STICHTAG_RATE_QUEUE_TIMEOUT": "120"}
    ledger = SharedLedger(Path(node["STICHTAG_DATA_DIR"]) / "run" / "admission", 30)
    results: dict[str, httpx.Response] = {}

    def call(name: str, port: int, method: str, path: str, body: dict[str, Any]) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300,
                          headers={"Authorization": f"Bearer {token}"}) as http:
            results[name] = http.request(method, path, json=body)

    def until(check: Any, what: str) -> None:
        deadline = time.monotonic() + 120
        while not check():
            assert time.monotonic() < deadline, what
            time.sleep(0.005)

    # A long ingest holds the tenant's one slot on the first process.
    long_text = "".join(f"# § {n} Vorschrift {n}\n\n(1) Der Versicherer hat im Fall {n} die "
                        f"Leistung binnen {n % 30 + 1} Tagen zu erbringen. (2) Satz zwei zu "
                        f"Fall {n}.\n\n" for n in range(60_000))
    with closing(ledger), _two_servers(env) as ports:
        ingest = threading.Thread(target=call, args=(
            "ingest", ports[0], "POST", "/v1/documents/long/versions",
            {"text": long_text, "valid_from": "2020-01-01", "confidentiality": "public"}))
        ingest.start()
        until(lambda: ledger.running(who.tenant_id) == 1, "the ingest never took its slot")
        # The second process queues a search behind the slot the first one holds...
        queued = threading.Thread(target=call, args=(
            "queued", ports[1], "POST", "/v1/search", QUERY))
        queued.start()
        until(lambda: ledger.waiting(who.tenant_id) == 1, "the search never queued")
        # ...and the queue of one is full for the whole node: the first process refuses.
        call("refused", ports[0], "POST", "/v1/search", QUERY)
        assert ingest.is_alive() and queued.is_alive(), "the ingest ended too soon to test"
        refused = results["refused"]
        assert refused.status_code == 429, refused.text
        assert refused.json()["limit"] == "tenant_queue_full"
        ingest.join(timeout=600)
        queued.join(timeout=600)
        assert results["ingest"].status_code == 201, results["ingest"].text
        # The slot freed on the first process went to the waiter on the second.
        assert results["queued"].status_code == 200, results["queued"].text
        assert (ledger.running(), ledger.waiting()) == (0, 0)
