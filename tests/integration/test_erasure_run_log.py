"""An erasure reaches the run log (docs/operations.md, "GDPR erasure"; docs/audit.md,
"Sealed texts"): after erasing a version, the quotes recorded runs took from it are in no
table of the database, no log export and no pg_dump, while the log, its proofs, replay
and a receipt issued before the erasure still verify."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import subprocess
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql

from stichtag.audit.receipt import verify_receipt
from stichtag.audit.signing import load_public_key, verify_checkpoint
from stichtag.audit.verify import verify_export
from stichtag.cli import main
from stichtag.domain import merkle
from stichtag.domain.canonical_json import canonicalize
from stichtag.domain.records import LogHead
from stichtag.services.runlog import normalized
from tests.conftest import Cluster, LiveServer, admin_url_for, make_tenant
from tests.integration.test_backup_restore import BACKUP_ROLE, _pg_bin, _roles

QUOTED = ("Die Versicherungsnehmerin Erika Mustermann hat den Höchstrechnungszins von "
          "0,25 Prozent für ihren Vertrag Nr. 4711 gewählt.")
PERSONAL = ("# Kundenakte\n\n(1) Frau Mustermann wohnt in der Musterstraße 5 in Köln. (2) "
            + QUOTED + "\n")
OTHER = ("# DeckRV\n\n## § 2 Höchstzinssatz\n\n(1) Der Höchstzinssatz für die Berechnung der "
         "Deckungsrückstellung beträgt 0,25 Prozent.\n")
QUESTION = "Welchen Höchstrechnungszins hat die Versicherungsnehmerin gewählt?"
CHECKED = "Frau Mustermann wohnt in der Musterstraße 5 in Köln."  # quoted by a check run
MARKS = (QUOTED, CHECKED, "Vertrag Nr. 4711", "Musterstraße 5")


def _table_texts(admin_url: str) -> dict[str, str]:
    """Every row of every table of the database, as text, per table (the log tables too)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace "
            "AND relkind = 'r' ORDER BY 1")]
        return {t: "\n".join(str(r[0]) for r in conn.execute(
            sql.SQL("SELECT t::text FROM {} t").format(sql.Identifier(t))))
            for t in tables}


def _plain_dump(cluster: Cluster, database: str, target: Path) -> str:
    _roles(cluster)
    name = urlsplit(database).path.lstrip("/")
    subprocess.run([_pg_bin("pg_dump"), "--format=plain", "--file", str(target),
                    cluster.database_url(name, role=BACKUP_ROLE)], check=True)
    return target.read_text(encoding="utf-8")


def _found(text: str) -> list[str]:
    return [m for m in MARKS if m in text]


