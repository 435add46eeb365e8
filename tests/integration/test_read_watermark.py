"""Read watermarks (docs/operations.md, "Derived indexes"): a reader waits for the index to apply
interactive
writes and any consistency token it sends, but not for a bulk load's rows, over a real
server with its worker, real PostgreSQL and real tantivy.

The server's worker is held off the tenant's index by taking the tenant's indexing lock
in the test (the worker's lexical and embedding threads both apply under it), so what a
read waits for is decided by the rule, not by how fast the worker happens to be.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from stichtag import client as c
from stichtag.bootstrap import bootstrap
from stichtag.cli.manifest import ingest_manifest
from stichtag.config import Settings
from stichtag.index import applier
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from tests.conftest import LiveServer, make_tenant
from tests.integration.test_answer_api import DEMO_DIR

POLICY = "# Überschussdeklaration\n\n(1) Der Deklarationssatz beträgt 2,80 Prozent.\n"


@contextmanager
def worker_held(live: LiveServer, who: Principal) -> Iterator[None]:
    """The server's worker cannot apply the tenant's outbox while this is open."""
    lock = live.services.indexer._lock(who.tenant_id)
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _search(live: LiveServer, key: str, headers: dict[str, str] | None = None) -> Any:
    with live.client(key) as http:
        response = http.post("/v1/search", json={"query": "Überschussdeklaration", "k": 3},
                             headers=headers or {})
    assert response.status_code == 200, response.text
    return response.json()


def _waiting_search(live: LiveServer, key: str, headers: dict[str, str] | None = None
                    ) -> tuple[threading.Thread, list[int]]:
    """A search on a thread of its own, checked to be still waiting after a second (the
    worker is held): join the thread, then ``seen`` holds its ``lexical_seq``."""
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(
        _search(live, key, headers)["lexical_seq"]))
    reader.start()
    reader.join(timeout=1.0)
    assert reader.is_alive() and not seen
    return reader, seen


def test_a_bulk_load_does_not_hold_readers_and_a_token_waits_for_it(
        live: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(applier, "FRESH_TIMEOUT", 120.0)  # a wait outlasts the client
    who = make_tenant(live.services, "bulk")
    key = live.key(who)
    indexer = live.services.indexer
    before = _search(live, key)["lexical_seq"]

    with worker_held(live, who):
        stats = ingest_manifest(live.services, who, DEMO_DIR / "manifest.csv",
                                use_tx_time=False, bulk=True)
        token = stats["consistency"]
        assert token == indexer.outbox_head(who.tenant_id) > before
        # Not awaited: the read answers from what is applied, and says which position.
        assert _search(live, key)["lexical_seq"] == before

        # A token is always awaited: this read cannot finish while the worker is held.
        reader, seen = _waiting_search(live, key, {"Stichtag-Consistency": str(token)})
    reader.join(timeout=30)
    assert seen and seen[0] >= token

    found = _search(live, key)
    assert found["hits"], "the bulk-loaded versions are searchable once applied"


def test_an_interactive_write_is_awaited_by_every_reader(live: LiveServer) -> None:
    who = make_tenant(live.services, "interactive")
    key = live.key(who)
    indexer = live.services.indexer
    with worker_held(live, who):
        live.services.documents.ingest(who, "surplus", IngestRequest(
            text=POLICY))
        head = indexer.outbox_head(who.tenant_id)
        reader, seen = _waiting_search(live, key)
    reader.join(timeout=30)
    assert seen == [head]


def test_a_token_beyond_the_head_is_read_as_the_head(live: LiveServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Waiting for the position itself would outlast the client's 30 s timeout.
    monkeypatch.setattr(applier, "FRESH_TIMEOUT", 120.0)
    who = make_tenant(live.services, "future")
    key = live.key(who)
    live.services.documents.ingest(who, "surplus", IngestRequest(
        text=POLICY, bulk=True))
    head = live.services.indexer.outbox_head(who.tenant_id)
    # Another tenant's larger position, or a made-up one: waits for the head only (a
    # bogus token would otherwise hold the tenant's slot for the whole bound).
    found = _search(live, key, {"Stichtag-Consistency": str(head + 10_000)})
    assert found["lexical_seq"] == head and found["hits"]


def test_another_process_bulk_load_is_embedded_without_any_reader(
        live: LiveServer, settings: Settings, embedder: Any, tmp_path: Path) -> None:
    """No reader waits for a bulk load, so none names its tenant to the worker: the
    server's listener must schedule the embedding of what another process wrote."""
    who = make_tenant(live.services, "elsewhere")
    _search(live, live.key(who))  # the server now keeps a replica of the tenant
    other = bootstrap(replace(settings, data_dir=tmp_path / "cli"), run_migrations=False,
                      embedder=embedder)  # the CLI: same database, no worker
    try:
        ingest_manifest(other, who, DEMO_DIR / "manifest.csv", use_tx_time=False, bulk=True)
        assert other.indexer.status(who.tenant_id).pending_embeddings > 0
        deadline = time.monotonic() + 120
        while other.indexer.status(who.tenant_id).pending_embeddings:
            assert time.monotonic() < deadline, "the server did not embed the load"
            time.sleep(0.2)
    finally:
        other.close()


