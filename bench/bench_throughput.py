"""Throughput at saturation by server processes: answers/s and searches/s with 1, 2 and 4
``stichtag serve`` workers on this machine, and where the time goes per stage
(docs/benchmarks.md, "Throughput by server processes"; docs/operations.md, "Several server
processes on one node").

One embedded PostgreSQL in a temporary data directory with the demo tenant
(``stichtag demo``). For each worker count a fresh server on it (rate limit off; the
node's slots and the tenant's cap both ``POOL_MAX - 2``), a 10 s warm-up, then per
operation ``--clients`` closed-loop threads for ``--seconds`` (a new connection every 10
requests, so the kernel spreads them over the workers). The stage profile is the delta
of every worker's ``stichtag_stage_seconds`` (answers) and
``stichtag_search_stage_seconds`` (searches, as "search STAGE") over the phase (each
worker's /metrics is its own, found by ``stichtag_worker_slot``), per request.

Usage: ``python bench/bench_throughput.py [--workers 1,2,4] [--seconds 30] [--clients 8]
[--doc]``; ``--doc`` rewrites the section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import _common as common
import httpx
import psutil
from _embedded import stop_embedded

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / ".data" / "models"
SECTION = "## Throughput by server processes"
QUESTIONS = [("Welcher Höchstrechnungszins gilt für Neugeschäft?", "2026-01-01"),
             ("Wie hoch ist die deklarierte Gesamtverzinsung?", "2025-06-01"),
             ("Welche Unterlagen braucht die Annahme bei Berufsunfähigkeit?", "2026-01-01"),
             ("decision deadline claims", "2024-06-01")]
SEARCHES = ["Höchstrechnungszins Neugeschäft", "Gesamtverzinsung deklariert",
            "Berufsunfähigkeit Unterlagen", "claims decision deadline"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def models_ready(script: str) -> bool:
    """Whether ``make setup`` built the models the servers load (says so if not)."""
    if (MODELS / "e5-small" / "manifest.json").is_file():
        return True
    print(f"{script}: models missing in {MODELS}; run: make setup", file=sys.stderr)
    return False


def cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "stichtag.cli", "--json", *args], env=env,
                          cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"stichtag {' '.join(args)}: {done.stderr[-2000:]}")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def start(env: dict[str, str], workers: int, port: int) -> subprocess.Popen[bytes]:
    env = {**env, "STICHTAG_WORKERS": str(workers), "STICHTAG_PORT": str(port)}
    log = Path(env["STICHTAG_DATA_DIR"]) / f"server-{workers}.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "stichtag.cli", "serve"], env=env,
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=sink)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(log.read_text(errors="replace")[-2000:])
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server did not become ready")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


_STAGE = re.compile(
    r'^stichtag_(search_stage|stage)_seconds_(sum|count)\{stage="([^"]+)"\} (\S+)$', re.M)


def scrape(base: str, workers: int) -> dict[str, dict[str, float]]:
    """Every worker's stage sums: slot -> {"stage/sum": s, "stage/count": n}."""
    found: dict[str, dict[str, float]] = {}
    for _ in range(400):
        text = httpx.get(f"{base}/metrics", timeout=30).text
        slot = next(line.split()[1] for line in text.splitlines()
                    if line.startswith("stichtag_worker_slot "))
        found.setdefault(slot, {f"{'search ' if h == 'search_stage' else ''}{stage}/{kind}":
                                float(v) for h, kind, stage, v in _STAGE.findall(text)})
        if len(found) == workers:
            return found
    raise RuntimeError(f"saw {len(found)} of {workers} workers' metrics")


def saturate(base: str, token: str, op: str, clients: int, seconds: float
             ) -> tuple[int, int, list[float]]:
    """Closed-loop clients for ``seconds``: (ok, other statuses, latencies in s)."""
    stop_at = time.monotonic() + seconds
    ok, other, lat = [0], [0], []
    lock = threading.Lock()

    def loop(offset: int) -> None:
        n = offset
        while time.monotonic() < stop_at:
            with httpx.Client(base_url=base, timeout=120,
                              headers={"Authorization": f"Bearer {token}"}) as http:
                for _ in range(10):
                    if time.monotonic() >= stop_at:
                        break
                    n += 1
                    t0 = time.perf_counter()
                    if op == "answer":
                        q, at = QUESTIONS[n % len(QUESTIONS)]
                        r = http.post("/v1/answer", json={"question": q, "valid_at": at})
                    else:
                        r = http.post("/v1/search", json={"query": SEARCHES[n % len(SEARCHES)],
                                                          "k": 10})
                    took = time.perf_counter() - t0
                    with lock:
                        if r.status_code == 200:
                            ok[0] += 1
                            lat.append(took)
                        else:
                            other[0] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ok[0], other[0], lat


