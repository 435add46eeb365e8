"""Forward-only SQL migrations (``migrations/NNNN_name.sql`` at the top of the checkout,
shipped in the wheel as ``stichtag/migrations/``), applied under an advisory lock.

Each file runs in its own transaction with a ``lock_timeout``, so a migration never waits
forever behind a long query. An applied file whose checksum changed is an error: history
is never edited, a new file is added instead.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from stichtag.store.embedded import OWNER_ROLE


def _migrations_dir() -> Path:
    """The installed copy (``stichtag/migrations`` in the wheel), else the checkout's
    top-level ``migrations/`` (``app/stichtag/store`` → ``migrations``)."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "migrations"
    return installed if installed.is_dir() else package.parents[1] / "migrations"


MIGRATIONS_DIR = _migrations_dir()
_LOCK_KEY = 0x5717C47A  # arbitrary, constant: "stichtag migrations"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


class MigrationError(RuntimeError):
    """A migration could not be applied; the message names the file."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Migration:
    """One migration file."""

    number: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        """sha256 of the file text; stored when applied."""
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def discover(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """All migration files in order; numbers must be unique and ascending.

    Gaps are allowed: work on parallel branches reserves numbers (0009 was written while
    0008 was another branch's), and either may merge first. ``migrate`` refuses to apply
    a number below one already applied, so history is never inserted behind itself.
    """
    found: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        match = _NAME.match(path.name)
        if not match:
            raise MigrationError(f"{path.name}: migration files are named NNNN_name.sql")
        found.append(Migration(number=int(match.group(1)), name=path.name,
                               sql=path.read_text(encoding="utf-8")))
    numbers = [m.number for m in found]
    if len(set(numbers)) != len(numbers) or (numbers and numbers[0] < 1):
        raise MigrationError(f"migration numbers must be unique and start at 1 or later, "
                             f"found {numbers}")
    return found


def migrate(url: str, *, directory: Path = MIGRATIONS_DIR, lock_timeout: str = "10s") -> list[str]:
    """Apply pending migrations; return the names applied. Safe to run concurrently."""
    applied_now: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
        try:
            superuser = conn.execute(
                "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
            is_super = bool(superuser and superuser[0])
            if is_super:
                # pgvector is not a trusted extension: only a superuser may create it.
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " number integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT clock_timestamp())"
            )
            done = {row[0]: row[2] for row in conn.execute(
                "SELECT number, name, checksum FROM schema_migrations")}
            for migration in discover(directory):
                if migration.number not in done and done and migration.number < max(done):
                    raise MigrationError(
                        f"{migration.name}: numbered below {max(done):04d}, which is already "
                        "applied; migrations apply in order, so renumber it after the latest")
                if migration.number in done:
                    if done[migration.number] != migration.checksum:
                        raise MigrationError(
                            f"{migration.name}: changed after it was applied; add a new migration")
                    continue
                try:
                    with conn.transaction():
                        conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(
                            sql.Literal(lock_timeout)))
                        if is_super:
                            # Objects belong to the owner role, never to a superuser.
                            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(
                                sql.Identifier(OWNER_ROLE)))
                        conn.execute(migration.sql.encode("utf-8"))
                        if is_super:
                            conn.execute("RESET ROLE")
                        conn.execute(
                            "INSERT INTO schema_migrations (number, name, checksum)"
                            " VALUES (%s, %s, %s)",
                            (migration.number, migration.name, migration.checksum))
                except psycopg.Error as exc:
                    raise MigrationError(f"{migration.name}: {exc}") from exc
                applied_now.append(migration.name)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    return applied_now
