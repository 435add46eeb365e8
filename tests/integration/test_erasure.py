"""GDPR erasure end to end (docs/operations.md, "GDPR erasure"), over real HTTP and the
embedded PostgreSQL: ingest, answer citing the version, erase, every read of it 410, search
and answers without its text, replay "erased", the log still verifies, the knowledge diff
shows it, the database refuses any other way to blank content, and a restore from a dump
taken before the erasure is erased again by the documented step."""

from __future__ import annotations

import io
import json
import os
import subprocess
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from stichtag.audit.signing import load_public_key
from stichtag.audit.verify import verify_export
from stichtag.cli import main
from stichtag.cli.erasures import read_export
from stichtag.config import Settings
from stichtag.domain.errors import Gone
from stichtag.services.documents import IngestRequest
from stichtag.store.embedded import APP_ROLE
from tests.conftest import Cluster, LiveServer, admin_url_for, make_tenant
from tests.integration.test_backup_restore import BACKUP_ROLE, _pg_bin, _roles, restored_node
from tests.originals import simple_pdf

PERSON = "Erika Mustermann"
PERSONAL = (f"# Kundenakte\n\n(1) {PERSON} wohnt in der Musterstraße 5 in Köln. (2) Die "
            "Versicherungsnehmerin hat den Höchstrechnungszins von 0,25 Prozent für ihren "
            "Vertrag Nr. 4711 gewählt.\n")
OTHER = ("# DeckRV\n\n## § 2 Höchstzinssatz\n\n(1) Der Höchstzinssatz für die Berechnung der "
         "Deckungsrückstellung beträgt 0,25 Prozent.\n")
QUESTION = "Welchen Höchstrechnungszins hat die Versicherungsnehmerin gewählt?"


def _ingest(http: Any, key: str, text: str) -> str:
    r = http.post(f"/v1/documents/{key}/versions",
                  json={"text": text, "valid_from": "2024-01-01", "confidentiality": "internal"})
    assert r.status_code == 201, r.text
    return str(r.json()["version_id"])


def _cited(answer: dict[str, Any]) -> set[str]:
    return {c["version_id"] for s in answer["sentences"] for c in s["citations"]}


def _dump(cluster: Cluster, database: str, target: Path) -> None:
    _roles(cluster)
    name = urlsplit(database).path.lstrip("/")
    subprocess.run([_pg_bin("pg_dump"), "--format=custom", "--file", str(target),
                    cluster.database_url(name, role=BACKUP_ROLE)], check=True)


