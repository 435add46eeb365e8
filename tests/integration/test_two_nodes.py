"""Two server processes on one database (docs/operations.md, "Several nodes on one database", the
scale-out path on loopback).

Each node has its own data directory, hence its own tantivy replica derived from the
outbox, and both use the same checkpoint signing key (STICHTAG_SIGNING_KEY). Documents go
in through node A; node B then returns the same versions, citations and statuses for
searches and as-of answers at several Stichtage, including after a backdated version
ingested on A once B had answered. Both nodes append to the tenant's one run log, which
stays gapless and verifies with the one public key; `index check` finds 0 differences on
both replicas. `make two-node` runs this with -s and prints the table.
"""

from __future__ import annotations

import csv
import os
import signal
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg

from stichtag.audit.signing import load_or_create_signing_key, load_public_key, public_key_pem
from stichtag.audit.verify import verify_export
from stichtag.cli.demo import DEMO_DIR
from stichtag.index.applier import Indexer
from tests.conftest import Cluster, admin_url_for, free_port, make_tenant, start_server

QUESTIONS = ["Welcher Höchstrechnungszins gilt für Neugeschäft?",
             "Wie hoch ist die deklarierte Gesamtverzinsung?",
             "Welche Unterlagen braucht die Annahme bei Berufsunfähigkeit?",
             "decision deadline claims", "Wer gewann die Fußball-WM?"]


