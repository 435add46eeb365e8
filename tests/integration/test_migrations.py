"""Migrations: applied to an empty database they give exactly the expected schema; they
are idempotent, safe to run concurrently, and an edited applied file is refused."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def _migrate_before(url: str, tmp_path: Path, number: int) -> None:
    """Apply the migrations numbered below ``number`` only (a database from before it)."""
    before = tmp_path / "before"
    before.mkdir()
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        if int(path.name[:4]) < number:
            (before / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    migrate(url, directory=before)


def test_0012_computes_the_block_starts_of_versions_stored_before_it(empty_db: str,
                                                                     tmp_path: Path) -> None:
    """Versions stored before 0012 get the starts that a write computes since (the
    insert's own rule, ``stichtag.store.versions.block_starts``), and the application
    role still cannot change them."""
    from stichtag.domain.prepared import prepare
    from stichtag.domain.text import normalize
    from stichtag.store.versions import block_starts

    _migrate_before(empty_db, tmp_path, 12)
    version = prepare(normalize("# § 1 Zins\n\n(1) Der Zins beträgt 1,75 %. Er gilt ab "
                                "2015.\n\n(2) \U0001d538nderungen gelten später.\n\n"
                                "## § 2 Rückstellung\n\nSie wird gebildet.\n"),
                      "text/markdown")
    tenant = uuid.uuid4()
    with psycopg.connect(empty_db, autocommit=True) as conn:  # the cluster's superuser
        conn.execute("INSERT INTO tenants (tenant_id, name, time_zone) VALUES (%s, 'm', 'UTC')",
                     (tenant,))
        conn.execute("INSERT INTO heading_paths (tenant_id, path_id, hash, path) "
                     "VALUES (%s, 1, '\\x00', '{}')", (tenant,))
        for i, b in enumerate(version.blocks, start=1):
            conn.execute(
                "INSERT INTO blocks (tenant_id, block_id, hash, text, kind, level, len_cp, "
                "len_u16, sent_starts, sent_ends, sent_u16_starts, sent_u16_ends, sent_hashes) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (tenant, i, b.hash, b.text, b.kind, b.level, b.len_cp, b.len_u16,
                 list(b.sent_starts), list(b.sent_ends), list(b.sent_u16_starts),
                 list(b.sent_u16_ends), b.sent_hashes))
        n = len(version.blocks)
        conn.execute(
            "INSERT INTO versions (tenant_id, version_id, media_type, segmenter_id, block_ids, "
            "path_ids, len_cp, len_u16, n_sentences, passage_ids, passage_starts, passage_ends, "
            "passage_u16_starts, passage_u16_ends, passage_path_ids) VALUES (%s, %s, "
            "'text/markdown', 's', %s, %s, %s, %s, %s, '{}', '{}', '{}', '{}', '{}', '{}')",
            (tenant, version.version_id, list(range(1, n + 1)), [1] * n, version.len_cp,
             version.len_u16, version.n_sentences))
    assert n >= 4
    assert migrate(empty_db) == [p.name for p in sorted(MIGRATIONS_DIR.glob("*.sql"))
                                 if int(p.name[:4]) >= 12]
    with psycopg.connect(empty_db, autocommit=True) as conn:
        stored = conn.execute("SELECT block_starts, block_u16_starts, block_sentence_starts "
                              "FROM versions WHERE version_id = %s",
                              (version.version_id,)).fetchone()
        forced = conn.execute("SELECT relforcerowsecurity FROM pg_class "
                              "WHERE relname IN ('versions', 'blocks')").fetchall()
    assert stored == tuple(block_starts(version))
    assert stored[0][-1] > 0 and stored[1][-1] > stored[0][-1]  # the astral 𝔸 counts twice
    assert forced == [(True,), (True,)]  # row-level security is forced again


def test_0015_derives_the_placements_of_versions_stored_before_it(empty_db: str,
                                                                  tmp_path: Path) -> None:
    """Versions stored before 0015 get their per-tenant numbers (1, 2, … in the order they
    were stored) and one version_passages row per array element, ordinals included; a
    version stored afterwards gets the next number and its rows from the trigger, and the
    table refuses every change."""
    _migrate_before(empty_db, tmp_path, 15)
    tenants = [uuid.uuid4(), uuid.uuid4()]
    arrays = {tenants[0]: [[5, 6, 5], [6, 7]], tenants[1]: [[1], []]}

    def insert_version(conn: psycopg.Connection[Any], tenant: uuid.UUID, vid: str,
                       pids: list[int]) -> None:
        n = len(pids)
        conn.execute(
            "INSERT INTO versions (tenant_id, version_id, media_type, segmenter_id, block_ids,"
            " path_ids, len_cp, len_u16, n_sentences, passage_ids, passage_starts,"
            " passage_ends, passage_u16_starts, passage_u16_ends, passage_path_ids,"
            " block_starts, block_u16_starts, block_sentence_starts"
            + (", version_no" if vid.endswith("f") else "") +
            ") VALUES (%s, %s, 'text/plain', 's', '{}', '{}', 0, 0, 0, %s, %s, %s, %s, %s, %s,"
            " '{}', '{}', '{}'" + (", 3" if vid.endswith("f") else "") + ")",
            (tenant, vid, pids, [0] * n, [1] * n, [0] * n, [1] * n, [1] * n))

    with psycopg.connect(empty_db, autocommit=True) as conn:  # the cluster's superuser
        for t in tenants:
            conn.execute("INSERT INTO tenants (tenant_id, name, time_zone) VALUES (%s, %s, 'UTC')",
                         (t, f"m-{t.hex[:6]}"))
            for i, pids in enumerate(arrays[t]):
                insert_version(conn, t, f"b3:{t.hex[:8]}{i:056d}", pids)
    assert migrate(empty_db) == [p.name for p in sorted(MIGRATIONS_DIR.glob("*.sql"))
                                 if int(p.name[:4]) >= 15]
    with psycopg.connect(empty_db, autocommit=True) as conn:
        insert_version(conn, tenants[0], "b3:" + "f" * 64, [7, 8])  # after: the trigger
        for t in tenants:
            rows = conn.execute(
                "SELECT v.version_no, vp.passage_id, vp.ordinal FROM version_passages vp"
                " JOIN versions v USING (tenant_id, version_no) WHERE vp.tenant_id = %s"
                " ORDER BY 1, 3", (t,)).fetchall()
            want = [(no, pid, o) for no, pids in enumerate(arrays[t], start=1)
                    for o, pid in enumerate(pids)]
            if t == tenants[0]:
                want += [(3, 7, 0), (3, 8, 1)]
            assert rows == want
            counts = conn.execute("SELECT n_passages FROM versions WHERE tenant_id = %s"
                                  " ORDER BY version_no", (t,)).fetchall()
            assert [c for (c,) in counts] == [len(p) for p in arrays[t]] + (
                [2] if t == tenants[0] else [])
        forced = conn.execute("SELECT relforcerowsecurity FROM pg_class "
                              "WHERE relname IN ('versions', 'version_passages')").fetchall()
        assert forced == [(True,), (True,)]
        for statement in ("UPDATE version_passages SET ordinal = 9",
                          "DELETE FROM version_passages", "TRUNCATE version_passages"):
            with pytest.raises(psycopg.errors.IntegrityConstraintViolation):
                conn.execute(statement)