def test_erasure_removes_quotes_from_the_run_log_and_the_log_still_verifies(
        live: LiveServer, cluster: Cluster, database: str, tmp_path: Path) -> None:
    if os.environ.get("STICHTAG_TEST_DATABASE_URL"):
        pytest.skip("uses the bundled pg_dump, which must match the embedded server")
    svc = live.services
    who = make_tenant(svc, "acme")
    key = live.key(who)
    public = load_public_key(svc.runlog.public_key())
    with live.client(key) as http:
        for doc, text in (("kundenakte", PERSONAL), ("deckrv", OTHER)):
            r = http.post(f"/v1/documents/{doc}/versions", json={
                "text": text, "valid_from": "2024-01-01", "confidentiality": "internal"})
            assert r.status_code == 201, r.text
            if doc == "kundenakte":
                erased_id = r.json()["version_id"]
        svc.indexer.catch_up(who.tenant_id)
        answer = http.post("/v1/answer", json={"question": QUESTION, "valid_at": "2024-06-01"})
        assert answer.status_code == 200, answer.text
        assert [s["text"] for s in answer.json()["sentences"]
                if erased_id in {c["version_id"] for c in s["citations"]}] == [f"(2) {QUOTED}"]
        check = http.post("/v1/answer/check", json={
            "answer": CHECKED, "valid_at": "2024-06-01", "citations": [
                {"sentence": 0, "document": "kundenakte", "quote": CHECKED}]})
        assert check.status_code == 200 and check.json()["status"] == "answered", check.text
        runs = [answer.json()["run_id"], check.json()["run_id"]]
        receipt = http.get(f"/v1/runs/{runs[0]}/receipt").json()
        shown = http.get(f"/v1/runs/{runs[0]}").json()["record"]
        assert shown["result"]["sentences"][0]["text"] == f"(2) {QUOTED}"  # rejoined for readers
        exported = http.get("/v1/log/export")  # lines with texts match the export schema
        assert exported.status_code == 200 and _found(exported.text) == list(MARKS)
    older_note = svc.runlog.checkpoint(who.tenant_id)  # what an auditor holds from before
    older = verify_checkpoint(older_note, public)
    before = list(svc.runlog.export(who.tenant_id))

    # Non-vacuous: before the erasure, the quotes are in the database, the export and a
    # dump; the leaves hold only their salted commitments.
    admin_url = admin_url_for(cluster, database)
    tables = _table_texts(admin_url)
    assert _found(tables["run_texts"]) == list(MARKS)
    assert not _found(tables["runs"]), "a quote inside a hashed record"
    assert _found("\n".join(before)) == list(MARKS)
    assert _found(_plain_dump(cluster, database, tmp_path / "before.sql")) == list(MARKS)
    assert verify_receipt(receipt, public).ok

    with live.client(key) as http:
        r = http.post(f"/v1/versions/{erased_id}/erase", json={"reason": "GDPR request 9"})
        assert r.status_code == 201, r.text
        erasure = r.json()["erasure"]
        # the answer's sentence and its draft; the check's answer, quote and sentence
        assert r.json()["blanked"]["run_texts"] == 5

        # Nowhere in the database, a fresh export (API and service) or a fresh pg_dump.
        after_tables = _table_texts(admin_url)
        assert {t: _found(v) for t, v in after_tables.items() if _found(v)} == {}
        exported = http.get("/v1/log/export")
        assert exported.status_code == 200 and not _found(exported.text)
        after = list(svc.runlog.export(who.tenant_id))
        assert not _found("\n".join(after))
        assert not _found(_plain_dump(cluster, database, tmp_path / "after.sql"))

        # The log verifies across the erasure: every old leaf is unchanged, the checkpoint
        # held from before is a prefix, a consistency proof joins the two trees.
        report = verify_export(after, public, older_checkpoint=older_note)
        assert report.ok, report.problems
        assert (report.sealed_texts - report.opened_texts, report.inline_text_records) == (5, 0)
        exported_file, older_file, pem_file = (tmp_path / "after.jsonl", tmp_path / "cp.txt",
                                               tmp_path / "key.pem")
        exported_file.write_text(exported.text, encoding="utf-8")
        older_file.write_text(older_note, encoding="utf-8")
        pem_file.write_text(svc.runlog.public_key(), encoding="utf-8")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["--json", "log", "verify", str(exported_file), "--public-key",
                         str(pem_file), "--older-checkpoint", str(older_file)]) == 0
        verified = json.loads(out.getvalue())
        assert verified["ok"] and verified["texts"]["erased"] == 5, verified
        assert verified["texts"]["records_with_text_in_leaf"] == 0
        assert [json.loads(x)["record"] for x in after[1:-1][:older.size]] == [
            json.loads(x)["record"] for x in before[1:-1]]
        proof = http.get("/v1/log/proofs/consistency", params={"old": older.size}).json()
        new = verify_checkpoint(proof["checkpoint"], public)
        assert merkle.verify_consistency(older.size, new.size, older.root, new.root,
                                         [base64.b64decode(p) for p in proof["proof"]])
        incl = http.get("/v1/log/proofs/inclusion",
                        params={"seq": receipt["log"]["seq"]}).json()
        assert incl["leaf_hash"] == receipt["log"]["leaf_hash"]

        # Replay says erased; the record shows the commitment and names the erasure.
        for run_id in runs:
            verdict = http.post(f"/v1/runs/{run_id}/replay").json()
            assert verdict["status"] == "erased" and verdict["erased"] == [erasure]
        read = http.get(f"/v1/runs/{runs[0]}")
        assert read.status_code == 200 and not _found(read.text)
        marker = read.json()["record"]["result"]["sentences"][0]["text"]
        assert marker["versions"] == [erased_id] and marker["erased"] == [erasure]
        assert marker["sealed"] == receipt["record"]["result"]["sentences"][0]["text"]["sealed"]
        assert http.get(f"/v1/runs/{runs[0]}/receipt").status_code == 410

    # Nothing else removes a sealed text: not the role, not the superuser, not the
    # function for a version without an erasure row.
    with live.client(key) as http:
        r = http.post("/v1/answer", json={"question": "Wie hoch ist der Höchstzinssatz der "
                                          "Deckungsrückstellung?", "valid_at": "2024-06-01"})
        assert r.status_code == 200 and r.json()["status"] != "abstained", r.text
        kept_id = r.json()["sentences"][0]["citations"][0]["version_id"]
    with psycopg.connect(admin_url, autocommit=True) as admin:
        for statement in ("DELETE FROM run_texts WHERE %(v)s = ANY(version_ids)",
                          "UPDATE run_texts SET text = '' WHERE %(v)s = ANY(version_ids)",
                          "TRUNCATE run_texts"):
            with pytest.raises(psycopg.errors.IntegrityConstraintViolation):
                admin.execute(statement, {"v": kept_id})
    with pytest.raises(psycopg.errors.IntegrityConstraintViolation), \
            svc.store.tx(who.tenant_id) as conn:
        conn.execute("SELECT erase_run_texts(%s)", (kept_id,))
    with pytest.raises(psycopg.errors.InsufficientPrivilege), svc.store.tx(who.tenant_id) as conn:
        conn.execute("DELETE FROM run_texts")

    # The receipt issued before still verifies offline (signature, inclusion, binding via
    # its own salts); the quotes cannot be checked against the server, and it says so.
    report_r = verify_receipt(receipt, public)
    assert report_r.ok and (report_r.quotes_checked, report_r.quotes_unchecked) == (0, 1)
    path, pem = tmp_path / "receipt.json", tmp_path / "log.pem"
    path.write_text(json.dumps(receipt), encoding="utf-8")
    pem.write_text(svc.runlog.public_key(), encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--url", live.base_url, "--key", key, "--json", "receipt", "verify",
                     str(path), "--public-key", str(pem)]) == 0
    assert json.loads(out.getvalue())["erased_versions"] == [erased_id]


