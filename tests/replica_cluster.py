"""A primary and a hot standby on loopback, plus server nodes on them (tests, benchmarks).

The primary is an embedded PostgreSQL of its own (not the session's shared cluster, which
other tests use), the standby its ``pg_basebackup -R`` copy on a free TCP port. Everything
started here is stopped in ``finally`` blocks, also when a step fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from stichtag.audit.signing import load_or_create_signing_key
from stichtag.store.embedded import APP_ROLE, EmbeddedDatabase, start_embedded
from stichtag.store.migrate import migrate
from stichtag.store.replica import parse_lsn
from stichtag.store.standby import Standby, start_standby, stop_cluster
from tests.conftest import free_port, start_server


@dataclass(kw_only=True)
class Replicated:
    """Primary, standby and where the nodes keep their files."""

    workdir: Path
    primary: EmbeddedDatabase
    standby: Standby
    signing_key: Path
    nodes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def app_url(self) -> str:
        """The application role on the primary."""
        return self.primary.url(role=APP_ROLE)

    @property
    def admin_url(self) -> str:
        """The superuser on the primary."""
        return self.primary.url(role="postgres")

    @property
    def standby_admin_url(self) -> str:
        """The superuser on the standby (pause and resume replay)."""
        return self.standby.url(role="postgres")

    def node(self, name: str, models_dir: Path, *, replica: bool,
             extra: dict[str, str] | None = None) -> str:
        """Start ``stichtag serve`` on the primary (reads on the standby if ``replica``)."""
        env = {"STICHTAG_DATABASE_URL": self.app_url, "STICHTAG_MODELS_DIR": str(models_dir),
               "STICHTAG_SIGNING_KEY": str(self.signing_key),
               "STICHTAG_DATA_DIR": str(self.workdir / name), **(extra or {})}
        if replica:
            env["STICHTAG_READ_DATABASE_URL"] = self.standby.url(role=APP_ROLE)
        port = free_port()
        self.nodes.append(start_server(env, port))
        return f"http://127.0.0.1:{port}"

    def lag_bytes(self) -> int:
        """What the primary has flushed and the standby has not replayed."""
        with psycopg.connect(self.admin_url) as p, psycopg.connect(self.standby_admin_url) as s:
            flushed = p.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()
            replayed = s.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()
        assert flushed is not None and replayed is not None
        return max(0, parse_lsn(flushed[0]) - parse_lsn(replayed[0]))

    def await_standby(self, deadline: float = 60) -> None:
        """Until the standby has replayed everything the primary flushed."""
        end = time.monotonic() + deadline
        while self.lag_bytes() > 0:
            if time.monotonic() > end:
                raise AssertionError("the standby did not catch up")
            time.sleep(0.05)

    def set_replay(self, *, paused: bool) -> None:
        """``pg_wal_replay_pause()`` / ``pg_wal_replay_resume()`` on the standby."""
        with psycopg.connect(self.standby_admin_url, autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()" if paused
                         else "SELECT pg_wal_replay_resume()")
            if paused:  # the request is asynchronous: wait until replay has stopped
                for _ in range(200):
                    row = conn.execute("SELECT pg_get_wal_replay_pause_state()").fetchone()
                    if row is not None and row[0] == "paused":
                        return
                    time.sleep(0.01)
                raise AssertionError("replay did not pause")


@contextmanager
def replicated() -> Iterator[Replicated]:
    """Primary (migrated) + standby; nodes started through it are stopped on exit too."""
    # Short path: Unix sockets live in the data directories (limit ~107 bytes).
    workdir = Path(tempfile.mkdtemp(prefix="strep-", dir="/tmp"))
    pg_dir = workdir / "pg"
    cluster: Replicated | None = None
    try:
        primary = start_embedded(pg_dir)
        migrate(primary.url(role="postgres"))
        standby = start_standby(primary.socket_dir, workdir / "standby", free_port())
        signing = workdir / "shared" / "signing.key"
        load_or_create_signing_key(signing)
        cluster = Replicated(workdir=workdir, primary=primary, standby=standby,
                             signing_key=signing)
        yield cluster
    finally:
        if cluster is not None:
            for proc in cluster.nodes:
                with suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
            for proc in cluster.nodes:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
        stop_cluster(workdir / "standby")
        stop_cluster(pg_dir)
        if os.environ.get("STICHTAG_KEEP_REPLICA_DIR") is None:
            shutil.rmtree(workdir, ignore_errors=True)