def test_a_bulk_write_over_http_is_not_awaited_and_its_token_is(
        live: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``?bulk=true`` on the write routes (JSON, a raw upload, a retraction, and through
    the client library) marks the rows as a bulk load's; the header it answers with is
    the token that waits for them."""
    monkeypatch.setattr(applier, "FRESH_TIMEOUT", 120.0)
    who = make_tenant(live.services, "http-bulk")
    key = live.key(who)
    before = _search(live, key)["lexical_seq"]
    with worker_held(live, who):
        with live.client(key) as http:
            tokens = []
            for response in (
                    http.post("/v1/documents/surplus/versions", params={"bulk": "true"},
                              json={"text": POLICY, "valid_from": "2020-01-01"}),
                    http.post("/v1/documents/memo/versions",
                              params={"bulk": "true", "valid_from": "2020-01-01"},
                              content=POLICY.replace("2,80", "3,10").encode(),
                              headers={"Content-Type": "text/markdown"}),
                    http.post("/v1/documents/surplus/retract", params={"bulk": "true"},
                              json={"valid_from": "2024-01-01", "reason": "superseded"})):
                assert response.status_code in {200, 201}, response.text
                tokens.append(int(response.headers["Stichtag-Consistency"]))
            bad = http.post("/v1/documents/surplus/versions", params={"bulk": "perhaps"},
                            json={"text": POLICY})
        assert bad.status_code == 400, bad.text
        assert "bulk" in bad.text
        with c.Client(live.base_url, key) as api:
            api.ingest("other", POLICY.replace("2,80", "1,90"), valid_from="2020-01-01",
                       bulk=True)
        head = live.services.indexer.outbox_head(who.tenant_id)
        assert tokens == sorted(tokens) and head > tokens[-1] > before
        # None of the four writes is awaited: the read answers at once, from before them.
        assert _search(live, key)["lexical_seq"] == before

        reader, seen = _waiting_search(live, key, {"Stichtag-Consistency": str(tokens[-1])})
    reader.join(timeout=30)
    assert seen and seen[0] >= tokens[-1]


def test_a_write_without_the_flag_is_awaited_over_http(live: LiveServer) -> None:
    who = make_tenant(live.services, "http-interactive")
    key = live.key(who)
    with worker_held(live, who):
        with live.client(key) as http:
            written = http.post("/v1/documents/surplus/versions", json={"text": POLICY})
        assert written.status_code == 201, written.text
        reader, seen = _waiting_search(live, key)
    reader.join(timeout=30)
    assert seen == [int(written.headers["Stichtag-Consistency"])]