def test_a_record_from_before_sealing_keeps_its_text_and_replays_erased(
        live: LiveServer, cluster: Cluster, database: str) -> None:
    """Runs recorded before sealing hold their quotes inside the leaf: an erasure cannot
    scrub them without breaking proofs. The verifier counts them; replay reports erased;
    reading the run shows [erased]."""
    svc = live.services
    who = make_tenant(svc, "legacy")
    key = live.key(who)
    with live.client(key) as http:
        r = http.post("/v1/documents/kundenakte/versions", json={
            "text": PERSONAL, "valid_from": "2024-01-01"})
        erased_id = r.json()["version_id"]
        svc.indexer.catch_up(who.tenant_id)
        answer = http.post("/v1/answer", json={"question": QUESTION, "valid_at": "2024-06-01"})
        assert answer.status_code == 200, answer.text
        record = http.get(f"/v1/runs/{answer.json()['run_id']}").json()["record"]
    # The same record appended as the code before sealing did: text inside the leaf.
    legacy = normalized({**record, "run_id": str(uuid.uuid4())})
    with svc.store.units.unit(who.tenant_id) as uow:
        head = uow.log.lock_head(merkle.EMPTY_ROOT)
        tree = merkle.CompactRange.from_list(head.size, head.frontier)
        leaf = merkle.leaf_hash(canonicalize(legacy))
        tree.append(leaf)
        uow.log.insert_leaf(run_id=uuid.UUID(legacy["run_id"]), kind="answer", key_id="old",
                            record=legacy, seq=head.size, leaf=leaf)
        uow.log.set_head(LogHead(
            size=tree.size, root=tree.root(), frontier=tree.to_list(),
            checkpoint=svc.runlog._sign(who.tenant_id, tree.size, tree.root())))
    svc.erasures.erase(who, erased_id, reason="GDPR request 10")
    public = load_public_key(svc.runlog.public_key())
    export = list(svc.runlog.export(who.tenant_id))
    report = verify_export(export, public)
    assert report.ok and report.inline_text_records == 1
    assert QUOTED in "\n".join(export)  # said honestly: it stays in that leaf
    with live.client(key) as http:
        verdict = http.post(f"/v1/runs/{legacy['run_id']}/replay").json()
        assert verdict["status"] == "erased"
        read = http.get(f"/v1/runs/{legacy['run_id']}")
        assert read.status_code == 200 and QUOTED not in read.text
        assert read.json()["record"]["result"]["sentences"][0]["text"] == "[erased]"
