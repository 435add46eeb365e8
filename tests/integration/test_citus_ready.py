"""The migrated schema is ready to be distributed by tenant_id (docs/operations.md, "Scale-out
path";
docs/operations.md, "Scale-out path"), read from pg_catalog as the superuser.

Citus enforces a primary key, unique constraint or foreign key of a distributed table
only when it contains the distribution column, and a foreign key between distributed
tables only when it maps that column to itself. Citus is not obtainable here, so this is
checked on the catalog of the real migrated schema, not on a Citus cluster: each guard is
a query listing offenders, and a self-test plants one offender per guard and checks that
each query names it, so a blind guard cannot pass for a clean schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.conftest import Cluster, admin_url_for

SYSTEM = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%'"
REFERENCE = ["tenants", "api_keys"]
"""Citus reference tables (replicated to every node): a tenant's name and a key id are
looked up before the tenant is known. Every other table is distributed by tenant_id."""
LOCAL = ["schema_migrations"]
"""Bookkeeping of the migration runner, on the coordinator only."""

_TENANT_ID = """JOIN pg_attribute t ON t.attrelid = c.oid AND t.attname = 'tenant_id'
                AND NOT t.attisdropped"""

GUARDS: dict[str, str] = {
    "table neither distributed by tenant_id nor declared": f"""
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND {SYSTEM} AND c.relname <> ALL(%(local)s)
          AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                          AND a.attname = 'tenant_id' AND NOT a.attisdropped)""",
    # Primary keys and unique constraints are unique indexes; so are bare unique indexes.
    "unique key without tenant_id": f"""
        SELECT i.indexrelid::regclass::text FROM pg_index i
        JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        {_TENANT_ID}
        WHERE i.indisunique AND {SYSTEM} AND c.relname <> ALL(%(reference)s)
          AND NOT t.attnum = ANY(i.indkey::int2[])""",
    "foreign key that does not map tenant_id to tenant_id": f"""
        SELECT co.conname FROM pg_constraint co
        JOIN pg_class c ON c.oid = co.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE co.contype = 'f' AND {SYSTEM} AND NOT EXISTS (
            SELECT 1 FROM unnest(co.conkey, co.confkey) AS k(src, dst)
            JOIN pg_attribute sa ON sa.attrelid = co.conrelid AND sa.attnum = k.src
            JOIN pg_attribute da ON da.attrelid = co.confrelid AND da.attnum = k.dst
            WHERE sa.attname = 'tenant_id' AND da.attname = 'tenant_id')""",
    # Citus refuses a foreign key from a reference table to a distributed one.
    "reference table referencing a distributed table": f"""
        SELECT co.conname FROM pg_constraint co
        JOIN pg_class c ON c.oid = co.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_class f ON f.oid = co.confrelid
        WHERE co.contype = 'f' AND {SYSTEM} AND c.relname = ANY(%(reference)s)
          AND f.relname <> ALL(%(reference)s)""",
    # A database-wide sequence hands out numbers across tenants: any tenant that sees its
    # values can count the others' rows (docs/operations.md, "Scale-out path"), and a distributed
    # engine
    # makes its order differ from a tenant's commit order.
    "sequence": f"""
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind = 'S' AND {SYSTEM}""",
    "column drawn from a sequence": f"""
        SELECT c.relname || '.' || a.attname FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE c.relkind IN ('r', 'p') AND {SYSTEM} AND a.attnum > 0 AND NOT a.attisdropped
          AND (a.attidentity <> '' OR pg_get_expr(d.adbin, d.adrelid) LIKE '%%nextval(%%')""",
}


def offences(conn: psycopg.Connection[Any]) -> dict[str, list[str]]:
    """Every guard with the offenders it finds (empty lists when the schema is ready)."""
    params = {"reference": REFERENCE, "local": LOCAL}
    return {name: sorted(str(r[0]) for r in conn.execute(q, params).fetchall())
            for name, q in GUARDS.items()}


@pytest.fixture
def admin(cluster: Cluster, database: str) -> Iterator[psycopg.Connection[Any]]:
    """A superuser connection to a fresh copy of the migrated database."""
    with psycopg.connect(admin_url_for(cluster, database), autocommit=True) as conn:
        yield conn


def test_the_migrated_schema_is_ready_to_distribute_by_tenant_id(
        admin: psycopg.Connection[Any]) -> None:
    assert offences(admin) == {name: [] for name in GUARDS}
    # Not vacuous: the guards look at the real keys, composite ones included.
    keys = {r[0] for r in admin.execute(
        "SELECT conname FROM pg_constraint WHERE contype IN ('p', 'f')").fetchall()}
    assert {"assertions_pkey", "outbox_pkey", "runs_pkey", "assertions_document_fkey",
            "outbox_assertion_fkey", "review_verdicts_run_fkey"} <= keys
    columns = admin.execute(
        "SELECT array_agg(a.attname ORDER BY k.ord) FROM pg_constraint co"
        " CROSS JOIN LATERAL unnest(co.conkey) WITH ORDINALITY AS k(attnum, ord)"
        " JOIN pg_attribute a ON a.attrelid = co.conrelid AND a.attnum = k.attnum"
        " WHERE co.conname = 'outbox_pkey' GROUP BY co.oid").fetchone()
    assert columns == (["tenant_id", "seq"],)


def test_every_guard_names_a_planted_violation(admin: psycopg.Connection[Any]) -> None:
    """One violation per guard, planted in this throwaway copy of the database."""
    planted = [
        "CREATE TABLE rogue_global (id int)",
        "CREATE TABLE rogue_keyed (tenant_id uuid NOT NULL,"
        " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY)",
        "CREATE UNIQUE INDEX rogue_unique ON documents (key)",
        "CREATE TABLE rogue_fk (tenant_id uuid NOT NULL, other uuid REFERENCES tenants)",
        "ALTER TABLE api_keys ADD COLUMN rogue_doc bigint, ADD CONSTRAINT rogue_ref_fk"
        " FOREIGN KEY (tenant_id, rogue_doc) REFERENCES documents (tenant_id, document_id)",
    ]
    for statement in planted:
        admin.execute(statement)
    found = offences(admin)
    expected = {
        "table neither distributed by tenant_id nor declared": "rogue_global",
        "unique key without tenant_id": "rogue_unique",
        "foreign key that does not map tenant_id to tenant_id": "rogue_fk_other_fkey",
        "reference table referencing a distributed table": "rogue_ref_fk",
        "sequence": "rogue_keyed_id_seq",
        "column drawn from a sequence": "rogue_keyed.id",
    }
    assert set(expected) == set(GUARDS)
    missing = {name: want for name, want in expected.items() if want not in found[name]}
    assert not missing, f"guards blind to planted violations: {missing}\nfound: {found}"
    assert "rogue_keyed_pkey" in found["unique key without tenant_id"]