def test_erasure_end_to_end(live: LiveServer, cluster: Cluster, database: str, tmp_path: Path,
                            embedder: Any, models_dir: Path) -> None:
    if os.environ.get("STICHTAG_TEST_DATABASE_URL"):
        pytest.skip("uses the bundled pg_dump, which must match the embedded server")
    svc = live.services
    who = make_tenant(svc, "acme")
    admin, reader = live.key(who), live.key(who, scopes="read,write,audit")
    other = make_tenant(svc, "bravo")
    foreign = live.key(other)
    with live.client(admin) as http:
        erased_id = _ingest(http, "kundenakte", PERSONAL)
        kept_id = _ingest(http, "deckrv", OTHER)
        svc.indexer.catch_up(who.tenant_id)
        first = http.post("/v1/answer", json={"question": QUESTION, "valid_at": "2024-06-01"})
        assert first.status_code == 200, first.text
        assert erased_id in _cited(first.json()), first.json()
        hits = http.post("/v1/search", json={"query": PERSON, "valid_at": "2024-06-01"}).json()
        assert any(PERSON in h["text"] for h in hits["hits"]), hits
        sentence = http.get(f"/v1/versions/{erased_id}").json()["sentences"][0]
    with live.client(foreign) as b:  # the same text in another tenant is its own version
        assert _ingest(b, "kundenakte", PERSONAL) == erased_id
        before_erasure = datetime.now(UTC) - timedelta(seconds=1)
    older = svc.runlog.checkpoint(who.tenant_id)  # what an auditor holds from before
    dump = tmp_path / "before-erasure.dump"
    _dump(cluster, database, dump)

    # Only an admin key of the same tenant may erase; a reason is required.
    with live.client(reader) as http:
        assert http.post(f"/v1/versions/{erased_id}/erase",
                         json={"reason": "ticket 1"}).status_code == 403
    with live.client(live.key(make_tenant(svc, "charlie"))) as http:
        r = http.post(f"/v1/versions/{erased_id}/erase", json={"reason": "ticket 1"})
        assert r.status_code == 404 and erased_id not in r.text
    with live.client(admin) as http:
        assert http.post(f"/v1/versions/{erased_id}/erase", json={}).status_code == 400
        assert http.post(f"/v1/versions/{erased_id}/erase",
                         json={"reason": "  "}).status_code == 422

        r = http.post(f"/v1/versions/{erased_id}/erase", json={"reason": "GDPR request 2026-114"})
        assert r.status_code == 201, r.text
        erasure = r.json()["erasure"]
        assert erasure["content_hash"] == erased_id and erasure["reason"] == "GDPR request 2026-114"
        assert r.json()["blanked"]["blocks"] >= 1 and r.json()["documents"] == ["kundenakte"]
        again = http.post(f"/v1/versions/{erased_id}/erase", json={"reason": "twice"})
        assert again.status_code == 200 and not again.json()["erased"]
        assert again.json()["erasure"] == erasure

        # Every read that would serve its text answers 410 with the erasure record.
        reads = [
            http.get(f"/v1/versions/{erased_id}"),
            http.get(f"/v1/versions/{erased_id}/original"),
            http.get(f"/v1/versions/{erased_id}/pages/1"),
            http.get("/v1/documents/kundenakte", params={"valid_at": "2024-06-01"}),
            http.get("/v1/citations/resolve", params={
                "version_id": erased_id, "start": sentence["start"], "end": sentence["end"]}),
            http.post("/v1/citations/anchor", json={
                "source": erased_id, "selector": [{"type": "TextQuoteSelector",
                                                   "exact": "Musterstraße"}]}),
            http.get(f"/v1/versions/{erased_id}/diff", params={"to_version_id": kept_id}),
        ]
        for resp in reads:
            assert resp.status_code == 410, (resp.request.url, resp.status_code, resp.text)
            assert resp.headers["content-type"].startswith("application/problem+json")
            assert resp.json()["erasure"] == erasure
            assert PERSON not in resp.text and "Musterstraße" not in resp.text
        # The erased text is not stored again under another key.
        r = http.post("/v1/documents/kopie/versions",
                      json={"text": PERSONAL, "valid_from": "2024-01-01"})
        assert r.status_code == 409 and PERSON not in r.text, r.text
        # The history keeps the assertion (ids and hashes stay).
        history = http.get("/v1/documents/kundenakte/history").json()["assertions"]
        assert [a["version_id"] for a in history] == [erased_id]
        # Another tenant learns nothing: the same 404 as an unknown id.
        # The other tenant's copy of the same text is untouched.
        with live.client(foreign) as b:
            assert PERSON in b.get(f"/v1/versions/{erased_id}").json()["text"]

        # Search and answers never return the erased text again.
        svc.indexer.catch_up(who.tenant_id)
        hits = http.post("/v1/search", json={"query": PERSON, "valid_at": "2024-06-01"})
        assert hits.status_code == 200 and PERSON not in hits.text, hits.text
        assert all(h["version_id"] != erased_id for h in hits.json()["hits"])
        later = http.post("/v1/answer", json={"question": QUESTION, "valid_at": "2024-06-01",
                                              "known_at": first.json()["as_of"]["known_at"]})
        assert later.status_code == 200 and erased_id not in _cited(later.json())
        assert PERSON not in later.text and "Musterstraße" not in later.text
        assert svc.indexer.check(who.tenant_id)["differences"] == 0

        # Replay of the run that cited it: a verdict of its own, not a mismatch.
        verdict = http.post(f"/v1/runs/{first.json()['run_id']}/replay").json()
        assert verdict["status"] == "erased" and not verdict["reproduced"]
        assert verdict["differences"] == [] and verdict["erased"] == [erasure]

        # The run record reads without the erased text (the signed leaf is unchanged).
        run = http.get(f"/v1/runs/{first.json()['run_id']}")
        assert run.status_code == 200 and run.json()["erased"] == [erasure]
        quoted = [s["text"] for s in first.json()["sentences"]
                  if erased_id in {c["version_id"] for c in s["citations"]}]
        assert quoted and not any(q in run.text for q in quoted), run.text

        # The erasure is a leaf of the run log, readable like any run, exported with it.
        leaf = http.get(f"/v1/runs/{erasure['run_id']}")
        assert leaf.status_code == 200 and leaf.json()["kind"] == "erasure"
        assert leaf.json()["record"]["reason"] == erasure["reason"]
        assert http.get("/v1/log/export").status_code == 200  # every line schema-checked

        # The knowledge diff shows it.
        changes = http.get("/v1/changes", params={"known_from": before_erasure.isoformat()})
        assert changes.status_code == 200, changes.text
        assert changes.json()["erasures"] == [erasure]
        assert changes.json()["counts"]["erased"] == 1

    # The log (with the erasure's leaf) still verifies offline against a checkpoint held
    # from before the erasure.
    public = load_public_key(svc.runlog.public_key())
    export = list(svc.runlog.export(who.tenant_id))
    assert verify_export(export, public, older_checkpoint=older).ok
    assert sum('"kind":"erasure"' in line for line in export) == 1
    export_file = tmp_path / "acme-log.jsonl"
    export_file.write_text("".join(line if line.endswith("\n") else line + "\n"
                                   for line in export), encoding="utf-8")

    # The database holds no trace of the text, and refuses every other path to blank.
    with svc.store.tx(who.tenant_id) as conn:
        texts = [r[0] for r in conn.execute(
            "SELECT b.text FROM versions v, unnest(v.block_ids) u(id) "
            "JOIN blocks b ON b.block_id = u.id WHERE v.version_id = %s", (erased_id,))]
        assert texts and all(t == "" for t in texts)
        assert not conn.execute("SELECT count(*) FROM passages WHERE text LIKE %s",
                                (f"%{PERSON}%",)).fetchone()[0]
    with pytest.raises(psycopg.errors.InsufficientPrivilege), svc.store.tx(who.tenant_id) as conn:
        conn.execute("UPDATE blocks SET text = ''")
    with pytest.raises(psycopg.errors.IntegrityConstraintViolation), \
            svc.store.tx(who.tenant_id) as conn:
        conn.execute("SELECT erase_version(%s)", (kept_id,))  # no erasure row: refused
    with svc.store.tx(who.tenant_id) as conn:
        assert conn.execute("SELECT count(*) FROM versions WHERE erased").fetchone()[0] == 1

    # Restore the dump taken before the erasure: the text is back ...
    with restored_node(cluster, dump, data_dir=tmp_path / "restored-node",
                       signing_key=svc.settings.signing_key, models_dir=models_dir,
                       embedder=embedder) as (restored, node):
        assert PERSON in node.documents.version(who, erased_id).text
        # ... until the documented step: erasures re-applied from the newer log export,
        # with the operator's command (docs/operations.md, "GDPR erasure").
        assert node.erasures.reapply(who) == []  # the restored log has none of its own
        assert len(read_export(export_file, str(who.tenant_id))) == 1
        with pytest.MonkeyPatch.context() as env:
            env.setenv("STICHTAG_DATABASE_URL", cluster.database_url(restored, role=APP_ROLE))
            env.setenv("STICHTAG_DATA_DIR", str(tmp_path / "restored-node"))
            env.setenv("STICHTAG_MODELS_DIR", str(models_dir))
            env.setenv("STICHTAG_SIGNING_KEY", str(svc.settings.signing_key))
            out = io.StringIO()
            with redirect_stdout(out):
                code = main(["--json", "erasures", "reapply", "--tenant", "acme",
                             "--from", str(export_file)])
        assert code == 0, out.getvalue()
        done = json.loads(out.getvalue())
        assert done["reapplied"] == 1 and done["versions"][0]["version_id"] == erased_id
        with pytest.raises(Gone):
            node.documents.version(who, erased_id)
        node.indexer.rebuild(who.tenant_id)
        now = datetime.now(UTC)
        found = node.search.search(who, PERSON, valid_at=now, known_at=now, k=10)
        assert all(h.version_id != erased_id for h in found.hits)
        assert node.documents.version(who, kept_id).text == OTHER
        # Idempotent: the second run changes nothing; the restored log still verifies.
        assert [d["status"] for d in node.erasures.reapply(who)] == ["erased"]
        assert verify_export(list(node.runlog.export(who.tenant_id)), public,
                             older_checkpoint=older).ok


