"""Nothing a tenant can read reveals another tenant's volume (docs/operations.md, "Scale-out path";
migrations/0010_tenant_keys.sql): assertion ids, outbox positions
(``lexical_seq``) and every other number a tenant sees are counted per tenant.

Tenant B runs a script of writes and reads over HTTP while tenant A writes in between;
tenant C runs the same script with nobody writing in between. Every id and counter B
can read equals C's: from B's side, A's writes moved nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import LiveServer, make_tenant

COUNTERS = {"assertion_id", "assertion_ids", "lexical_seq", "seq", "size", "closed", "opened",
            "document_id", "passage_id", "block_id", "path_id", "version"}
"""Response fields that are ids or counters (offsets and ranks depend on content only)."""


def _text(n: int, who: str) -> str:
    return (f"# Richtlinie {who}\n\n## § 1 Höchstzinssatz\n\n(1) Der Höchstzinssatz beträgt "
            f"in Fassung {n} genau {n},5 Prozent.\n\n(2) Ein zweiter Absatz {n}.\n")


def _numbers(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every (path, number) under a counter field, in document order."""
    out: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in COUNTERS and not isinstance(item, (dict, str, float)):
                out.append((f"{path}.{key}", item))
            else:
                out.extend(_numbers(item, f"{path}.{key}"))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(_numbers(item, f"{path}[{i}]"))
    return out


def _script_step(http: Any, n: int, settle: Callable[[], Any]) -> list[tuple[str, Any]]:
    """One round of what a tenant writes and reads: a version, a search, the history,
    the run record and the log checkpoint.

    ``settle`` waits until the write is embedded: a search finds a passage without a
    vector lexically only, so its hits (and their ids) would depend on how busy the one
    embedding thread is with A's writes. That is timing, not a counter.
    """
    seen: list[tuple[str, Any]] = []
    write = http.post("/v1/documents/richtlinie/versions", json={
        "text": _text(n, "B"), "valid_from": f"202{n}-01-01", "confidentiality": "public"})
    assert write.status_code == 201, write.text
    settle()
    search = http.post("/v1/search", json={"query": "Höchstzinssatz", "valid_at": "2029-01-01"})
    assert search.status_code == 200, search.text
    run = http.get(f"/v1/runs/{search.json()['run_id']}")
    for name, response in (("write", write), ("search", search), ("run", run),
                           ("history", http.get("/v1/documents/richtlinie/history")),
                           ("log", http.get("/v1/log/checkpoint"))):
        assert response.status_code in (200, 201), (name, response.text)
        seen.extend(_numbers(response.json(), name))
    return seen


def _writes_of_a(http: Any, batch: int) -> None:
    """Three new versions and a search of tenant A (``batch`` keeps their texts new)."""
    for n in range(2):
        for doc in ("vag", "deckrv", f"rundschreiben-{batch}-{n}"):
            assert http.post(f"/v1/documents/{doc}/versions", json={
                "text": _text(n, f"A {doc} {batch}"), "valid_from": f"201{n}-01-01",
                "confidentiality": "public"}).status_code == 201
        assert http.post("/v1/search", json={"query": "Höchstzinssatz"}).status_code == 200


def test_another_tenants_writes_move_no_id_or_counter_a_tenant_can_read(
        live: LiveServer) -> None:
    a, b, c = (make_tenant(live.services) for _ in range(3))
    with (live.client(live.key(a)) as http_a, live.client(live.key(b)) as http_b,
          live.client(live.key(c)) as http_c):
        _writes_of_a(http_a, 0)  # A was busy before B's first write, too
        def settle(who: Any) -> Callable[[], Any]:
            return lambda: live.services.indexer.catch_up(who.tenant_id)

        watched = []
        for n in range(3):
            watched.extend(_script_step(http_b, n, settle(b)))
            _writes_of_a(http_a, n + 1)  # between B's steps
        quiet = [number for n in range(3) for number in _script_step(http_c, n, settle(c))]
    assert watched == quiet
    # Not vacuous: the ids and positions are there, and they count B's own rows only.
    fields = {path.rsplit(".", 1)[-1].split("[")[0] for path, _ in watched}
    assert {"assertion_id", "lexical_seq", "size"} <= fields
    assert ("write.assertion.assertion_id", 1) in watched
    assert ("search.lexical_seq", 1) in watched
