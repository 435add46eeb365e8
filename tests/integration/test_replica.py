"""Reads from a streaming standby, exact as of their Stichtag (docs/operations.md, "Read replicas").

A primary (embedded PostgreSQL) and its hot standby (``pg_basebackup -R``, the embedded
binaries, another loopback port); node R reads from the standby
(``STICHTAG_READ_DATABASE_URL``), node P only from the primary. Both give the same
answers, citations, search hits and documents at many Stichtage; a write's
``Stichtag-Consistency`` token makes R read that write; and with the standby's replay
paused, R never returns what the standby still lacks: a newer token or a later known_at
waits the bounded time and is answered from the primary, while the stable past is still
answered from the standby, and /metrics and /readyz show the lag
(docs/architecture.md, "Reads from a standby"). Stopped, the standby leaves R ready and
answering from the primary. ``make replica`` runs the longer variant.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from stichtag.bootstrap import bootstrap
from stichtag.config import Settings
from tests.conftest import METRICS_AUTH, make_tenant
from tests.integration.test_two_nodes import _answer_key, _await_embeddings, _ingest_demo
from tests.replica_cluster import Replicated, replicated

LONG = os.environ.get("STICHTAG_REPLICA_LONG") == "1"
QUESTIONS = ["Welcher Höchstrechnungszins gilt für Neugeschäft?",
             "Welche Unterlagen braucht die Annahme bei Berufsunfähigkeit?",
             "Wer gewann die Fußball-WM?"]
if LONG:
    QUESTIONS += ["Wie hoch ist die deklarierte Gesamtverzinsung?", "decision deadline claims"]
DOCUMENTS = ["surplus-declaration", "underwriting-guideline", "claims-handbook-en"]
WAIT = 1.5  # STICHTAG_READ_WAIT of node R


def _reads(client: httpx.Client) -> Counter[tuple[str, str]]:
    """stichtag_replica_reads_total by (target, reason) on a node."""
    text = client.get("/metrics", headers=METRICS_AUTH).text
    found: Counter[tuple[str, str]] = Counter()
    for labels, value in re.findall(r"^stichtag_replica_reads_total\{([^}]*)\} (\S+)$",
                                    text, re.MULTILINE):
        named = dict(re.findall(r'(\w+)="(\w+)"', labels))
        found[(named["target"], named["reason"])] = int(float(value))
    return found


def _gauge(client: httpx.Client, name: str) -> float:
    text = client.get("/metrics", headers=METRICS_AUTH).text
    match = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert match, name
    return float(match.group(1))


def _search_key(data: dict[str, Any]) -> tuple[Any, ...]:
    """Hits, ranks and vector scores; not BM25 values, which depend on each node's own
    tantivy segments (document counts include deleted documents until a merge)."""
    return (data["as_of"], [
        (h["document"], h["version_id"], h["start"], h["end"], h["text"],
         h["scores"].get("bm25_rank"), h["scores"].get("vector_rank"),
         None if h["scores"].get("vector") is None else round(h["scores"]["vector"], 6))
        for h in data["hits"]])


def _document(client: httpx.Client, key: str, params: dict[str, str],
              headers: dict[str, str] | None = None) -> tuple[int, Any]:
    r = client.get(f"/v1/documents/{key}", params=params, headers=headers or {})
    if r.status_code != 200:
        return r.status_code, None
    body = r.json()
    return 200, (body["version_id"], body["as_of"], body.get("text"))


def _compare(r: httpx.Client, p: httpx.Client, stichtage: list[tuple[str, str]],
             stats: Counter[str]) -> None:
    """The same answers, citations, search hits and documents on both nodes."""
    for valid_at, known_at in stichtage:
        for q in QUESTIONS:
            body = {"question": q, "valid_at": valid_at, "known_at": known_at}
            ar, ap = r.post("/v1/answer", json=body), p.post("/v1/answer", json=body)
            assert ar.status_code == ap.status_code == 200, (ar.text, ap.text)
            assert _answer_key(ar.json()) == _answer_key(ap.json()), (q, valid_at, known_at)
            stats[f"answers {ar.json()['status']}"] += 1
            body = {"query": q, "valid_at": valid_at, "known_at": known_at, "k": 10}
            sr, sp = r.post("/v1/search", json=body), p.post("/v1/search", json=body)
            assert sr.status_code == sp.status_code == 200, (sr.text, sp.text)
            assert _search_key(sr.json()) == _search_key(sp.json()), (
                q, valid_at, known_at)
            stats["searches"] += 1
        for key in DOCUMENTS:
            params = {"valid_at": valid_at, "known_at": known_at}
            assert _document(r, key, params) == _document(p, key, params), (key, params)
            stats["documents"] += 1


def _new_version(client: httpx.Client, note: str) -> tuple[str, str]:
    """A new version of the surplus declaration; (version id, consistency token)."""
    text = f"# Überschussdeklaration\n\nDie Gesamtverzinsung beträgt {note} Prozent.\n"
    r = client.post("/v1/documents/surplus-declaration/versions", json={
        "text": text, "valid_from": "2026-01-01", "title": "Überschussdeklaration",
        "doc_class": "declaration", "confidentiality": "public"})
    assert r.status_code == 201, r.text
    token = r.headers["Stichtag-Consistency"]
    assert re.fullmatch(r"[0-9]+", token), token  # the tenant's outbox position
    return r.json()["version_id"], token


def test_standby_reads_are_exact_as_of(models_dir: Path) -> None:
    with replicated() as cluster:
        key = _tenant_key(cluster, models_dir)
        headers = {"Authorization": f"Bearer {key}"}
        url_r = cluster.node("r", models_dir, replica=True,
                             extra={"STICHTAG_READ_WAIT": str(WAIT)})
        url_p = cluster.node("p", models_dir, replica=False)
        stats: Counter[str] = Counter()
        with httpx.Client(base_url=url_r, headers=headers, timeout=120) as r, \
             httpx.Client(base_url=url_p, headers=headers, timeout=120) as p:
            _check(cluster, r, p, stats)
        print("\nreplica reads:", dict(stats))


def _tenant_key(cluster: Replicated, models_dir: Path) -> str:
    svc = bootstrap(Settings(data_dir=cluster.workdir / "ops", database_url=cluster.app_url,
                             models_path=models_dir), run_migrations=False, embedder=None)
    try:
        who = make_tenant(svc, "replica")
        _, key = svc.access.create_key(who.tenant_id, scopes=["read", "write", "audit",
                                                              "admin"], clearance=3)
    finally:
        svc.close()
    return key


def _check(cluster: Replicated, r: httpx.Client, p: httpx.Client, stats: Counter[str]) -> None:
    assert r.get("/readyz").json()["checks"]["replica"] in ("ok", "behind")
    assert "replica" not in p.get("/readyz").json()["checks"]
    _ingest_demo(p)
    _await_embeddings(cluster.admin_url)
    cluster.await_standby()
    before = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    time.sleep(1.1)
    stichtage = [("2022-06-01", "2021-06-01"), ("2022-06-01", before),
                 ("2023-08-01", "2023-08-01"), ("2025-03-01", before),
                 ("2026-02-01", "2025-12-01")]
    if LONG:
        stichtage += [(f"{y}-{m:02d}-15", f"{y}-{m:02d}-20") for y in (2021, 2022, 2023, 2024)
                      for m in (1, 4, 7, 10)]
    start = _reads(r)
    _compare(r, p, stichtage, stats)
    served = _reads(r) - start
    stats.update({f"R {t}/{why}": n for (t, why), n in served.items()})
    # The comparison ran on the standby, not on a silent fallback.
    assert sum(n for (t, _), n in served.items() if t == "standby") > 0, served
    assert served[("primary", "standby_error")] == 0, served

    # Read your write: the token of a write through R, then R reads it.
    version, token = _new_version(r, "3,10")
    status, doc = _document(r, "surplus-declaration", {"valid_at": "2026-02-01"},
                            {"Stichtag-Consistency": token})
    assert status == 200 and doc[0] == version
    for bad in ("not-a-token", "0/3032AD0", "-1"):
        assert r.get("/v1/documents/surplus-declaration", headers={
            "Stichtag-Consistency": bad}).status_code == 400
    # Compare one state: the new version's passages embedded (by either node's worker:
    # both hear the write) and that replayed on the standby.
    _await_embeddings(cluster.admin_url)
    cluster.await_standby()
    _compare(r, p, [("2026-02-01", datetime.now(UTC).isoformat())], stats)

    # The standby falls behind: no stale read through R.
    stable = datetime.now(UTC).isoformat()
    _compare(r, p, [("2026-02-01", stable)], stats)  # observed: the standby's clock has it
    cluster.await_standby()
    cluster.set_replay(paused=True)
    try:
        _paused_round(cluster, r, p, stable=stable, old=version, stats=stats)
    finally:
        cluster.set_replay(paused=False)
    cluster.await_standby()
    deadline = time.monotonic() + 30
    while r.get("/readyz").json()["checks"]["replica"] != "ok":
        assert time.monotonic() < deadline, r.get("/readyz").text
        time.sleep(0.1)
    # Requests write a little to the primary themselves (an authenticated call charges
    # its key's rate row, 0013_key_rates.sql), so a single sample can catch a few bytes
    # in flight (seen: 40 on a loaded machine); the gauge must reach zero once the
    # standby has replayed them.
    while (lag := _gauge(r, "stichtag_replica_lag_bytes")) != 0:
        assert time.monotonic() < deadline, f"replica lag stays at {lag} bytes"
        cluster.await_standby()
        time.sleep(0.2)
    assert _gauge(r, "stichtag_replica_replay_paused") == 0

    # The standby goes away: R answers from the primary, stays ready and says so.
    cluster.standby.stop()
    start = _reads(r)
    status, doc = _document(r, "surplus-declaration", {"valid_at": "2026-02-01"})
    assert status == 200 and doc[0] == _document(p, "surplus-declaration",
                                                 {"valid_at": "2026-02-01"})[1][0]
    _compare(r, p, [("2022-06-01", "2021-06-01")], stats)
    down = _reads(r) - start
    assert set(down) == {("primary", "standby_error")}, down
    ready = r.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"]["replica"] == "unreachable"
    assert _gauge(r, "stichtag_replica_up") == 0


def _paused_round(cluster: Replicated, r: httpx.Client, p: httpx.Client, *, stable: str,
                  old: str, stats: Counter[str]) -> None:
    """Replay is paused: a write lands on the primary only."""
    newer, token = _new_version(p, "3,20")
    assert cluster.lag_bytes() > 0
    start = _reads(r)
    # 1. The stable past is answered on the standby, and is right.
    status, doc = _document(r, "surplus-declaration", {"valid_at": "2026-02-01",
                                                       "known_at": stable})
    assert status == 200 and doc[0] == old
    after_stable = _reads(r) - start
    assert after_stable[("standby", "stable_past")] >= 1, after_stable
    assert after_stable[("standby", "immutable")] >= 1, after_stable  # the version's text
    # ... but not with the newer token, which the standby has not reached: the bound, then
    # the primary (the same version: the token only forbids the standby, it changes no view).
    status, doc = _document(r, "surplus-declaration", {"valid_at": "2026-02-01",
                                                       "known_at": stable},
                            {"Stichtag-Consistency": token})
    assert status == 200 and doc[0] == old
    with_token = _reads(r) - start - after_stable
    assert with_token[("primary", "behind")] == 1, with_token
    assert with_token[("standby", "stable_past")] == 0, with_token
    start = _reads(r)
    # 2. A newer token: waits the bound, then the primary answers (never the stale view).
    for params in ({"valid_at": "2026-02-01"},
                   {"valid_at": "2026-02-01", "known_at": datetime.now(UTC).isoformat()}):
        status, doc = _document(r, "surplus-declaration", params,
                                {"Stichtag-Consistency": token})
        assert status == 200 and doc[0] == newer, params
    # 3. A later known_at without a token: the same.
    status, doc = _document(r, "surplus-declaration", {"valid_at": "2026-02-01"})
    assert status == 200 and doc[0] == newer
    later = _reads(r) - start
    assert later[("primary", "behind")] >= 3, later
    stats.update({f"paused R {t}/{why}": n for (t, why), n in later.items()})
    # One wait per request: an answer's first read waits out the bound, its later ones
    # go to the primary at once.
    waits, before = _gauge(r, "stichtag_replica_wait_seconds_count"), _reads(r)
    ar = r.post("/v1/answer", json={"question": QUESTIONS[0], "valid_at": "2026-02-01"})
    assert ar.status_code == 200, ar.text
    assert _gauge(r, "stichtag_replica_wait_seconds_count") == waits + 1
    assert (_reads(r) - before)[("primary", "behind")] >= 2
    # Answers and searches at the present agree with P (R's go to the primary).
    _compare(r, p, [("2026-02-01", datetime.now(UTC).isoformat())], stats)
    # 4. The lag is visible.
    assert _gauge(r, "stichtag_replica_lag_bytes") > 0
    assert _gauge(r, "stichtag_replica_replay_paused") == 1
    ready = r.get("/readyz")
    assert ready.status_code == 200
    checks = ready.json()["checks"]
    assert checks["replica"] == "paused" and int(checks["replica_lag_bytes"]) > 0, checks