def stage_profile(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]
                  ) -> dict[str, float]:
    """Mean ms per run of each stage, summed over the workers' deltas."""
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, float] = defaultdict(float)
    for slot, values in after.items():
        prior = before.get(slot, {})
        for key, value in values.items():
            stage, kind = key.rsplit("/", 1)
            delta = value - prior.get(key, 0.0)
            (sums if kind == "sum" else counts)[stage] += delta
    return {stage: 1000 * sums[stage] / counts[stage] for stage in sums if counts[stage]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--doc", action="store_true")
    args = parser.parse_args(argv)
    if not models_ready("bench_throughput.py"):
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="stthr-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STICHTAG_")}
    env.update({"STICHTAG_DATA_DIR": str(tmp), "STICHTAG_MODELS_DIR": str(MODELS),
                "STICHTAG_LOG_LEVEL": "warning", "STICHTAG_RATE_PER_SECOND": "0",
                "STICHTAG_RATE_TENANT_INFLIGHT": "6", "STICHTAG_RATE_TENANT_QUEUE": "256",
                "STICHTAG_RATE_NODE_QUEUE": "256", "STICHTAG_RATE_QUEUE_TIMEOUT": "60"})
    load_before = os.getloadavg()
    started = time.monotonic()
    rows, profiles = [], {}
    try:
        common.say("loading the demo tenant")
        token = cli(env, "demo")["key"]
        cli(env, "index", "sync", "--tenant", "demo")
        for workers in [int(w) for w in args.workers.split(",")]:
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            proc = start(env, workers, port)
            try:
                common.say(f"{workers} worker(s): warm-up")
                saturate(base, token, "search", args.clients, 5)
                saturate(base, token, "answer", args.clients, 5)
                for op in ("search", "answer"):
                    before = scrape(base, workers)
                    cpu0 = _cpu(proc.pid)
                    ok, other, lat = saturate(base, token, op, args.clients, args.seconds)
                    cpu = (_cpu(proc.pid) - cpu0) / args.seconds
                    after = scrape(base, workers)
                    profiles[(workers, op)] = stage_profile(before, after)
                    rows.append([workers, op, f"{ok / args.seconds:.1f}", other,
                                 f"{1000 * common.percentile(lat, 0.5):.0f}",
                                 f"{1000 * common.percentile(lat, 0.95):.0f}", f"{cpu:.2f}",
                                 f"{_rss(proc.pid):.0f}"])
                    common.say(f"{workers} worker(s) {op}: {rows[-1]}")
            finally:
                stop(proc)
    finally:
        stop_embedded(tmp)
    table = common.Table(
        f"Saturation with {args.clients} closed-loop clients, {args.seconds:.0f} s per row",
        ["workers", "operation", "ok/s", "refused or failed", "p50 ms", "p95 ms",
         "server CPU (cores)", "server RSS MiB"])
    table.rows.extend(rows)
    stages = sorted({s for p in profiles.values() for s in p})
    prof = common.Table("Where the time goes: mean ms per request and stage, all workers",
                        ["workers", "operation", *stages])
    for (workers, op), p in profiles.items():
        prof.rows.append([workers, op, *(f"{p[s]:.1f}" if s in p else "-" for s in stages)])
    prof.notes.append("stage times are wall time inside a request (they include waiting for "
                      "the cores other requests use), from stichtag_stage_seconds and "
                      "stichtag_search_stage_seconds")
    header = (f"`python bench/bench_throughput.py --workers {args.workers} --seconds "
              f"{args.seconds:g} --clients {args.clients}` — commit `{common.revision()}`, "
              f"{os.cpu_count()} cores, load average {load_before[0]:.2f} before / "
              f"{os.getloadavg()[0]:.2f} after, run time {time.monotonic() - started:.0f} s; "
              "demo tenant, embedded PostgreSQL, clients on the same machine.")
    for t in (table, prof):
        print(t.text() + "\n")
    print(header)
    if args.doc:
        common.replace_section(REPO / "docs" / "benchmarks.md", SECTION, "\n".join(
            [SECTION, "", header, "", table.markdown(), "", prof.markdown(), ""]))
    return 0


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *(c for c in root.children(recursive=True)
                    if not c.name().startswith(("postgres", "pg_ctl")))]


def _cpu(pid: int) -> float:
    total = 0.0
    for p in _tree(pid):
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue
    return total


def _rss(pid: int) -> float:
    return sum(p.memory_info().rss for p in _tree(pid)) / 2**20


if __name__ == "__main__":
    raise SystemExit(main())
