"""Every wait behind another write of the same tenant is bounded: past STICHTAG_LOCK_WAIT
the request ends in a problem+json 503 with Retry-After naming what it waited for
(docs/operations.md, "Bounded waits"). The long write is real: a transaction that holds
the tenant's write clock, as an ingest in flight does."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from stichtag.config import Settings
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from stichtag.store.sqlfiles import query
from tests.conftest import LiveServer, make_tenant

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/v1/search", {"query": "Höchstrechnungszins"}),
    ("POST", "/v1/answer", {"question": "Welcher Höchstrechnungszins gilt?"}),
    ("POST", "/v1/documents/neu/versions", {"text": "# Neu\n\n(1) Ein neuer Satz.\n"}),
    ("POST", "/v1/documents/zins/retract", {"valid_from": "2030-01-01", "reason": "test"}),
]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """A short bound, so the test waits half a second per refused request."""
    return replace(settings, lock_wait=0.5)


def test_a_request_behind_a_long_write_of_its_tenant_ends_in_503(
        live: LiveServer, tenant: Principal) -> None:
    svc = live.services
    svc.documents.ingest(tenant, "zins", IngestRequest(
        text="# Zins\n\n(1) Der Höchstrechnungszins beträgt 0,25 Prozent.\n",
        valid_from=datetime(2020, 1, 1, tzinfo=UTC)))
    svc.indexer.catch_up(tenant.tenant_id)
    other = make_tenant(svc, "bravo")
    with live.client(live.key(tenant)) as a, live.client(live.key(other)) as b:
        with svc.store.db.tx(tenant.tenant_id) as conn:
            conn.execute(query("tenant_clock_lock"))  # a write of the tenant in flight
            for method, path, body in CALLS:
                r = a.request(method, path, json=body)
                assert r.status_code == 503, (path, r.status_code, r.text)
                assert r.headers["retry-after"] == "1"
                assert r.headers["content-type"].startswith("application/problem+json")
                problem = r.json()
                assert problem["limit"] == "tenant_write" and problem["retry_after"] == 1
            # another tenant does not wait for it
            assert b.post("/v1/search", json={"query": "Höchstrechnungszins"}).status_code == 200
        # the write is done: the same requests go through
        for method, path, body in CALLS:
            r = a.request(method, path, json=body)
            assert r.status_code in (200, 201), (path, r.status_code, r.text)