def test_erasing_a_pdf_blanks_its_original_and_the_triggers_allow_nothing_else(
        live: LiveServer, cluster: Cluster, database: str) -> None:
    svc = live.services
    who = make_tenant(svc, "pdfs")
    pdf = simple_pdf([f"Personalakte von {PERSON}.", "Zweite Seite der Akte."])
    kept_pdf = simple_pdf(["Ein anderes Dokument ohne Personenbezug."])
    with live.client(live.key(who)) as http:
        ids = []
        for key, data in (("akte", pdf), ("anderes", kept_pdf)):
            r = http.post(f"/v1/documents/{key}/versions", content=data,
                          params={"valid_from": "2024-01-01"},
                          headers={"Content-Type": "application/pdf"})
            assert r.status_code == 201, r.text
            ids.append(r.json()["version_id"])
        erased_id, kept_id = ids
        assert http.get(f"/v1/versions/{erased_id}/original").content == pdf
        assert http.get(f"/v1/versions/{erased_id}/pages/2").status_code == 200
        r = http.post(f"/v1/versions/{erased_id}/erase", json={"reason": "ticket 7"})
        assert r.status_code == 201 and r.json()["blanked"]["originals"] == 1, r.text
        for path in ("original", "pages/1", "pages/2"):
            gone = http.get(f"/v1/versions/{erased_id}/{path}")
            assert gone.status_code == 410 and gone.json()["erasure"]["reason"] == "ticket 7"
        assert http.get(f"/v1/versions/{kept_id}/original").content == kept_pdf

    with psycopg.connect(admin_url_for(cluster, database), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT s.version_id, octet_length(o.data), o.size, octet_length(s.layout) "
            "FROM version_sources s JOIN originals o USING (tenant_id, original_id) "
            "WHERE s.tenant_id = %s", (who.tenant_id,)).fetchall()
        sizes = {r[0]: r[1:] for r in rows}
        assert sizes[erased_id][0] == 0 and sizes[erased_id][1] == len(pdf)  # size kept
        assert sizes[erased_id][2] == 0 and sizes[kept_id][0] == len(kept_pdf)
        # Even the superuser (RLS does not bind it, triggers do) cannot blank an original
        # that is not erased, change an erased one otherwise, or delete either.
        for statement in (
                "UPDATE originals SET data = '' WHERE tenant_id = %(t)s AND size = %(kept)s",
                "UPDATE originals SET media_type = 'text/plain' WHERE tenant_id = %(t)s "
                "AND octet_length(data) = 0",
                "UPDATE version_sources SET layout = '' WHERE tenant_id = %(t)s "
                "AND version_id = %(kept_id)s",
                "DELETE FROM originals WHERE tenant_id = %(t)s",
                "DELETE FROM erasures WHERE tenant_id = %(t)s"):
            with pytest.raises(psycopg.errors.IntegrityConstraintViolation):
                admin.execute(statement, {"t": who.tenant_id, "kept": len(kept_pdf),
                                          "kept_id": kept_id})


