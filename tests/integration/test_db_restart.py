"""The server rides out a PostgreSQL restart: pooled connections that the restart killed
are replaced before use (no 500 after the database is back), and while the database is
unreachable a request gets 503 with Retry-After, an outcome clients retry."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests.conftest import Cluster, LiveServer, admin_url_for


def _terminate_app_backends(cluster: Cluster, database: str) -> int:
    """What a PostgreSQL crash or restart does to the server's idle connections."""
    with psycopg.connect(admin_url_for(cluster, database), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall()
    return len(rows)


def test_requests_after_backends_were_killed_succeed(live: LiveServer, tenant: Any,
                                                     cluster: Cluster, database: str) -> None:
    key = live.key(tenant)
    with live.client(key) as http:
        for n in range(6):  # fill the pool with several idle connections
            r = http.post(f"/v1/documents/d{n}/versions", json={"text": f"Satz {n}."})
            assert r.status_code == 201, r.text
        assert _terminate_app_backends(cluster, database) >= 1
        statuses = [http.get(f"/v1/documents/d{n % 6}/history").status_code for n in range(12)]
        assert statuses == [200] * 12
        r = http.post("/v1/documents/d0/versions", json={"text": "Satz 0, neu."})
        assert r.status_code == 201, r.text


def test_database_unavailable_is_503_with_retry_after(live: LiveServer, tenant: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    key = live.key(tenant)

    def down(*_: Any, **__: Any) -> Any:
        raise psycopg.OperationalError("connection refused (simulated)")

    with live.client(key) as http:
        monkeypatch.setattr(live.services.documents.store.db, "tx", down)
        r = http.post("/v1/documents/x/versions", json={"text": "Satz."})
        monkeypatch.undo()
        assert r.status_code == 503, r.text
        assert r.headers["retry-after"] == "1"
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["status"] == 503
