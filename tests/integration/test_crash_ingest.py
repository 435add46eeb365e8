"""SIGKILL the server during a bulk ingest and restart it: every acknowledged version is
there, no version is torn (each stored text hashes to its id), nothing half-written shows."""

from __future__ import annotations

import random
import signal
import threading
import time
from typing import Any

import httpx
import psycopg
from psycopg.rows import dict_row

from stichtag.domain.records import VersionRow
from stichtag.domain.text import version_id
from stichtag.store.versions import assemble
from tests.conftest import Cluster, admin_url_for, free_port, make_tenant, start_server


def _text(rng: random.Random, doc: int, n: int) -> str:
    words = ["Deckungsrückstellung", "Höchstzinssatz", "Versicherungsnehmer", "Beitrag",
             "Prämie", "gemäß", "Absatz", "Zinssatz", "Leistung", "Vertrag", "beträgt", "Prozent"]
    paras = [f"# Dokument {doc} Fassung {n}\n"]
    for p in range(rng.randint(40, 120)):
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(6, 16)))
        paras.append(f"({p + 1}) {sentence.capitalize()} {rng.randint(0, 10**6)}.\n")
    return "\n".join(paras)


def test_sigkill_during_bulk_ingest(cluster: Cluster, database: str, tmp_path: Any, services: Any,
                                    models_dir: Any) -> None:
    who = make_tenant(services, "crash")
    _, key = services.access.create_key(who.tenant_id, scopes=["read", "write"], clearance=3)
    env = {"STICHTAG_DATABASE_URL": database, "STICHTAG_DATA_DIR": str(tmp_path / "data"),
           "STICHTAG_MODELS_DIR": str(models_dir)}
    acked: list[tuple[str, str]] = []  # (document, version_id) acknowledged with 2xx
    lock = threading.Lock()
    stop = threading.Event()

    def client(worker: int, port: int) -> None:
        rng = random.Random(worker)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10,
                          headers={"Authorization": f"Bearer {key}"}) as http:
            n = 0
            while not stop.is_set():
                doc = f"w{worker}-d{rng.randint(0, 4)}"
                text = _text(rng, worker, n)
                n += 1
                try:
                    r = http.post(f"/v1/documents/{doc}/versions", json={
                        "text": text, "valid_from": f"20{10 + n % 15}-01-01T00:00:00Z"})
                except httpx.HTTPError:
                    continue  # server gone: unacknowledged, may or may not be stored
                if r.status_code in (200, 201):
                    with lock:
                        acked.append((doc, r.json()["version_id"]))

    kills = 3
    for _ in range(kills):
        port = free_port()
        proc = start_server(env, port)
        stop.clear()
        threads = [threading.Thread(target=client, args=(w + 10 * len(acked), port))
                   for w in range(4)]
        for t in threads:
            t.start()
        time.sleep(random.uniform(1.5, 3.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stop.set()
        for t in threads:
            t.join()
    assert len(acked) > 10, "the clients should have been acknowledged some writes"

    port = free_port()
    proc = start_server(env, port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                          headers={"Authorization": f"Bearer {key}"}) as http:
            for doc, vid in acked:
                r = http.get(f"/v1/versions/{vid}")
                assert r.status_code == 200, (doc, vid)
                assert version_id(r.json()["text"]) == vid
                history = http.get(f"/v1/documents/{doc}/history").json()["assertions"]
                assert any(a["version_id"] == vid for a in history)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

    # Every version in the database, acknowledged or not, is whole and addressed by its hash.
    with psycopg.connect(admin_url_for(cluster, database), row_factory=dict_row) as conn:
        versions = conn.execute(
            "SELECT version_id, media_type, segmenter_id, len_cp, len_u16, n_sentences, created_at,"
            " tenant_id FROM versions").fetchall()
        assert len(versions) >= len({v for _, v in acked})
        for v in versions:
            blocks = conn.execute(
                "SELECT b.text, b.kind, b.len_cp, b.len_u16, b.sent_starts, b.sent_ends,"
                " b.sent_u16_starts, b.sent_u16_ends, b.sent_hashes, p.path"
                " FROM versions v CROSS JOIN LATERAL unnest(v.block_ids, v.path_ids)"
                "   WITH ORDINALITY AS u(block_id, path_id, ord)"
                " JOIN blocks b ON b.block_id = u.block_id"
                " JOIN heading_paths p ON p.path_id = u.path_id"
                " WHERE v.tenant_id = %s AND v.version_id = %s ORDER BY u.ord",
                (v["tenant_id"], v["version_id"])).fetchall()
            row = VersionRow(**{k: v[k] for k in VersionRow.__dataclass_fields__})
            content = assemble(row, blocks)
            assert version_id(content.text) == v["version_id"]
            assert len(content.text) == v["len_cp"]
            assert len(content.sentences) == v["n_sentences"]
        orphans = conn.execute(
            "SELECT count(*) AS n FROM assertions a WHERE NOT EXISTS ("
            " SELECT 1 FROM versions v WHERE v.version_id = a.version_id)").fetchone()
        assert orphans is not None and orphans["n"] == 0

