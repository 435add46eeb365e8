"""Catalog guard for tenant isolation (docs/architecture.md §9), read from pg_catalog as the
superuser on a migrated database, plus the behaviour it promises, observed as the
application role.

The guard is a set of queries that each list offenders; a self-test plants one offender
of every kind in a scratch database and checks each query names it, so a guard that
silently matches nothing cannot pass for a clean catalog.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stichtag.bootstrap import Services
from stichtag.domain.records import KeyRate
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from stichtag.store.embedded import APP_ROLE
from tests.conftest import Cluster, admin_url_for, make_tenant
from tests.originals import simple_pdf

SYSTEM = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%'"

TENANT_TABLES = f"""
SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND {SYSTEM} AND EXISTS (
    SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id'
      AND NOT a.attisdropped)
ORDER BY 1"""

# name -> query listing offenders; %(role)s is the application role.
GUARDS: dict[str, str] = {
    "tenant table without ENABLE + FORCE row level security": f"""
        SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND {SYSTEM}
          AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                      AND a.attname = 'tenant_id' AND NOT a.attisdropped)
          AND NOT (c.relrowsecurity AND c.relforcerowsecurity)""",
    "tenant table without a policy": f"""
        SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND {SYSTEM}
          AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                      AND a.attname = 'tenant_id' AND NOT a.attisdropped)
          AND NOT EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid)""",
    # A policy such as USING (true) would make RLS decorative: every expression of every
    # policy on a tenant table must consult the transaction's tenant.
    "policy expression not bound to app_tenant()": f"""
        SELECT c.oid::regclass::text || '.' || p.polname FROM pg_policy p
        JOIN pg_class c ON c.oid = p.polrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE {SYSTEM} AND (
            (p.polqual IS NOT NULL
             AND pg_get_expr(p.polqual, p.polrelid) NOT LIKE '%%app_tenant()%%')
            OR (p.polwithcheck IS NOT NULL
                AND pg_get_expr(p.polwithcheck, p.polrelid) NOT LIKE '%%app_tenant()%%'))""",
    "role attribute": """
        SELECT a FROM pg_roles r, LATERAL (VALUES
            ('SUPERUSER', r.rolsuper), ('BYPASSRLS', r.rolbypassrls),
            ('CREATEROLE', r.rolcreaterole), ('CREATEDB', r.rolcreatedb),
            ('REPLICATION', r.rolreplication)) AS v(a, granted)
        WHERE r.rolname = %(role)s AND granted""",
    # Membership would lend the owner's or another role's powers (SET ROLE).
    "role membership": """
        SELECT g.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
        JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = %(role)s""",
    "owned relation": """
        SELECT c.oid::regclass::text FROM pg_class c
        WHERE c.relowner = (SELECT oid FROM pg_roles WHERE rolname = %(role)s)""",
    "owned function": """
        SELECT p.oid::regprocedure::text FROM pg_proc p
        WHERE p.proowner = (SELECT oid FROM pg_roles WHERE rolname = %(role)s)""",
    "owned type": """
        SELECT t.oid::regtype::text FROM pg_type t
        WHERE t.typowner = (SELECT oid FROM pg_roles WHERE rolname = %(role)s)""",
    "owned schema": """
        SELECT n.nspname FROM pg_namespace n
        WHERE n.nspowner = (SELECT oid FROM pg_roles WHERE rolname = %(role)s)""",
    "owned database": """
        SELECT d.datname FROM pg_database d
        WHERE d.datdba = (SELECT oid FROM pg_roles WHERE rolname = %(role)s)""",
    # Whatever the role could create, it would own.
    "CREATE privilege": f"""
        SELECT 'schema ' || n.nspname FROM pg_namespace n
        WHERE {SYSTEM} AND has_schema_privilege(%(role)s, n.oid, 'CREATE')
        UNION ALL
        SELECT 'database ' || current_database()
        WHERE has_database_privilege(%(role)s, current_database(), 'CREATE')""",
    "view without security_invoker=true": f"""
        SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind = 'v' AND {SYSTEM} AND NOT EXISTS (
            SELECT 1 FROM unnest(coalesce(c.reloptions, '{{}}')) AS o
            WHERE lower(o) IN ('security_invoker=true', 'security_invoker=on',
                               'security_invoker=1', 'security_invoker=yes'))""",
    # Materialized views have no row level security at all.
    "materialized view readable by the role": f"""
        SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind = 'm' AND {SYSTEM} AND has_table_privilege(%(role)s, c.oid, 'SELECT')""",
    "SECURITY DEFINER function executable by the role": f"""
        SELECT p.oid::regprocedure::text FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE p.prosecdef AND {SYSTEM} AND has_function_privilege(%(role)s, p.oid, 'EXECUTE')""",
    # The application reads and appends; history is never deleted, rows never change tenant.
    "DELETE or TRUNCATE privilege": f"""
        SELECT c.oid::regclass::text || ' ' || priv FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace, unnest(ARRAY['DELETE', 'TRUNCATE']) AS priv
        WHERE c.relkind IN ('r', 'p') AND {SYSTEM}
          AND has_table_privilege(%(role)s, c.oid, priv)""",
    "UPDATE privilege on tenant_id": f"""
        SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
        WHERE c.relkind IN ('r', 'p') AND {SYSTEM}
          AND has_column_privilege(%(role)s, c.oid, a.attnum, 'UPDATE')""",
}


def offences(conn: psycopg.Connection[Any], role: str) -> dict[str, list[str]]:
    """Every guard with the offenders it finds for ``role`` (empty lists when clean)."""
    return {name: sorted(str(r[0]) for r in conn.execute(query, {"role": role}).fetchall())
            for name, query in GUARDS.items()}


def tenant_tables(conn: psycopg.Connection[Any]) -> list[str]:
    """Every table with a tenant_id column."""
    return [r[0] for r in conn.execute(TENANT_TABLES).fetchall()]


@pytest.fixture
def admin(cluster: Cluster, database: str) -> Iterator[psycopg.Connection[Any]]:
    """A superuser connection to the test database."""
    with psycopg.connect(admin_url_for(cluster, database), autocommit=True) as conn:
        yield conn


def test_catalog_has_no_offences_for_the_application_role(admin: psycopg.Connection[Any]) -> None:
    tables = tenant_tables(admin)
    # The guard must be looking at the real schema, not at nothing.
    assert {"tenants", "api_keys", "documents", "versions", "assertions", "outbox"} <= set(tables)
    allowed = {name: [] for name in GUARDS}
    # The two SECURITY DEFINER functions the role may call, on purpose
    # (migrations/0011_erasure.sql, 0017_run_texts.sql): they blank a version, or delete
    # the quotes runs took from it, only when it has an erasure row, of the tenant
    # app_tenant() names, and row-level security is forced on their owner too;
    # tests/integration/test_erasure.py and test_erasure_run_log.py show they refuse
    # anything else.
    allowed["SECURITY DEFINER function executable by the role"] = [
        "erase_run_texts(text)", "erase_version(text)"]
    assert offences(admin, APP_ROLE) == allowed


def test_every_guard_names_a_planted_offender(admin: psycopg.Connection[Any]) -> None:
    """Plant one offender per guard (in this throwaway database and a throwaway role)."""
    rogue = f"rogue_{uuid.uuid4().hex[:8]}"
    ident = sql.Identifier(rogue)
    admin.execute(sql.SQL("CREATE ROLE {} NOLOGIN BYPASSRLS CREATEDB").format(ident))
    try:
        admin.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(APP_ROLE), ident))
        admin.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(ident))
        planted = [
            "CREATE TABLE rogue_no_rls (tenant_id uuid)",
            "CREATE TABLE rogue_no_policy (tenant_id uuid)",
            "ALTER TABLE rogue_no_policy ENABLE ROW LEVEL SECURITY",
            "ALTER TABLE rogue_no_policy FORCE ROW LEVEL SECURITY",
            "CREATE TABLE rogue_open (tenant_id uuid)",
            "ALTER TABLE rogue_open ENABLE ROW LEVEL SECURITY",
            "ALTER TABLE rogue_open FORCE ROW LEVEL SECURITY",
            "CREATE POLICY everything ON rogue_open USING (true)",
            "CREATE VIEW rogue_view AS SELECT key FROM documents",
            "CREATE MATERIALIZED VIEW rogue_matview AS SELECT key FROM documents",
            "CREATE FUNCTION rogue_definer() RETURNS int LANGUAGE sql SECURITY DEFINER"
            " AS 'SELECT 1'",
            "CREATE SCHEMA rogue_schema",
            "CREATE TYPE rogue_type AS (a int)",
        ]
        for statement in planted:
            admin.execute(statement)
        for obj in ("TABLE rogue_no_rls", "FUNCTION rogue_definer()", "SCHEMA rogue_schema",
                    "TYPE rogue_type"):
            admin.execute(sql.SQL("ALTER {} OWNER TO {}").format(sql.SQL(obj), ident))
        admin.execute(sql.SQL("GRANT SELECT ON rogue_matview TO {}").format(ident))
        admin.execute(sql.SQL("GRANT DELETE, UPDATE ON rogue_no_policy TO {}").format(ident))
        found = offences(admin, rogue)
        expected = {
            "tenant table without ENABLE + FORCE row level security": "rogue_no_rls",
            "tenant table without a policy": "rogue_no_policy",
            "policy expression not bound to app_tenant()": "rogue_open.everything",
            "role attribute": "BYPASSRLS",
            "role membership": APP_ROLE,
            "owned relation": "rogue_no_rls",
            "owned function": "rogue_definer()",
            "owned type": "rogue_type",
            "owned schema": "rogue_schema",
            "CREATE privilege": "schema public",
            "view without security_invoker=true": "rogue_view",
            "materialized view readable by the role": "rogue_matview",
            "SECURITY DEFINER function executable by the role": "rogue_definer()",
            "DELETE or TRUNCATE privilege": "rogue_no_policy DELETE",
            "UPDATE privilege on tenant_id": "rogue_no_policy",
        }
        missing = {name: want for name, want in expected.items() if want not in found[name]}
        assert not missing, f"guards blind to planted offenders: {missing}\nfound: {found}"
        assert "CREATEDB" in found["role attribute"]
        # Every guard is exercised except the database owner (a database cannot be planted
        # without leaving the test's own database); check that one on a real owner instead.
        assert set(expected) | {"owned database"} == set(GUARDS)
        owner_dbs = admin.execute(GUARDS["owned database"], {"role": "stichtag_owner"}).fetchall()
        assert (admin.info.dbname,) in owner_dbs
        # A view that declares security_invoker passes.
        admin.execute("ALTER VIEW rogue_view SET (security_invoker = on)")
        assert "rogue_view" not in offences(admin, rogue)["view without security_invoker=true"]
    finally:
        admin.execute(sql.SQL("DROP OWNED BY {} CASCADE").format(ident))
        for obj in ("rogue_no_rls", "rogue_no_policy", "rogue_open"):
            admin.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(obj)))
        admin.execute("DROP MATERIALIZED VIEW IF EXISTS rogue_matview")
        admin.execute("DROP VIEW IF EXISTS rogue_view")
        admin.execute(sql.SQL("DROP ROLE {}").format(ident))


# -- behaviour as the application role ---------------------------------------------------


def _seed(services: Services, who: Principal, tag: str) -> None:
    """Documents with several versions, a retraction and a key, through the services."""
    docs = services.documents
    for n, year in enumerate((2020, 2022, 2024)):
        docs.ingest(who, f"{tag}-law", IngestRequest(
            text=f"# § 1 {tag}\n\n(1) Fassung {n} des Gesetzes von {tag}.\n",
            valid_from=datetime(year, 1, 1, tzinfo=UTC), confidentiality="public"))
    docs.ingest(who, f"{tag}-note", IngestRequest(
        text=f"Vermerk von {tag}. Zweiter Satz.", media_type="text/plain",
        valid_from=datetime(2021, 1, 1, tzinfo=UTC), confidentiality="secret"))
    docs.retract(who, f"{tag}-note", valid_from=datetime(2023, 1, 1, tzinfo=UTC), reason="probe")
    # An erased version (erasures, and the erasure's leaf in runs).
    erased = docs.ingest(who, f"{tag}-erased", IngestRequest(
        text=f"Zu löschen: {tag}.", media_type="text/plain",
        valid_from=datetime(2021, 1, 1, tzinfo=UTC), confidentiality="internal"))
    services.erasures.erase(who, erased.version_id, reason="catalog probe")
    # A PDF: its original and the version's source rows (originals, version_sources).
    docs.ingest(who, f"{tag}-pdf", IngestRequest(
        text=simple_pdf([f"Originaldokument von {tag}."]), media_type="application/pdf",
        valid_from=datetime(2022, 1, 1, tzinfo=UTC), confidentiality="internal"))
    _, token = services.access.create_key(who.tenant_id, scopes=["read"], clearance=1)
    services.access.admit(token, KeyRate(interval=0.1, burst=5))  # its rate row (key_rates)
    services.thresholds.set(who, theta_rel=0.5, tau=1.0, calibration=None,
                            rationale=f"catalog probe thresholds for {tag}")
    now = datetime.now(UTC)
    services.search.search(who, "Fassung Gesetz", valid_at=now, known_at=now)  # a logged run


def _seed_unfilled(admin: psycopg.Connection[Any], tenant_id: uuid.UUID) -> None:
    """Rows for tables the document services do not fill (yet), written as the superuser."""
    have = set(tenant_tables(admin))
    if "passages" in have:
        admin.execute("INSERT INTO passages (tenant_id, passage_id, hash, text)"
                      " SELECT %(t)s, coalesce(max(passage_id), 0) + 1, %(h)s, 'p' FROM passages"
                      " WHERE tenant_id = %(t)s", {"t": tenant_id, "h": uuid.uuid4().bytes})
    if "runs" in have:
        admin.execute("INSERT INTO runs (run_id, tenant_id, kind, key_id, record)"
                      " VALUES (%s, %s, 'search', 'k', '{}')", (uuid.uuid4(), tenant_id))
    if "run_texts" in have:  # a sealed text of one of the tenant's runs
        run = admin.execute("SELECT run_id FROM runs WHERE tenant_id = %s LIMIT 1",
                            (tenant_id,)).fetchone()[0]
        admin.execute("INSERT INTO run_texts (tenant_id, run_id, commitment, salt, text,"
                      " version_ids) VALUES (%s, %s, %s, %s, 't', '{}')",
                      (tenant_id, run, uuid.uuid4().bytes * 2, uuid.uuid4().bytes * 2))
    if "review_samples" in have:
        sample, verdict = uuid.uuid4(), uuid.uuid4()
        run = admin.execute("SELECT run_id FROM runs WHERE tenant_id = %s LIMIT 1",
                            (tenant_id,)).fetchone()[0]
        admin.execute("INSERT INTO runs (run_id, tenant_id, kind, key_id, record)"
                      " VALUES (%s, %s, 'review_verdict', 'k', '{}')", (verdict, tenant_id))
        admin.execute("INSERT INTO review_samples (sample_id, tenant_id, created_by, seed, strata,"
                      " n_per_stratum, filters, clearance, population)"
                      " VALUES (%s, %s, 'k', 1, '{}', 1, '{}', 0, '{}')", (sample, tenant_id))
        admin.execute("INSERT INTO review_items (tenant_id, sample_id, item, stratum, run_id,"
                      " sentence, citation, document, version_id, start_cp, end_cp, generator,"
                      " trace) VALUES (%s, %s, 1, 'all', %s, 0, 0, 'd', 'v', 0, 1, 'g', '{}')",
                      (tenant_id, sample, run))
        admin.execute("INSERT INTO review_verdicts (verdict_id, tenant_id, sample_id, item,"
                      " verdict, reviewer) VALUES (%s, %s, %s, 1, 'full', 'k')",
                      (verdict, tenant_id, sample))


def test_application_role_sees_nothing_without_a_tenant(
        services: Services, database: str, admin: psycopg.Connection[Any]) -> None:
    a = make_tenant(services, "alpha")
    b = make_tenant(services, "bravo")
    _seed(services, a, "alpha")
    _seed(services, b, "bravo")
    for t in (a, b):
        _seed_unfilled(admin, t.tenant_id)
    tables = tenant_tables(admin)
    per_tenant = {
        table: dict(admin.execute(sql.SQL("SELECT tenant_id, count(*) FROM {} GROUP BY 1").format(
            sql.Identifier(table))).fetchall())
        for table in tables}
    # Non-vacuous: both tenants have rows in every tenant table (a new table needs seed rows).
    unseeded = [t for t, counts in per_tenant.items()
                if not (counts.get(a.tenant_id) and counts.get(b.tenant_id))]
    assert not unseeded, f"seed rows for both tenants in: {unseeded}"

    with psycopg.connect(database, autocommit=True) as app:
        assert app.info.parameter_status("is_superuser") == "off"
        for table in tables:
            count = app.execute(sql.SQL("SELECT count(*) FROM {}").format(
                sql.Identifier(table))).fetchone()
            assert count == (0,), f"{table}: rows visible without app.tenant_id"
        # With the tenant set, exactly that tenant's rows appear, in every table.
        with app.transaction():
            app.execute("SELECT set_config('app.tenant_id', %s, true)", (str(a.tenant_id),))
            for table in tables:
                seen = dict(app.execute(sql.SQL("SELECT tenant_id, count(*) FROM {} GROUP BY 1")
                                        .format(sql.Identifier(table))).fetchall())
                assert seen == {a.tenant_id: per_tenant[table][a.tenant_id]}, table
        # The key-lookup setting admits exactly the one key row, its tenant's row (the
        # request's time zone comes with the key) and its rate row, and nothing else.
        key_id = admin.execute("SELECT key_id FROM key_rates WHERE tenant_id = %s LIMIT 1",
                               (a.tenant_id,)).fetchone()[0]
        with app.transaction():
            app.execute("SELECT set_config('app.key_lookup', %s, true)", (key_id,))
            for table in tables:
                rows = app.execute(sql.SQL("SELECT count(*) FROM {}").format(
                    sql.Identifier(table))).fetchone()
                assert rows == ((1,) if table in ("api_keys", "tenants", "key_rates")
                                else (0,)), table
            assert app.execute("SELECT tenant_id FROM tenants").fetchall() == [(a.tenant_id,)]
        # Nothing leaks into the session after the transactions ended.
        assert app.execute("SELECT count(*) FROM documents").fetchone() == (0,)


def _count(admin: psycopg.Connection[Any], table: str) -> Any:
    return admin.execute(sql.SQL("SELECT count(*) FROM {}").format(
        sql.Identifier(table))).fetchone()


def _rejected(app: psycopg.Connection[Any], statement: str, params: dict[str, Any],
              tenant: uuid.UUID | None) -> None:
    with (pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"),
          app.transaction()):
        if tenant is not None:
            app.execute("SELECT set_config('app.tenant_id', %s, true)", (str(tenant),))
        app.execute(statement, params)


def test_foreign_tenant_rows_cannot_be_written(services: Services, database: str,
                                               admin: psycopg.Connection[Any]) -> None:
    a = make_tenant(services, "alpha")
    b = make_tenant(services, "bravo")
    _seed(services, a, "alpha")
    _seed(services, b, "bravo")
    before = {t: _count(admin, t) for t in tenant_tables(admin)}
    doc_b = admin.execute("SELECT document_id FROM documents WHERE tenant_id = %s LIMIT 1",
                          (b.tenant_id,)).fetchone()[0]
    version_b = admin.execute("SELECT version_id FROM versions WHERE tenant_id = %s LIMIT 1",
                              (b.tenant_id,)).fetchone()[0]
    inserts = {
        "documents": ("INSERT INTO documents (tenant_id, key) VALUES (%(b)s, 'smuggled')", {}),
        "api_keys": ("INSERT INTO api_keys (key_id, tenant_id, secret_hash, scopes, clearance)"
                     " VALUES ('smuggledsmuggled', %(b)s, '\\x00', '{admin}', 3)", {}),
        "tenants": ("INSERT INTO tenants (tenant_id, name) VALUES (%(new)s, 'smuggled')",
                    {"new": uuid.uuid4()}),
        "assertions": (
            "INSERT INTO assertions (tenant_id, document_id, version_id, valid, tx, doc_class,"
            " confidentiality, provenance) VALUES (%(b)s, %(doc)s, %(ver)s,"
            " tstzrange('2020-01-01', NULL), tstzrange(now(), NULL), 'document', 0, '{}')",
            {"doc": doc_b, "ver": version_b}),
        "outbox": ("INSERT INTO outbox (tenant_id, kind, assertion_id) SELECT %(b)s, 'open',"
                   " min(assertion_id) FROM assertions", {}),
    }
    with psycopg.connect(database, autocommit=True) as app:
        for statement, extra in inserts.values():
            params = {"b": b.tenant_id, **extra}
            _rejected(app, statement, params, a.tenant_id)  # as tenant A, a row of B
            _rejected(app, statement, params, None)  # no tenant at all
        # Updates cannot reach another tenant's rows: they are invisible, so nothing matches.
        with app.transaction():
            app.execute("SELECT set_config('app.tenant_id', %s, true)", (str(a.tenant_id),))
            cur = app.execute("UPDATE api_keys SET revoked_at = now() WHERE tenant_id = %s",
                              (b.tenant_id,))
            assert cur.rowcount == 0
            cur = app.execute("UPDATE assertions SET tx = tstzrange(lower(tx), now())"
                              " WHERE tenant_id = %s AND upper_inf(tx)", (b.tenant_id,))
            assert cur.rowcount == 0
    after = {t: _count(admin, t) for t in before}
    assert after == before
    assert admin.execute(
        "SELECT count(*) FROM api_keys WHERE tenant_id = %s AND revoked_at IS NOT NULL",
        (b.tenant_id,)).fetchone() == (0,)
