"""The run log over real HTTP: every search/answer is a leaf; the export verifies offline
with only the public key; proofs verify; a database-side rewrite is caught by an older
checkpoint; 8 concurrent clients of two tenants leave gapless, verifiable logs."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import threading
from pathlib import Path
from typing import Any

import psycopg

from stichtag.cli import main
from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from stichtag.domain import merkle
from stichtag.domain.canonical_json import canonicalize
from stichtag.domain.checkpoint import parse_checkpoint
from tests.conftest import Cluster, LiveServer, admin_url_for, make_tenant

QUESTIONS = ["Welcher Höchstrechnungszins gilt für Neugeschäft?", "Gesamtverzinsung 2024",
             "decision deadline claims", "Wer gewann die Fußball-WM?"]


def _verify(tmp: Path, export: str, public_key: str, older: str | None = None) -> dict[str, Any]:
    (tmp / "log.jsonl").write_text(export, encoding="utf-8")
    (tmp / "key.pem").write_text(public_key, encoding="utf-8")
    args = ["--json", "log", "verify", str(tmp / "log.jsonl"), "--public-key", str(tmp / "key.pem")]
    if older is not None:
        (tmp / "older.txt").write_text(older, encoding="utf-8")
        args += ["--older-checkpoint", str(tmp / "older.txt")]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(args)
    report = json.loads(buffer.getvalue())
    assert (code == 0) == report["ok"]
    return report


def _root(note: str) -> tuple[int, bytes]:
    cp = parse_checkpoint(note.split("\n\n", 1)[0] + "\n")
    return cp.size, cp.root


def test_log_export_proofs_and_rewrite_detection(live: LiveServer, tenant: Any, tmp_path: Path,
                                                 cluster: Cluster, database: str) -> None:
    ingest_manifest(live.services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    live.services.indexer.catch_up(tenant.tenant_id)
    key = live.key(tenant)
    with live.client(key) as http:
        for i in range(12):
            q = QUESTIONS[i % len(QUESTIONS)]
            if i % 2:
                assert http.post("/v1/search", json={"query": q}).status_code == 200
            else:
                assert http.post("/v1/answer", json={"question": q}).status_code == 200
        older = http.get("/v1/log/checkpoint").json()
        assert older["size"] == 12
        for q in QUESTIONS:
            http.post("/v1/search", json={"query": q})
        now = http.get("/v1/log/checkpoint").json()
        assert now["size"] == 16
        export = http.get("/v1/log/export").text
        report = _verify(tmp_path, export, now["public_key"], older["checkpoint"])
        assert report["ok"] and report["records"] == 16, report
        # Proofs against the signed roots.
        proof = http.get("/v1/log/proofs/consistency", params={"old": 12}).json()
        assert merkle.verify_consistency(12, 16, base64.b64decode(older["root"]),
                                         base64.b64decode(now["root"]),
                                         [base64.b64decode(p) for p in proof["proof"]])
        inc = http.get("/v1/log/proofs/inclusion", params={"seq": 5, "size": 16}).json()
        record = json.loads(export.splitlines()[1 + 5])["record"]
        assert base64.b64decode(inc["leaf_hash"]) == merkle.leaf_hash(canonicalize(record))
        assert merkle.verify_inclusion(base64.b64decode(inc["leaf_hash"]), 5, 16,
                                       [base64.b64decode(p) for p in inc["proof"]],
                                       base64.b64decode(now["root"]))
        # The run record is reachable by id and carries its place in the log.
        run = http.get(f"/v1/runs/{record['run_id']}").json()
        assert run["record"] == record
    # Only the audit scope reads the log; a read key cannot, nor replay others' runs.
    with live.client(live.key(tenant, scopes="read")) as reader:
        for path in ("/v1/log/checkpoint", "/v1/log/export",
                     "/v1/log/proofs/inclusion?seq=0", "/v1/log/proofs/consistency?old=1"):
            assert reader.get(path).status_code == 403, path
        assert reader.get(f"/v1/runs/{record['run_id']}").status_code == 404

    # A DBA rewrites run 3 and recomputes every leaf, the head and its root (no key).
    with psycopg.connect(admin_url_for(cluster, database)) as conn:
        conn.execute("UPDATE runs SET record = jsonb_set(record, '{request}', "
                     "'{\"query\": \"rewritten\", \"k\": 10}') WHERE seq = 3")
        rows = conn.execute("SELECT seq, record FROM runs WHERE tenant_id = %s ORDER BY seq",
                            (tenant.tenant_id,)).fetchall()
        tree = merkle.CompactRange()
        for seq, rec in rows:
            leaf = merkle.leaf_hash(canonicalize(rec))
            tree.append(leaf)
            conn.execute("UPDATE runs SET leaf_hash = %s WHERE tenant_id = %s AND seq = %s",
                         (leaf, tenant.tenant_id, seq))
        conn.execute("UPDATE log_heads SET root = %s, frontier = %s WHERE tenant_id = %s",
                     (tree.root(), tree.to_list(), tenant.tenant_id))
    with live.client(key) as http:
        forged = http.get("/v1/log/export").text
    tampered = _verify(tmp_path, forged, now["public_key"], older["checkpoint"])
    assert not tampered["ok"]
    assert tampered["problems"]


def test_concurrent_clients_leave_gapless_verifiable_logs(live: LiveServer, tmp_path: Path) -> None:
    tenants = [make_tenant(live.services, name) for name in ("left", "right")]
    for t in tenants:
        ingest_manifest(live.services, t, DEMO_DIR / "manifest.csv", use_tx_time=True)
        live.services.indexer.catch_up(t.tenant_id)
    keys = [live.key(t) for t in tenants]
    errors: list[str] = []

    def client(n: int) -> None:
        with live.client(keys[n % 2]) as http:
            for i in range(6):
                q = QUESTIONS[(n + i) % len(QUESTIONS)]
                r = (http.post("/v1/answer", json={"question": q}) if i % 3 == 0
                     else http.post("/v1/search", json={"query": q}))
                if r.status_code != 200:
                    errors.append(f"{n}: {r.status_code} {r.text[:200]}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for n, key in enumerate(keys):
        with live.client(key) as http:
            cp = http.get("/v1/log/checkpoint").json()
            export = http.get("/v1/log/export").text
        assert cp["size"] == 24
        seqs = [json.loads(line)["seq"] for line in export.splitlines()[1:-1]]
        assert seqs == list(range(24))
        sub = tmp_path / f"t{n}"
        sub.mkdir()
        assert _verify(sub, export, cp["public_key"])["ok"]
