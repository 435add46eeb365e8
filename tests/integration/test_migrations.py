"""Migrations: applied to an empty database they give exactly the expected schema; they
are idempotent, safe to run concurrently, and an edited applied file is refused."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from stichtag.store.embedded import OWNER_ROLE
from stichtag.store.migrate import MIGRATIONS_DIR, MigrationError, migrate
from tests.conftest import Cluster, _with_db

EXPECTED = Path(__file__).with_name("expected_schema.txt")

SNAPSHOT_QUERIES = {
    "columns": """SELECT table_name || '.' || column_name || ' ' || data_type
                  || CASE WHEN is_nullable = 'NO' THEN ' not null' ELSE '' END
                  FROM information_schema.columns WHERE table_schema = 'public'
                  ORDER BY table_name, ordinal_position""",
    "indexes": """SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname""",
    "policies": """SELECT tablename || ' ' || policyname || ' ' || cmd || ' ' || coalesce(qual, '')
                   || ' / ' || coalesce(with_check, '') FROM pg_policies
                   WHERE schemaname = 'public' ORDER BY tablename, policyname""",
    "rls": """SELECT relname || ' rls=' || relrowsecurity || ' force=' || relforcerowsecurity
              FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'
              ORDER BY relname""",
    "owners": """SELECT c.relname || ' ' || pg_get_userbyid(c.relowner) FROM pg_class c
                 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'v', 'S')
                 AND c.relname <> 'schema_migrations' ORDER BY 1""",
    "functions": """SELECT p.proname || ' secdef=' || p.prosecdef FROM pg_proc p
                    WHERE p.pronamespace = 'public'::regnamespace AND p.probin IS NULL
                    AND p.prolang = (SELECT oid FROM pg_language WHERE lanname IN ('sql'))
                    OR (p.pronamespace = 'public'::regnamespace
                        AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql'))
                    ORDER BY 1""",
    "triggers": """SELECT tgrelid::regclass || ' ' || tgname FROM pg_trigger
                   WHERE NOT tgisinternal ORDER BY 1""",
}


@pytest.fixture
def empty_db(cluster: Cluster) -> Iterator[str]:
    name = f"empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(OWNER_ROLE)))
    yield _with_db(cluster.admin_url, database=name)
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def snapshot(url: str) -> str:
    lines: list[str] = []
    with psycopg.connect(url) as conn:
        for section, q in SNAPSHOT_QUERIES.items():
            lines.append(f"## {section}")
            lines.extend(str(row[0]) for row in conn.execute(q))  # type: ignore[call-overload]
    return "\n".join(lines) + "\n"


def test_schema_from_empty_database_matches_expected(empty_db: str) -> None:
    applied = migrate(empty_db)
    assert applied == sorted(p.name for p in MIGRATIONS_DIR.glob("*.sql"))
    got = snapshot(empty_db)
    if os.environ.get("STICHTAG_UPDATE_SCHEMA"):
        EXPECTED.write_text(got, encoding="utf-8")
    assert got == EXPECTED.read_text(encoding="utf-8"), (
        "schema drift: review, then regenerate with STICHTAG_UPDATE_SCHEMA=1")
    assert migrate(empty_db) == []  # idempotent


def test_concurrent_runners_apply_once(empty_db: str) -> None:
    results: list[list[str]] = []
    threads = [threading.Thread(target=lambda: results.append(migrate(empty_db))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(len(r) for r in results) == [0, 0, len(list(MIGRATIONS_DIR.glob("*.sql")))]


def test_edited_migration_is_refused(empty_db: str, tmp_path: Path) -> None:
    copy = tmp_path / "migrations"
    copy.mkdir()
    for path in MIGRATIONS_DIR.glob("*.sql"):
        (copy / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    migrate(empty_db, directory=copy)
    first = sorted(copy.glob("*.sql"))[0]
    first.write_text(first.read_text(encoding="utf-8") + "\n-- edited\n", encoding="utf-8")
    with pytest.raises(MigrationError, match="changed after it was applied"):
        migrate(empty_db, directory=copy)


def test_a_gap_is_applied_but_never_a_number_below_one_applied(empty_db: str,
                                                               tmp_path: Path) -> None:
    """Branches reserve numbers (0009 exists while 0008 is another branch's): the gap is
    fine; a 0008 that arrives after 0009 was applied is refused, not slipped behind it."""
    copy = tmp_path / "migrations"
    copy.mkdir()
    (copy / "0001_a.sql").write_text("CREATE TABLE gap_a (x int);\n", encoding="utf-8")
    (copy / "0003_c.sql").write_text("CREATE TABLE gap_c (x int);\n", encoding="utf-8")
    assert migrate(empty_db, directory=copy) == ["0001_a.sql", "0003_c.sql"]
    (copy / "0002_b.sql").write_text("CREATE TABLE gap_b (x int);\n", encoding="utf-8")
    with pytest.raises(MigrationError, match=r"0002_b\.sql: numbered below 0003"):
        migrate(empty_db, directory=copy)
    (copy / "0002_b.sql").unlink()
    (copy / "0003_again.sql").write_text("SELECT 1;\n", encoding="utf-8")
    with pytest.raises(MigrationError, match="unique"):
        migrate(empty_db, directory=copy)
