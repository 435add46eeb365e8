"""Searches and answers say when the index is still filling, and the status shows the
backlog draining; another tenant's backlog is invisible (docs/api.md, "Index status").
A real server on loopback, embedded PostgreSQL, tantivy and the ONNX models; the backlog
is made real by holding the tenant's embedding-owner lock, as ``stichtag index sync``
does while it embeds, so the server's worker cannot drain it until the test lets go."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from tests.conftest import METRICS_AUTH, LiveServer, make_tenant

TEXT = "# Zinsverordnung\n\n" + "".join(
    f"## § {i} Gruppe {i}\n\n({i}) Der Höchstrechnungszins für Verträge der Gruppe {i} "
    f"beträgt {i},25 Prozent. Er gilt für Neugeschäft ab dem Stichtag.\n\n"
    for i in range(1, 41))
QUESTION = "Welcher Höchstrechnungszins gilt für Verträge der Gruppe 7?"
COMPLETE = {"complete": True, "pending": 0, "lexical_pending": 0}


def _pending(http: Any) -> int:
    body = http.get("/v1/index/status").json()
    return int(body["pending_embeddings"])


def _gauge(http: Any, name: str) -> float:
    text = http.get("/metrics", headers=METRICS_AUTH).text
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert found, name
    return float(found.group(1))


def test_an_answer_in_a_backlog_is_flagged_the_same_answer_after_it_is_not(
        live: LiveServer, tenant: Principal) -> None:
    svc = live.services
    bravo = make_tenant(svc, "bravo")
    svc.documents.ingest(bravo, "eigen", IngestRequest(
        text="# Eigen\n\n(1) Der Höchstrechnungszins der Gruppe 7 ist ein eigener Satz.\n",
        valid_from=datetime(2020, 1, 1, tzinfo=UTC)))
    svc.indexer.catch_up(bravo.tenant_id)
    key_a, key_b = live.key(tenant), live.key(bravo)
    with live.client(key_a) as a, live.client(key_b) as b:
        with svc.store.feed.embedding_owner(tenant.tenant_id, wait=True):
            r = a.post("/v1/documents/zinsverordnung/versions",
                       json={"text": TEXT, "valid_from": "2020-01-01"})
            assert r.status_code == 201, r.text
            backlog = _pending(a)
            assert backlog >= 40
            status = a.get("/v1/index/status").json()
            assert status["complete"] is False and status["model"]

            flagged = a.post("/v1/answer", json={"question": QUESTION}).json()
            assert flagged["index"] == {"complete": False, "pending": backlog,
                                        "lexical_pending": 0}
            record = a.get(f"/v1/runs/{flagged['run_id']}").json()["record"]
            assert record["index"] == flagged["index"]
            # the answer's reranker stored the vectors it computed for its candidates
            # (first writer wins): fewer are pending now, and the search counts those
            search = a.post("/v1/search", json={"query": QUESTION}).json()
            assert 0 < search["index"]["pending"] == _pending(a) < backlog
            # as of a day before the regulation was valid nothing visible is pending
            before = a.post("/v1/search", json={"query": QUESTION,
                                                "valid_at": "2019-06-01"}).json()
            assert before["index"] == COMPLETE
            # a bounded wait ends, and says it did not get there
            svc.search.index_wait = 0.3
            waited = a.post("/v1/search", json={"query": QUESTION,
                                                "wait_for_index": True}).json()
            assert waited["index"]["complete"] is False

            # the operator's metrics show the node's backlog, without a tenant label
            assert _gauge(a, "stichtag_index_pending_embeddings") == _pending(a)
            assert _gauge(a, "stichtag_index_filling") == 1

            # the other tenant sees nothing of A's backlog: status, answer, run record
            other = b.get("/v1/index/status").json()
            assert other["pending_embeddings"] == 0 and other["complete"] is True
            theirs = b.post("/v1/answer", json={"question": QUESTION}).json()
            assert theirs["index"] == COMPLETE
            assert b.get(f"/v1/runs/{theirs['run_id']}").json()["record"]["index"] == COMPLETE

        # let go: the worker drains the backlog, and the status counts it down to zero
        svc.indexer.notify(tenant.tenant_id)
        seen = [_pending(a)]
        deadline = time.monotonic() + 300
        while seen[-1] and time.monotonic() < deadline:
            time.sleep(0.2)
            seen.append(_pending(a))
        assert seen[-1] == 0, seen
        assert seen == sorted(seen, reverse=True), seen
        assert _gauge(a, "stichtag_index_pending_embeddings") == 0
        drained = a.get("/v1/index/status").json()
        assert drained["complete"] is True and drained["eta_seconds"] == 0

        after = a.post("/v1/answer", json={"question": QUESTION}).json()
        assert after["index"] == COMPLETE
        assert a.get(f"/v1/runs/{after['run_id']}").json()["record"]["index"] == COMPLETE
        # the flagged answer's run ranked without vectors; the complete one with them
        assert all(c["vector"] is None for c in record["candidates"])
        later = a.get(f"/v1/runs/{after['run_id']}").json()["record"]
        assert any(c["vector"] is not None for c in later["candidates"])
        waited = a.post("/v1/search", json={"query": QUESTION, "wait_for_index": True}).json()
        assert waited["index"] == COMPLETE
