# ruff: noqa: E402, I001
# E402, I001: locust must patch the standard library (gevent) before anything else is
# imported, so it comes first, out of isort's order.
"""Load test: mixed ingest/search/answer traffic over two tenants against a real server.

Starts ``stichtag serve`` on loopback against a fresh embedded PostgreSQL in a temporary
data directory, with the production back-pressure defaults, creates two tenants with the
demo corpus (``app/stichtag/demo/corpus``), and drives locust users as a library in three phases:

1. **mixed** (``--minutes``): both tenants, ``--users`` clients each (search : answer :
   ingest = 6 : 3 : 1, 0.5-1.5 s think time) — throughput, p50/p95/p99 per endpoint,
   status counts, server memory sampled over time;
2. **baseline** (``--fair-seconds``): tenant B's clients alone;
3. **flood** (``--fair-seconds``): the same B clients while tenant A runs ``--flood``
   clients back to back over four keys — B's success rate and latency against the
   baseline (ratios), and how A was refused.

Prints aligned tables; ``--markdown docs/benchmarks.md`` also writes them into the
"Load and back-pressure" section of that file.
"""

from __future__ import annotations

import locust  # first: it monkey-patches the standard library

import argparse
import csv
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
import psutil
from locust.env import Environment

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import Table, percentile, replace_section, revision, say
from load.locustfile import PLAN, Client, Flooder

CORPUS = REPO / "app" / "stichtag" / "demo" / "corpus"
MODELS = REPO / ".data" / "models"
DOC_SECTION = "## Load and back-pressure"
ENDPOINTS = ("search", "answer", "ingest")


# -- the server under test --------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A ``stichtag serve`` process on its own embedded PostgreSQL."""

    data_dir: Path
    port: int
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cli(self, *args: str) -> dict[str, Any]:
        """Run ``stichtag --json ARGS`` against the same data directory."""
        done = subprocess.run([sys.executable, "-m", "stichtag.cli", "--json", *args], env=self.env,
                              cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"stichtag {' '.join(args)}: {done.stderr[-2000:]}")
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    def start(self) -> None:
        self.env["STICHTAG_PORT"] = str(self.port)
        log = (self.data_dir / "server.log").open("wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "stichtag.cli", "serve"], env=self.env,
                                     cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited: " + (self.data_dir / "server.log").read_text(
                    errors="replace")[-2000:])
            try:
                if http("GET", f"{self.base}/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server did not become ready")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # The embedded PostgreSQL outlives the server when other handles (the CLI runs)
        # were registered; stop this data directory's postmaster ourselves (fast shutdown).
        pid_file = self.data_dir / "pg" / "postmaster.pid"
        if pid_file.is_file():
            pid = int(pid_file.read_text().split()[0])
            try:
                postmaster = psutil.Process(pid)
                postmaster.send_signal(signal.SIGINT)
                postmaster.wait(timeout=30)
            except psutil.Error:
                pass


