"""Cold start: from a fresh clone, the wall time of ``make serve`` until the first answer.

    python bench/bench_cold_start.py [--into DIR] [--keep-pip-cache] [--markdown]

Clones this checkout (its committed HEAD) into a new directory and runs what ``make serve``
runs, one phase at a time so each gets its own figure:

1. venv and install: ``make .venv/.installed-stamp`` (python -m venv, pip install -e
   '.[dev,train]'); by default with ``PIP_NO_CACHE_DIR=1`` so every wheel comes from the
   registry as on a fresh machine (``--keep-pip-cache`` measures a warm cache instead);
2. model build: ``stichtag models build`` (the e5 converter and int8 quantization);
3. demo load: ``stichtag demo --json`` (embedded PostgreSQL initdb, migrations, the demo
   tenant and its documents, indexing);
4. serve until the first answer: ``stichtag serve`` until /readyz, then the demo's gated
   question through POST /v1/answer.

Prints one table; nothing is asserted (timings are reported, never tested).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
QUESTION = "Welcher Höchstrechnungszins gilt für Neugeschäft?"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _timed(argv: list[str], *, cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    took = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return took, done.stdout


def _first_answer(clone: Path, env: dict[str, str], key: str) -> tuple[float, float, str]:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    server = subprocess.Popen([str(clone / ".venv/bin/stichtag"), "serve", "--port", str(port)],
                              cwd=clone, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        while True:
            if server.poll() is not None:
                sys.exit(f"stichtag serve exited with {server.returncode}")
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        ready = time.monotonic() - started
        reply = httpx.post(f"{base}/v1/answer", timeout=120,
                           headers={"Authorization": f"Bearer {key}"},
                           json={"question": QUESTION, "valid_at": "2022-06-01"})
        answered = time.monotonic() - started
        return ready, answered, str(reply.json().get("status"))
    finally:
        server.terminate()
        server.wait(timeout=60)


def stop_postgres(pgdata: Path, timeout: float = 60) -> None:
    """Fast shutdown of the clone's embedded PostgreSQL, which outlives ``stichtag serve``
    by design (the next command reuses it): SIGINT to the postmaster, as ``pg_ctl stop
    -m fast`` sends, then wait for its pid file to go."""
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return
    os.kill(int(pid_file.read_text().split()[0]), signal.SIGINT)
    deadline = time.monotonic() + timeout
    while pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--into", type=Path, help="clone here (default: a new temp directory)")
    parser.add_argument("--keep-pip-cache", action="store_true",
                        help="let pip use its cache (a warm machine), not only the registry")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    clone = args.into or Path(tempfile.mkdtemp(prefix="stichtag-cold-")) / "stichtag"
    if clone.exists():
        sys.exit(f"--into: {clone} exists; give a new directory")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STICHTAG_")}
    env.pop("VIRTUAL_ENV", None)
    if not args.keep_pip_cache:
        env["PIP_NO_CACHE_DIR"] = "1"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
                          check=True, capture_output=True, text=True).stdout.strip()
    rows: list[tuple[str, float]] = []
    took, _ = _timed(["make", ".venv/.installed-stamp"], cwd=clone, env=env)
    rows.append(("venv and install (pip install -e '.[dev,train]')", took))
    took, _ = _timed([str(clone / ".venv/bin/stichtag"), "models", "build"], cwd=clone, env=env)
    rows.append(("model build (stichtag models build)", took))
    took, out = _timed([str(clone / ".venv/bin/stichtag"), "demo", "--json"], cwd=clone, env=env)
    rows.append(("demo load (stichtag demo)", took))
    key = json.loads(out)["key"]
    try:
        ready, answered, status = _first_answer(clone, env, key)
    finally:
        stop_postgres(clone / ".data" / "pg")
    rows.append(("serve until /readyz", ready))
    rows.append((f"serve until the first answer ({status})", answered))
    total = sum(t for _, t in rows[:3]) + answered
    rows.append(("**make serve until the first answer**", total))
    load = os.getloadavg()[0]
    cache = "warm pip cache" if args.keep_pip_cache else "no pip cache (PIP_NO_CACHE_DIR=1)"
    print(f"cold start of {head}, {cache}, load average at the end {load:.1f}\n")
    if args.markdown:
        print("| phase | wall time |\n| --- | ---: |")
        for name, t in rows:
            print(f"| {name} | {t:.1f} s |")
    else:
        for name, t in rows:
            print(f"{name:<56} {t:8.1f} s")
    if args.into is None:
        shutil.rmtree(clone.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
