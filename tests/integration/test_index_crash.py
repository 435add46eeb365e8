"""Kill the server while it indexes, restart it, and the derived index is consistent:
`stichtag index check` reports zero differences, and a rebuild gives the same hit sets."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import time
from pathlib import Path
from typing import Any

import httpx

from stichtag.bootstrap import bootstrap
from stichtag.cli import main
from stichtag.config import Settings
from stichtag.services.access import SCOPES, Principal
from tests.conftest import free_port, make_tenant, shared_path, start_server


def _cli(*args: str) -> tuple[int, dict[str, Any]]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["--json", *args])
    return code, json.loads(buffer.getvalue() or "{}")


def test_kill_during_indexing_then_check_and_rebuild(database: str, tmp_path: Path, services: Any,
                                                     models_dir: Path, embedder: Any,
                                                     monkeypatch: Any) -> None:
    corpus = shared_path("corpus", "de-insurance-law")
    who = make_tenant(services, "idx")
    _, key = services.access.create_key(who.tenant_id, scopes=["read", "write"], clearance=3)
    env = {"STICHTAG_DATABASE_URL": database, "STICHTAG_DATA_DIR": str(tmp_path / "node"),
           "STICHTAG_MODELS_DIR": str(models_dir)}
    files = sorted((corpus / "vvg2008").glob("*.md"))[:6] + sorted((corpus / "deckrv").glob("*.md"))
    for round_ in range(2):
        port = free_port()
        proc = start_server(env, port)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                          headers={"Authorization": f"Bearer {key}"}) as http:
            for n, path in enumerate(files[round_::2]):
                r = http.post(f"/v1/documents/{path.parent.name}/versions", json={
                    "text": path.read_text(encoding="utf-8"),
                    "valid_from": f"20{13 + n + 5 * round_}-01-01"})
                assert r.status_code in (200, 201), r.text
        time.sleep(0.5)  # the background indexer is busy embedding and indexing now
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, report = _cli("index", "check", "--tenant", "idx")
    assert code == 0 and report["differences"] == 0, report
    assert report["indexed"] == report["expected"] > 100

    node = bootstrap(Settings(database_url=database, data_dir=tmp_path / "node",
                              models_path=models_dir), run_migrations=False, embedder=embedder)
    reader = Principal(tenant_id=who.tenant_id, key_id="t", scopes=frozenset(SCOPES), clearance=3)
    queries = ["Versicherungsnehmer Anzeigepflicht", "Höchstzinssatz Deckungsrückstellungen",
               "Rücktritt vom Vertrag", "Prämie Zahlung Verzug"]
    from stichtag.domain.timeutil import parse_time

    pairs = [(parse_time(v, field="v"), parse_time(k, field="k"))
             for v, k in (("2016-06-01", "2099-01-01"), ("2025-01-01", "2099-01-01"))]
    try:
        def hit_sets() -> list[set[tuple[int, int]]]:
            out = []
            for q in queries:
                for valid_at, _ in pairs:
                    now = parse_time("2099-01-01", field="k")
                    out.append({k for k, _ in node.search.lexical_candidates(
                        reader, q, valid_at=valid_at, known_at=now, k=10_000)})
            return out

        node.indexer.sync_lexical(who.tenant_id)
        before = hit_sets()
        assert sum(len(s) for s in before) > 0
        node.indexer.rebuild(who.tenant_id)
        assert hit_sets() == before
        assert node.indexer.check(who.tenant_id)["differences"] == 0
    finally:
        node.close()