def http(method: str, url: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
    """One JSON request (set-up only; the load goes through locust)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - http://127.0.0.1
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=120) as r:  # noqa: S310 - http://127.0.0.1
            raw = r.read()
            return r.status, json.loads(raw) if raw.startswith((b"{", b"[")) else raw
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def seed(server: Server, tenant: str, flood_keys: int) -> dict[str, list[str]]:
    """A tenant with the demo corpus; returns its client key and ``flood_keys`` more."""
    server.cli("tenants", "create", tenant)
    admin = server.cli("keys", "create", "--tenant", tenant, "--scopes", "admin",
                       "--clearance", "secret", "--label", "load-admin")["key"]
    with (CORPUS / "manifest.csv").open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["action"] == "ingest"]
    for r in rows:
        status, _ = http("POST", f"{server.base}/v1/documents/{r['document']}/versions", {
            "text": (CORPUS / r["file"]).read_text(encoding="utf-8"),
            "valid_from": r["valid_from"], "title": r["title"], "doc_class": r["doc_class"],
            "confidentiality": r["confidentiality"]}, admin)
        if status != 201:
            raise RuntimeError(f"seeding {tenant}: {r['file']} -> {status}")
        time.sleep(0.25)  # stay inside the admin key's own rate limit
    keys: dict[str, list[str]] = {"client": [], "flood": []}
    for role, count in (("client", 1), ("flood", flood_keys)):
        for _ in range(count):
            status, body = http("POST", f"{server.base}/v1/keys", {
                "scopes": ["read", "write"], "clearance": "confidential",
                "label": f"load-{role}"}, admin)
            assert status == 201, (status, body)
            keys[role].append(body["key"])
    return keys


def corpus_plan() -> None:
    """Questions and texts for the users, from the demo corpus."""
    for line in (CORPUS / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            PLAN["questions"].append((q["question"], q.get("valid_at") or "2026-01-01"))
    PLAN["texts"] = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*/*.md"))
                     if "confidential" not in p.parent.name][:8]


# -- measuring --------------------------------------------------------------------------


@dataclass
class Tally:
    """Outcomes of one (phase, tenant, role, endpoint)."""

    latencies: list[float] = field(default_factory=list)  # ms, successful requests only
    statuses: Counter[str] = field(default_factory=Counter)


class Recorder:
    """Counts every request by phase, tenant, role and endpoint; samples memory."""

    def __init__(self, server_pid: int, data_dir: Path) -> None:
        self.phase = "setup"
        self.tallies: dict[tuple[str, str, str, str], Tally] = defaultdict(Tally)
        self.limits: dict[str, Counter[str]] = defaultdict(Counter)  # phase -> limit -> n
        self.phase_seconds: dict[str, float] = {}
        # phase -> (server CPU seconds, load generator CPU seconds, 1-min load average at end)
        self.phase_cpu: dict[str, tuple[float, float, float]] = {}
        self.memory: list[tuple[float, str, float, float]] = []  # t, phase, server, pg MiB
        self._server = psutil.Process(server_pid)
        self._data_dir = str(data_dir)
        self._postmaster: psutil.Process | None = None
        self._t0 = time.monotonic()

    def on_request(self, *, name: str, response_time: float, response: Any,
                   context: dict[str, Any], exception: Any, **_: Any) -> None:
        """Locust's ``request`` event (fired with keyword arguments)."""
        status = getattr(response, "status_code", None) or 0
        tally = self.tallies[(self.phase, context.get("tenant", "?"), context.get("role", "?"),
                              name)]
        if exception is not None and not status:
            tally.statuses["error"] += 1
            return
        if 200 <= status < 300:
            tally.statuses["2xx"] += 1
            tally.latencies.append(response_time)
        elif status in (429, 503):
            tally.statuses[str(status)] += 1
            try:
                limit = json.loads(response.text).get("limit", "?")
            except (ValueError, AttributeError, TypeError):
                limit = "?"
            self.limits[f"{self.phase}/{context.get('tenant')}"][limit] += 1
        elif status >= 500:
            tally.statuses["5xx"] += 1
        else:
            tally.statuses[f"{status}"] += 1

    def sample(self) -> None:
        """RSS of the server process and of its PostgreSQL, every 2 s."""
        while True:
            try:
                server = sum(p.memory_info().rss for p in self._server_tree()) / 2**20
            except psutil.Error:
                return
            self.memory.append((time.monotonic() - self._t0, self.phase, server, self._pg_rss()))
            gevent.sleep(2)

    def cpu(self) -> tuple[float, float]:
        """CPU seconds (user + system) used so far by the server (with its worker
        processes; the embedded PostgreSQL is not among them) and by this process."""
        server = 0.0
        for proc in self._server_tree():
            try:
                times = proc.cpu_times()
                server += times.user + times.system + times.children_user + times.children_system
            except psutil.Error:
                continue
        me = psutil.Process().cpu_times()
        return server, me.user + me.system

    def _server_tree(self) -> list[psutil.Process]:
        try:
            children = self._server.children(recursive=True)
        except psutil.Error:
            children = []
        return [self._server, *(c for c in children
                                if not (c.name() or "").startswith(("postgres", "pg_ctl")))]

    def _pg_rss(self) -> float:
        """RSS summed over the postmaster of this data directory and its backends."""
        if self._postmaster is None:
            for p in psutil.process_iter(["name", "cmdline"]):
                if (p.info.get("name") or "").startswith("postgres") and any(
                        self._data_dir in part for part in p.info.get("cmdline") or []):
                    self._postmaster = p
                    break
        if self._postmaster is None:
            return float("nan")
        try:
            procs = [self._postmaster, *self._postmaster.children(recursive=True)]
            return sum(p.memory_info().rss for p in procs) / 2**20
        except psutil.Error:
            return float("nan")


def run_phase(rec: Recorder, base: str, phase: str, seconds: float,
              classes: list[type[Any]]) -> None:
    """Run ``classes`` (each with its ``fixed_count``) for ``seconds``; tallies go to ``phase``."""
    env = Environment(user_classes=classes, host=base, stop_timeout=30)
    env.events.request.add_listener(rec.on_request)
    runner = env.create_local_runner()
    users = sum(c.fixed_count for c in classes)
    rec.phase = phase
    say(f"phase {phase}: {users} users for {seconds:.0f} s")
    started, (server0, gen0) = time.monotonic(), rec.cpu()
    runner.start(users, spawn_rate=min(users, 50))
    gevent.sleep(seconds)
    runner.quit()
    rec.phase_seconds[phase] = time.monotonic() - started
    server1, gen1 = rec.cpu()
    rec.phase_cpu[phase] = (server1 - server0, gen1 - gen0, os.getloadavg()[0])
    rec.phase = "between"


def users(base: type[Any], tenant: str, count: int) -> type[Any]:
    return type(f"{base.__name__}{tenant}", (base,),
                {"tenant": tenant, "fixed_count": count, "abstract": False})


# -- tables -----------------------------------------------------------------------------


def ms(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:.0f}"


def merged(rec: Recorder, phase: str, *, tenant: str | None = None, role: str | None = None,
           endpoint: str | None = None) -> Tally:
    out = Tally()
    for (ph, t, r, e), tally in rec.tallies.items():
        if ph == phase and tenant in (None, t) and role in (None, r) and endpoint in (None, e):
            out.latencies += tally.latencies
            out.statuses.update(tally.statuses)
    return out


def traffic_table(rec: Recorder, phase: str, title: str) -> Table:
    seconds = rec.phase_seconds[phase]
    table = Table(title, ["endpoint", "requests", "req/s", "2xx", "429", "503", "5xx",
                          "other", "p50 ms", "p95 ms", "p99 ms"])
    for endpoint in (*ENDPOINTS, None):
        t = merged(rec, phase, endpoint=endpoint)
        n = sum(t.statuses.values())
        other = n - sum(t.statuses[k] for k in ("2xx", "429", "503", "5xx"))
        table.rows.append([endpoint or "all", n, f"{n / seconds:.1f}", t.statuses["2xx"],
                           t.statuses["429"], t.statuses["503"], t.statuses["5xx"], other,
                           ms(percentile(t.latencies, 0.5)), ms(percentile(t.latencies, 0.95)),
                           ms(percentile(t.latencies, 0.99))])
    table.notes.append("latency percentiles over successful (2xx) requests; "
                       "5xx and transport errors would be listed, never hidden")
    return table


def memory_table(rec: Recorder) -> Table:
    mixed = [m for m in rec.memory if m[1] == "mixed"]
    table = Table("Memory (RSS, MiB) over the run",
                  ["process", "warm-up start", "mixed start", "mixed mid", "mixed end",
                   "end of run", "max", "slope MiB/min (2nd half of mixed)"])
    if len(mixed) < 4:
        table.notes.append("too few samples")
        return table
    half = mixed[len(mixed) // 2:]
    for label, idx in (("server (uvicorn)", 2), ("PostgreSQL (all backends)", 3)):
        values = [m[idx] for m in mixed]
        table.rows.append([
            label, f"{rec.memory[0][idx]:.0f}", f"{values[0]:.0f}",
            f"{values[len(values) // 2]:.0f}", f"{values[-1]:.0f}",
            f"{rec.memory[-1][idx]:.0f}", f"{max(m[idx] for m in rec.memory):.0f}",
            f"{slope([m[0] for m in half], [m[idx] for m in half]):+.2f}"])
    table.notes.append(f"sampled every 2 s ({len(rec.memory)} samples); the slope is a "
                       "least-squares fit over the second half of the mixed phase; PostgreSQL "
                       "is the sum over its processes, so shared buffers count once per backend")
    return table


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs (seconds), per minute."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    return 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def phases_table(rec: Recorder) -> Table:
    """Where the CPU went in each phase (the load generator shares the machine)."""
    table = Table("Phases: CPU of the server and of the load generator",
                  ["phase", "seconds", "requests", "server CPU (cores)",
                   "locust CPU (cores)", "load avg (1 min) at end"])
    for phase in ("warmup", "mixed", "baseline", "flood"):
        if phase not in rec.phase_seconds:
            continue
        wall = rec.phase_seconds[phase]
        server, gen, load = rec.phase_cpu[phase]
        n = sum(sum(t.statuses.values()) for k, t in rec.tallies.items() if k[0] == phase)
        table.rows.append([phase, f"{wall:.0f}", n, f"{server / wall:.2f}", f"{gen / wall:.2f}",
                           f"{load:.2f}"])
    table.notes.append(f"{os.cpu_count()} cores in all, shared with other work on the machine")
    return table


def fairness_tables(rec: Recorder, flooders: int) -> list[Table]:
    base = merged(rec, "baseline", tenant="B")
    flood = merged(rec, "flood", tenant="B")
    table = Table(f"Fairness: tenant B's clients alone vs while tenant A floods "
                  f"({flooders} clients, no think time)",
                  ["tenant B", "requests", "success", "req/s", "p50 ms", "p95 ms", "p99 ms"])

    def row(label: str, t: Tally, phase: str) -> list[Any]:
        n = sum(t.statuses.values())
        return [label, n, f"{100 * t.statuses['2xx'] / n:.1f} %" if n else "-",
                f"{n / rec.phase_seconds[phase]:.1f}", ms(percentile(t.latencies, 0.5)),
                ms(percentile(t.latencies, 0.95)), ms(percentile(t.latencies, 0.99))]

    table.rows.append(row("alone (baseline)", base, "baseline"))
    table.rows.append(row("during A's flood", flood, "flood"))
    ratios = ["flood / baseline", "", ""]
    nb, nf = sum(base.statuses.values()), sum(flood.statuses.values())
    ratios.append(f"{(nf / rec.phase_seconds['flood']) / (nb / rec.phase_seconds['baseline']):.2f}x"
                  if nb and nf else "-")
    for q in (0.5, 0.95, 0.99):
        b, f = percentile(base.latencies, q), percentile(flood.latencies, q)
        ratios.append("-" if math.isnan(b) or math.isnan(f) or not b else f"{f / b:.2f}x")
    table.rows.append(ratios)
    a = merged(rec, "flood", tenant="A")
    na = sum(a.statuses.values())
    refused = Table("Tenant A's flood: how it was refused",
                    ["requests", "req/s", "2xx", "429", "503", "5xx", "by limit"])
    limits = rec.limits.get("flood/A", Counter())
    refused.rows.append([na, f"{na / rec.phase_seconds['flood']:.1f}", a.statuses["2xx"],
                         a.statuses["429"], a.statuses["503"], a.statuses["5xx"],
                         ", ".join(f"{k} {v}" for k, v in sorted(limits.items())) or "-"])
    b_refused = rec.limits.get("flood/B", Counter())
    refused.notes.append("tenant B's refusals during the flood: "
                         + (", ".join(f"{k} {v}" for k, v in sorted(b_refused.items())) or "none"))
    return [table, refused]


def write_markdown(path: Path, tables: list[Table], *, command: str, header: str) -> None:
    section = [DOC_SECTION, "", header, ""]
    for t in tables:
        section += [t.markdown(), ""]
    replace_section(path, DOC_SECTION, "\n".join(section))
    say(f"wrote {path} ({command})")


# -- main -------------------------------------------------------------------------------


@dataclass
class Variant:
    """How the server under test is run: worker processes and the refusal delay."""

    workers: int
    delay: float
    tenant_slots: int | None = None  # None: the default (half the cores)

    @property
    def label(self) -> str:
        held = f"refusals held {self.delay:g} s" if self.delay else "refusals at once"
        slots = ("" if self.tenant_slots is None
                 else f", {self.tenant_slots} slot{'s' if self.tenant_slots > 1 else ''}/tenant")
        return f"{self.workers} process{'es' if self.workers > 1 else ''}, {held}{slots}"


def parse_variants(raw: str) -> list[Variant]:
    """``WORKERS:DELAY[:TENANT_SLOTS],...`` as given to ``--variants``."""
    out = []
    for part in raw.split(","):
        fields = part.split(":")
        out.append(Variant(int(fields[0]), float(fields[1]) if len(fields) > 1 else 0.0,
                           int(fields[2]) if len(fields) > 2 else None))
    return out


def run_variant(variant: Variant, args: argparse.Namespace, *, mixed: bool
                ) -> tuple[Recorder, bool]:
    """A fresh server run as ``variant``: seed both tenants, then the phases."""
    tmp = Path(tempfile.mkdtemp(prefix="stload-", dir="/tmp"))  # short: PG's socket path
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("STICHTAG_") or k.startswith("STICHTAG_RATE_")}
    env.update({"STICHTAG_DATA_DIR": str(tmp), "STICHTAG_MODELS_DIR": str(MODELS),
                "STICHTAG_LOG_LEVEL": "warning", "STICHTAG_WORKERS": str(variant.workers),
                "STICHTAG_RATE_REFUSAL_DELAY": str(variant.delay)})
    if variant.tenant_slots is not None:
        env["STICHTAG_RATE_TENANT_INFLIGHT"] = str(variant.tenant_slots)
    server = Server(tmp, free_port(), env)
    try:
        say(f"[{variant.label}] starting the server on {server.base} (data in {tmp})")
        server.start()
        for tenant in ("A", "B"):
            say(f"seeding tenant {tenant} with the demo corpus")
            # The flood spreads over up to 16 keys: then the tenant's queue, not one key's
            # bucket, is what has to hold it.
            PLAN["keys"][tenant] = seed(server, f"load-{tenant.lower()}",
                                        max(1, min(args.flood, 16)))
        assert server.proc is not None
        rec = Recorder(server.proc.pid, tmp)
        sampler = gevent.spawn(rec.sample)
        clients = [users(Client, t, args.users) for t in ("A", "B")]
        run_phase(rec, server.base, "warmup", 20, clients)
        if mixed:
            run_phase(rec, server.base, "mixed", args.minutes * 60, clients)
        run_phase(rec, server.base, "baseline", args.fair_seconds,
                  [users(Client, "B", args.users)])
        run_phase(rec, server.base, "flood", args.fair_seconds,
                  [users(Client, "B", args.users), users(Flooder, "A", args.flood)])
        sampler.kill()
        alive = server.proc.poll() is None
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return rec, alive


def variants_table(runs: list[tuple[Variant, Recorder]], flooders: int) -> Table:
    """Tenant B's latency alone and during A's flood, one row per way of serving."""
    table = Table(f"Flood by way of serving: tenant B alone vs while tenant A floods "
                  f"({flooders} clients, no think time), same run",
                  ["server", "B p50 alone", "B p95 alone", "B p50 flood", "B p95 flood",
                   "p50 ratio", "p95 ratio", "B success", "A req/s", "A 2xx",
                   "server CPU in flood (cores)"])
    for variant, rec in runs:
        base = merged(rec, "baseline", tenant="B")
        flood = merged(rec, "flood", tenant="B")
        a = merged(rec, "flood", tenant="A")
        n_flood = sum(flood.statuses.values())
        ratios = []
        for q in (0.5, 0.95):
            b, f = percentile(base.latencies, q), percentile(flood.latencies, q)
            ratios.append("-" if math.isnan(b) or math.isnan(f) or not b else f"{f / b:.2f}x")
        wall = rec.phase_seconds["flood"]
        table.rows.append([
            variant.label, ms(percentile(base.latencies, 0.5)),
            ms(percentile(base.latencies, 0.95)), ms(percentile(flood.latencies, 0.5)),
            ms(percentile(flood.latencies, 0.95)), *ratios,
            f"{100 * flood.statuses['2xx'] / n_flood:.1f} %" if n_flood else "-",
            f"{sum(a.statuses.values()) / wall:.0f}", a.statuses["2xx"],
            f"{rec.phase_cpu['flood'][0] / wall:.2f}"])
    table.notes.append("goal (docs/operations.md, 'Several server processes on one node'): "
                       "B's p95 during the flood within 2x of its "
                       "baseline; each row is its own server, seeded the same way")
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="mixed phase (default 3)")
    parser.add_argument("--fair-seconds", type=float, default=60.0,
                        help="baseline and flood phases, each (default 60)")
    parser.add_argument("--users", type=int, default=4, help="clients per tenant (default 4)")
    parser.add_argument("--flood", type=int, default=32, help="tenant A's flood clients")
    parser.add_argument("--variants", default="1:0:3,1:1,2:0,2:1",
                        help="ways of serving to compare, WORKERS:REFUSAL_DELAY[:TENANT_SLOTS] "
                             "each (default 1:0:3,1:1,2:0,2:1: the defaults before multi-process "
                             "serving, then one and two processes; the last one also runs "
                             "the mixed phase and the detailed tables)")
    parser.add_argument("--markdown", type=Path, help="write the tables into this file")
    args = parser.parse_args(argv)
    if not (CORPUS / "manifest.csv").is_file():
        print(f"bench_load.py: demo corpus missing: {CORPUS}", file=sys.stderr)
        return 2
    if not (MODELS / "e5-small" / "manifest.json").is_file():
        print(f"bench_load.py: models missing in {MODELS}; run: make setup", file=sys.stderr)
        return 2
    variants = parse_variants(args.variants)
    load_before = os.getloadavg()
    started = time.monotonic()
    corpus_plan()
    runs: list[tuple[Variant, Recorder]] = []
    alive = True
    for n, variant in enumerate(variants):
        rec, ok = run_variant(variant, args, mixed=n == len(variants) - 1)
        runs.append((variant, rec))
        alive = alive and ok
    load_after = os.getloadavg()
    last, rec = runs[-1]
    tables = [variants_table(runs, args.flood),
              traffic_table(rec, "mixed", f"Mixed traffic, tenants A and B, {args.users} "
                            f"clients each, {rec.phase_seconds['mixed']:.0f} s ({last.label})"),
              memory_table(rec), *fairness_tables(rec, args.flood), phases_table(rec)]
    for t in tables:
        print(t.text() + "\n", flush=True)
    extra = " ".join(a for a in (argv if argv is not None else sys.argv[1:])
                     if not a.startswith("--markdown") and not a.endswith(".md"))
    command = "make load" + (f" LOAD_ARGS='{extra}'" if extra else "")
    header = (f"`{command}` — commit `{revision()}`, {os.cpu_count()} cores shared with other "
              f"work, load average {load_before[0]:.2f} before / {load_after[0]:.2f} after; "
              f"run time {time.monotonic() - started:.0f} s; servers with the production "
              "back-pressure defaults (docs/operations.md) but for the workers and refusal "
              "delay of each variant, embedded PostgreSQL, demo corpus in each tenant; "
              f"locust {locust.__version__} FastHttpUser on the same machine. The detailed "
              f"tables after the first are from the last variant ({last.label}).")
    print(header)
    if not alive:
        print("a server died during the run", file=sys.stderr)
        return 1
    if args.markdown:
        write_markdown(args.markdown, tables, command=command, header=header)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