def test_operator_erases_with_the_cli(services: Any, settings: Settings,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    who = make_tenant(services, "cli-erase")
    version_id = services.documents.ingest(who, "kundenakte", IngestRequest(
        text=PERSONAL, valid_from=datetime(2024, 1, 1, tzinfo=UTC))).version_id
    monkeypatch.setenv("STICHTAG_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("STICHTAG_DATA_DIR", str(settings.data_dir))
    assert main(["versions", "erase", "--tenant", "cli-erase", version_id]) == 2  # no reason
    capsys.readouterr()
    assert main(["--json", "versions", "erase", "--tenant", "cli-erase", version_id,
                 "--reason", "ticket 4711"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["erased"] and done["erasure"]["reason"] == "ticket 4711"
    assert main(["versions", "erase", "--tenant", "cli-erase", version_id,
                 "--reason", "again"]) == 0
    assert capsys.readouterr().out.startswith(f"already erased {version_id}")
    assert main(["get", "--tenant", "cli-erase", "kundenakte", "--valid-at", "2024-06-01",
                 "--text"]) == 1
    captured = capsys.readouterr()
    assert f"version {version_id} was erased" in captured.err and PERSON not in captured.out
    assert main(["--json", "erasures", "list", "--tenant", "cli-erase"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["version_id"] for r in listed] == [version_id]
    assert main(["--json", "erasures", "reapply", "--tenant", "cli-erase"]) == 0
    assert json.loads(capsys.readouterr().out)["erased"] == 1  # idempotent: nothing to do
