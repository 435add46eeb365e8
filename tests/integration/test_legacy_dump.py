"""A database written by an earlier release still verifies and replays with today's code.

``tests/legacy/main-3318937/`` holds a pg_dump made by ``tests/legacy/make_dump.py`` with
the code of main at 3318937 (before the app/ and migrations/ layout): the demo corpus,
searches, answers (answered, abstained, a list), a review sample with a verdict and an
erasure, its signed log, and what that release's replay said of each run. Restored, brought
up to today's migrations and indexed again, the log must be record for record the one that
release signed (its checkpoint proves it), every run must replay as it did then, and the
log must keep growing consistently (docs/audit.md, "Replay"; docs/operations.md, "Backup
and restore").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stichtag.audit.signing import load_public_key
from stichtag.audit.verify import verify_export
from stichtag.bootstrap import Services, bootstrap
from stichtag.config import Settings
from stichtag.services.access import SCOPES, Principal
from stichtag.store.embedded import APP_ROLE, OWNER_ROLE
from stichtag.store.migrate import migrate
from tests.conftest import Cluster
from tests.integration.test_backup_restore import _pg_bin

LEGACY = Path(__file__).resolve().parents[1] / "legacy" / "main-3318937"


@pytest.fixture
def legacy(cluster: Cluster, tmp_path: Path, models_dir: Path,
           embedder: Any) -> Iterator[tuple[dict[str, Any], Services, Principal]]:
    """The legacy dump restored, migrated to today, indexed; its manifest and a node on it."""
    if os.environ.get("STICHTAG_TEST_DATABASE_URL"):
        pytest.skip("restores with the bundled pg_restore, which must match the embedded server")
    manifest = json.loads((LEGACY / "manifest.json").read_text(encoding="utf-8"))
    name = f"legacy_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(OWNER_ROLE)))
    try:
        subprocess.run([_pg_bin("pg_restore"), "--exit-on-error", "--dbname",
                        cluster.database_url(name, role="postgres"), str(LEGACY / "legacy.dump")],
                       check=True)
        migrate(cluster.database_url(name, role="postgres"))
        key = tmp_path / "signing.key"
        shutil.copyfile(LEGACY / "signing.key", key)
        key.chmod(0o600)  # git keeps no modes but x; the key loader refuses a readable key
        node = bootstrap(Settings(data_dir=tmp_path / "data",
                                  database_url=cluster.database_url(name, role=APP_ROLE),
                                  signing_key_path=key, models_path=models_dir, pool_max=2),
                         run_migrations=False, embedder=embedder)
        who = Principal(tenant_id=uuid.UUID(manifest["tenant_id"]), key_id="test",
                        scopes=frozenset(SCOPES), clearance=3)
        try:
            node.indexer.rebuild(who.tenant_id)
            yield manifest, node, who
        finally:
            node.close()
    finally:
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


def test_the_legacy_log_verifies_against_the_checkpoint_that_release_signed(
        legacy: tuple[dict[str, Any], Services, Principal]) -> None:
    manifest, node, who = legacy
    public = load_public_key(manifest["public_key"])
    lines = list(node.runlog.export(who.tenant_id))
    report = verify_export(lines, public, older_checkpoint=manifest["checkpoint"])
    assert report.ok, report.problems
    # the header and every record of that release, nothing rewritten (the last line is a
    # fresh checkpoint)
    assert len(lines) == manifest["log_lines"]


def test_every_legacy_run_reads_back_and_replays_as_it_did_then(
        legacy: tuple[dict[str, Any], Services, Principal]) -> None:
    manifest, node, who = legacy
    assert node.replay is not None
    verdicts = {}
    for run in manifest["runs"]:
        row = node.runs.get(who, run["run_id"])
        assert str(row.run_id) == run["run_id"]
        verdict = node.replay.replay(who, run["run_id"])
        verdicts[run["run_id"]] = (verdict.status, verdict.differences)
    expected = {r["run_id"]: (r["replay"], []) for r in manifest["runs"]}
    assert verdicts == expected
    statuses = {status for status, _ in verdicts.values()}
    assert statuses == {"reproduced", "erased"}  # the erasure is a distinct verdict


def test_the_restored_log_keeps_growing_consistently(
        legacy: tuple[dict[str, Any], Services, Principal]) -> None:
    manifest, node, who = legacy
    now = datetime.now(UTC)
    node.search.search(who, "Gesamtverzinsung", valid_at=now, known_at=now, k=5)
    grown = list(node.runlog.export(who.tenant_id))
    report = verify_export(grown, load_public_key(manifest["public_key"]),
                           older_checkpoint=manifest["checkpoint"])
    assert report.ok, report.problems
    assert report.record_count > len(manifest["runs"])
