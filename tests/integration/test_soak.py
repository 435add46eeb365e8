"""The soak in CI size (bench/soak.py; docs/operations.md, "Soak"): a real server on its
own embedded PostgreSQL, two tenants' mixed traffic for half a minute, then the run logs
verified, the indexes checked and every acknowledged write found."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_a_short_soak_loses_nothing_and_answers_no_5xx(models_dir: Path) -> None:
    env = {**os.environ, "STICHTAG_MODELS_DIR": str(models_dir)}
    done = subprocess.run([sys.executable, str(REPO / "bench" / "soak.py"), "--minutes", "0.5",
                           "--window", "15", "--tenants", "2", "--clients", "1", "--seed", "3"],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=900,
                          check=False)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "soak: ok" in out
    rows = [line for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) >= 2, out  # one row per window
    assert all(line.split()[2] == "0" for line in rows), out  # no 5xx in any window
    assert out.count("log verified") == 2