def _ingest_demo(http: httpx.Client) -> int:
    """The demo manifest through node A, with its transaction times (admin import)."""
    count = 0
    with (DEMO_DIR / "manifest.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["action"] == "retract":
                r = http.post(f"/v1/documents/{row['document']}/retract", json={
                    "valid_from": row["valid_from"], "reason": row["note"],
                    "tx_time": row["tx_time"]})
            else:
                r = http.post(f"/v1/documents/{row['document']}/versions", json={
                    "text": (DEMO_DIR / row["file"]).read_text(encoding="utf-8"),
                    "valid_from": row["valid_from"], "tx_time": row["tx_time"],
                    "title": row["title"], "doc_class": row["doc_class"],
                    "confidentiality": row["confidentiality"]})
            assert r.status_code in (200, 201), r.text
            count += 1
    return count


def _await_embeddings(admin_url: str, deadline: float = 120) -> None:
    """Node A's indexer embeds in the background; compare only once it is done."""
    end = time.monotonic() + deadline
    with psycopg.connect(admin_url) as conn:
        while time.monotonic() < end:
            row = conn.execute("SELECT count(*) FROM passages WHERE embedding IS NULL").fetchone()
            if row is not None and row[0] == 0:
                return
            time.sleep(0.2)
    raise AssertionError("embeddings did not finish")


def _answer_key(data: dict[str, Any]) -> tuple[Any, ...]:
    """Everything a client sees that must not depend on the node (not run ids, timings)."""
    return (data["status"], data["reason"], data["as_of"], data["thresholds_version"],
            None if data["observed"] is None else round(data["observed"], 6),
            [(s["text"], [(c["document"], c["version_id"], c["start"], c["end"], c["quote"])
                          for c in s["citations"]]) for s in data["sentences"]],
            [(s["citation"]["version_id"], s["citation"]["start"], s["citation"]["end"],
              s["cited"], s["consulted"], round(s["score"], 6)) for s in data["sources"]])


def _search_key(data: dict[str, Any]) -> tuple[Any, ...]:
    return (data["as_of"], [(h["document"], h["version_id"], h["start"], h["end"])
                            for h in data["hits"]])


def _compare(a: httpx.Client, b: httpx.Client, stichtage: list[tuple[str, str]],
             stats: Counter[str]) -> dict[tuple[str, str, str], tuple[Any, ...]]:
    """Ask both nodes the same questions at the same as-of pairs; return B's answers."""
    answers = {}
    for valid_at, known_at in stichtage:
        for q in QUESTIONS:
            body = {"question": q, "valid_at": valid_at, "known_at": known_at}
            ra, rb = a.post("/v1/answer", json=body), b.post("/v1/answer", json=body)
            assert ra.status_code == rb.status_code == 200, (ra.text, rb.text)
            assert _answer_key(ra.json()) == _answer_key(rb.json()), (q, valid_at, known_at)
            answers[(q, valid_at, known_at)] = _answer_key(rb.json())
            stats["answers compared"] += 1
            stats[f"status {rb.json()['status']}"] += 1
            body = {"query": q, "valid_at": valid_at, "known_at": known_at, "k": 10}
            sa, sb = a.post("/v1/search", json=body), b.post("/v1/search", json=body)
            assert sa.status_code == sb.status_code == 200, (sa.text, sb.text)
            assert _search_key(sa.json()) == _search_key(sb.json()), (q, valid_at, known_at)
            stats["searches compared"] += 1
    return answers


def _backdated_round(a: httpx.Client, b: httpx.Client, *, admin: str, before: str,
                     first: dict[tuple[str, str, str], tuple[Any, ...]],
                     stats: Counter[str]) -> None:
    """A backdated version, ingested on A after B answered: B sees it at once for known_at
    after the write, and never for known_at before it."""
    text = (DEMO_DIR / "surplus-declaration" / "2022-01-01.md").read_text(encoding="utf-8")
    corrected = text.replace("0,25 %", "0,30 %")
    assert corrected != text
    r = a.post("/v1/documents/surplus-declaration/versions", json={
        "text": corrected, "valid_from": "2022-01-01", "valid_to": "2023-01-01",
        "title": "Überschussdeklaration (berichtigt)", "doc_class": "declaration",
        "confidentiality": "public"})
    assert r.status_code == 201, r.text
    new_version = r.json()["version_id"]
    stats["writes on A"] += 1
    _await_embeddings(admin)
    after = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    time.sleep(1.1)
    again = _compare(a, b, [("2022-06-01", before), ("2022-06-01", after)], stats)
    q = QUESTIONS[0]
    assert again[(q, "2022-06-01", before)] == first[(q, "2022-06-01", before)]
    doc_b = b.get("/v1/documents/surplus-declaration",
                  params={"valid_at": "2022-06-01", "known_at": after}).json()
    assert doc_b["version_id"] == new_version
    cited = {c[1] for s in again[(q, "2022-06-01", after)][5] for c in s[1]}
    if again[(q, "2022-06-01", after)][0] != "abstained":
        assert cited == {new_version}, cited


def test_two_nodes_serve_the_same_as_of_answers(cluster: Cluster, database: str, services: Any,
                                                models_dir: Path, tmp_path: Path) -> None:
    who = make_tenant(services, "twonode")
    _, key = services.access.create_key(who.tenant_id, scopes=["read", "write", "audit", "admin"],
                                        clearance=3)
    signing = tmp_path / "shared" / "signing.key"
    load_or_create_signing_key(signing)  # the operator's one key, handed to every node
    common = {"STICHTAG_DATABASE_URL": database, "STICHTAG_MODELS_DIR": str(models_dir),
              "STICHTAG_SIGNING_KEY": str(signing)}
    nodes = {}
    for name in ("a", "b"):
        port = free_port()
        env = {**common, "STICHTAG_DATA_DIR": str(tmp_path / name)}
        nodes[name] = (start_server(env, port), f"http://127.0.0.1:{port}")
    headers = {"Authorization": f"Bearer {key}"}
    admin = admin_url_for(cluster, database)
    stats: Counter[str] = Counter()
    try:
        with httpx.Client(base_url=nodes["a"][1], headers=headers, timeout=120) as a, \
             httpx.Client(base_url=nodes["b"][1], headers=headers, timeout=120) as b:
            stats["writes on A"] += _ingest_demo(a)
            _await_embeddings(admin)
            before = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
            time.sleep(1.1)
            stichtage = [("2022-06-01", "2021-06-01"), ("2022-06-01", before),
                         ("2023-08-01", "2023-08-01"), ("2023-08-01", before),
                         ("2025-03-01", before), ("2026-02-01", "2025-12-01")]
            first = _compare(a, b, stichtage, stats)

            _backdated_round(a, b, admin=admin, before=before, first=first, stats=stats)

            # One log, appended to by both nodes: gapless, verifiable, the same from both.
            export_a, export_b = a.get("/v1/log/export").text, b.get("/v1/log/export").text
            # The same records; each export's checkpoint is signed at export time.
            assert export_a.splitlines()[:-1] == export_b.splitlines()[:-1]
            assert verify_export(export_a.splitlines(), load_public_key(
                public_key_pem(load_or_create_signing_key(signing)))).ok
            public = load_public_key(public_key_pem(load_or_create_signing_key(signing)))
            assert a.get("/v1/log/checkpoint").json()["public_key"] == \
                b.get("/v1/log/checkpoint").json()["public_key"]
            report = verify_export(export_b.splitlines(), public)
            assert report.ok, report.problems
            assert report.record_count == stats["answers compared"] * 4  # 2 answers + 2 searches
            stats["log records"] = report.record_count
    finally:
        for proc, _ in nodes.values():
            proc.send_signal(signal.SIGTERM)
        for proc, _ in nodes.values():
            proc.wait(timeout=60)

    _check_indexes(services, who.tenant_id, tmp_path, stats)
    _print_table(stats)


def _check_indexes(services: Any, tenant_id: Any, tmp_path: Path, stats: Counter[str]) -> None:
    """`stichtag index check` on each node's replica, with the nodes stopped."""
    for name in ("a", "b"):
        indexer = Indexer(services.store.feed, services.store.retrieval,
                          tmp_path / name / "index", embedder=None)
        try:
            report = indexer.check(tenant_id)
        finally:
            indexer.close()
        assert report["differences"] == 0, (name, report)
        assert report["indexed"] == report["expected"] > 0
        stats[f"index diffs {name.upper()}"] = report["differences"]
        stats[f"indexed passages {name.upper()}"] = report["indexed"]


def _print_table(stats: Counter[str]) -> None:
    """The figures of `make two-node`."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    width = max(len(k) for k in stats)
    print(f"\ntwo nodes on one database (load average {load})")
    for k in sorted(stats):
        print(f"{k:<{width}}  {stats[k]}")
    print(f"{'log verify':<{width}}  OK")
