"""The embedded PostgreSQL has one owner: ``stichtag serve`` stops the cluster it attached
to when it exits on SIGTERM or SIGINT, unless another process on the same data directory
still uses it; a killed server's cluster is reused, not duplicated (docs/operations.md,
"The embedded database"). Real servers, real CLI processes, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stichtag.store.embedded import embedded_status
from tests.conftest import REPO, embedded_workdir, free_port, start_server, stray_postmasters

HOLDER = """
import sys
from stichtag.bootstrap import database_urls
from stichtag.cli import main
from stichtag.config import load_settings
database_urls(load_settings())
print("attached", flush=True)
sys.stdin.readline()
sys.exit(main(["--json", "tenants", "create", "beside"]))
"""
"""A CLI process beside the server: attaches, waits for a line, then runs a real command."""


@pytest.fixture
def node(models_dir: Path) -> Iterator[dict[str, str]]:
    """Environment of a node on its own embedded cluster (no STICHTAG_DATABASE_URL)."""
    workdir = embedded_workdir("stown-")
    env = {"STICHTAG_DATA_DIR": str(workdir), "STICHTAG_MODELS_DIR": str(models_dir),
           "STICHTAG_DATABASE_URL": ""}
    yield env
    # a failed test must not leave its cluster behind either
    for pid, _ in stray_postmasters([workdir]):
        os.kill(pid, signal.SIGTERM)


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stichtag.cli", *argv], env={**os.environ, **env},
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False)


def _gone(pid: int, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists() or _zombie(pid):
            return True
        time.sleep(0.05)
    return False


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_stopped_by_a_signal_stops_its_cluster_after_the_cli_beside_it_is_done(
        node: dict[str, str], signum: int) -> None:
    workdir = Path(node["STICHTAG_DATA_DIR"])
    server = start_server(node, free_port())
    postmaster = embedded_status(workdir / "pg").pid
    assert postmaster is not None
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], env={**os.environ, **node},
                              cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "attached"
    assert server.pid in embedded_status(workdir / "pg").users

    server.send_signal(signum)
    assert server.wait(timeout=60) in (0, 128 + signum, -signum)
    # the CLI beside it still uses the cluster: it keeps running, and the command works
    assert embedded_status(workdir / "pg").pid == postmaster
    holder.stdin.write("go\n")
    holder.stdin.flush()
    out, _ = holder.communicate(timeout=120)
    assert holder.returncode == 0, out
    assert json.loads(out)["name"] == "beside"
    # the last user is gone: so is the cluster, and nothing else runs on this directory
    assert _gone(postmaster)
    assert stray_postmasters([workdir]) == []
    assert not embedded_status(workdir / "pg").running


def test_a_killed_servers_cluster_is_reused_and_then_stopped(node: dict[str, str]) -> None:
    workdir = Path(node["STICHTAG_DATA_DIR"])
    first = start_server(node, free_port())
    postmaster = embedded_status(workdir / "pg").pid
    first.kill()
    first.wait(timeout=30)
    left = embedded_status(workdir / "pg")
    assert left.pid == postmaster and first.pid in left.stale and left.users == ()

    second = start_server(node, free_port())
    status = embedded_status(workdir / "pg")
    assert status.pid == postmaster, "a second cluster was started on the same directory"
    assert status.users == (second.pid,) and status.stale == ()
    assert len(stray_postmasters([workdir])) == 1
    second.terminate()
    second.wait(timeout=60)
    assert _gone(postmaster)
    assert stray_postmasters([workdir]) == []


def test_db_status_and_stop(node: dict[str, str]) -> None:
    workdir = Path(node["STICHTAG_DATA_DIR"])
    assert _cli(node, "db", "status").returncode == 1  # not initialised yet: not running
    server = start_server(node, free_port())
    try:
        status = json.loads(_cli(node, "--json", "db", "status").stdout)
        assert status["running"] and status["users"] == [server.pid]
        refused = _cli(node, "db", "stop")
        assert refused.returncode == 1 and str(server.pid) in refused.stderr
        assert embedded_status(workdir / "pg").running
    finally:
        server.kill()
        server.wait(timeout=30)
    stopped = _cli(node, "--json", "db", "stop")
    assert stopped.returncode == 0 and json.loads(stopped.stdout)["stopped"] is True
    assert stray_postmasters([workdir]) == []
    assert "not running" in _cli(node, "db", "status").stdout
