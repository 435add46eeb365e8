"""Soak: mixed traffic from several tenants against one real server for a long time.

    .venv/bin/python bench/soak.py --minutes 60 [--window 300] [--tenants 3] [--clients 2]

``stichtag serve`` runs as its own process on a fresh data directory with its embedded
PostgreSQL (the operator's metrics listener on a free loopback port). Each tenant gets
``--clients`` threads that loop over a weighted mix: ingest (Markdown, and PDFs), search
and answer as of random Stichtage, history, replay of one of their runs, erasure of one of
their versions, key rotation. Every ``--window`` seconds a row: requests, p50/p95/p99 by
route, 5xx, the server's RSS and open descriptors, database connections, the index
backlog gauge and the size of the run log's table (records and their index). At the
end, per tenant: the exported run log verified with the node's public key, the lexical
index checked against PostgreSQL, and every acknowledged write found in its document's
history (docs/operations.md, "Soak"). The exit status is 1 when any of those, or any 5xx,
went wrong.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from stichtag.bootstrap import Services, bootstrap, release_database  # noqa: E402
from stichtag.client import ApiError, Client  # noqa: E402
from stichtag.config import Settings  # noqa: E402
from stichtag.services.access import SCOPES, Principal  # noqa: E402
from tests.originals import simple_pdf  # noqa: E402

MIX = [("ingest", 3), ("ingest_pdf", 1), ("search", 6), ("answer", 4), ("history", 3),
       ("replay", 1), ("erase", 1), ("rotate", 1)]
WORDS = ["Höchstrechnungszins", "Überschussbeteiligung", "Widerruf", "Frist", "Deckung",
         "Prämie", "Kündigung", "Vertrag", "Leistung", "Stichtag"]


@dataclass
class Tally:
    """What the clients saw, shared by all threads (under ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    server_errors: int = 0
    other_errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    acknowledged: list[tuple[str, str, str]] = field(default_factory=list)
    """(tenant name, document, version_id) of every write the server answered 2xx."""
    erased: set[tuple[str, str]] = field(default_factory=set)

    def took(self, route: str, seconds: float) -> None:
        with self.lock:
            self.latencies[route].append(seconds * 1000)

    def window(self) -> dict[str, list[float]]:
        with self.lock:
            taken, self.latencies = self.latencies, defaultdict(list)
        return taken


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _text(rng: random.Random, n: int) -> str:
    body = "".join(f"## § {i}\n\n({i}) Der {rng.choice(WORDS)} beträgt {rng.randint(1, 9)},"
                   f"{rng.randint(0, 99):02d} Prozent für {rng.choice(WORDS)}.\n\n"
                   for i in range(1, n + 1))
    return f"# Regel {rng.randint(1, 10**6)}\n\n{body}"


def _date(rng: random.Random) -> str:
    return f"{rng.randint(2015, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


class Clients(threading.Thread):
    """One client thread of one tenant."""

    def __init__(self, url: str, tenant: str, key: list[str], tally: Tally, seed: int,
                 stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.tenant, self.key, self.tally = url, tenant, key, tally
        self.rng, self.stop = random.Random(seed), stop
        self.runs: list[str] = []
        self.versions: list[tuple[str, str]] = []

    def run(self) -> None:
        ops, weights = zip(*MIX, strict=True)
        while not self.stop.is_set():
            op = self.rng.choices(ops, weights)[0]
            with Client(self.url, self.key[0], timeout=120) as api:
                started = time.perf_counter()
                try:
                    getattr(self, f"_{op}")(api)
                except ApiError as exc:
                    status = exc.problem.status
                    with self.tally.lock:
                        if status >= 500 and status != 503:
                            self.tally.server_errors += 1
                        else:
                            self.tally.other_errors[f"{op} {status}"] += 1
                    continue
                except httpx.HTTPError as exc:
                    with self.tally.lock:
                        self.tally.other_errors[f"{op} {type(exc).__name__}"] += 1
                    continue
                self.tally.took(op, time.perf_counter() - started)

    def _write(self, document: str, version_id: str) -> None:
        self.versions.append((document, version_id))
        with self.tally.lock:
            self.tally.acknowledged.append((self.tenant, document, version_id))

    def _ingest(self, api: Client) -> None:
        document = f"doc-{self.rng.randint(1, 30)}"
        r = api.ingest(document, _text(self.rng, self.rng.randint(3, 40)),
                       valid_from=_date(self.rng))
        self._write(document, r.version_id)

    def _ingest_pdf(self, api: Client) -> None:
        document = f"pdf-{self.rng.randint(1, 10)}"
        pdf = simple_pdf([f"Der {self.rng.choice(WORDS)} beträgt {self.rng.randint(1, 9)} "
                          f"Prozent." for _ in range(self.rng.randint(1, 4))])
        r = api.ingest(document, file=pdf, media_type="application/pdf",
                       valid_from=_date(self.rng))
        self._write(document, r.version_id)

    def _search(self, api: Client) -> None:
        r = api.search(self.rng.choice(WORDS), valid_at=_date(self.rng))
        self.runs.append(r.run_id)

    def _answer(self, api: Client) -> None:
        r = api.answer(f"Wie hoch ist der {self.rng.choice(WORDS)}?", valid_at=_date(self.rng))
        self.runs.append(r.run_id)

    def _history(self, api: Client) -> None:
        if self.versions:
            api.history(self.rng.choice(self.versions)[0])

    def _replay(self, api: Client) -> None:
        if self.runs:
            api.replay(self.rng.choice(self.runs[-20:]))

    def _erase(self, api: Client) -> None:
        if len(self.versions) > 5:
            _, version_id = self.versions.pop(self.rng.randrange(len(self.versions)))
            api.erase(version_id, reason="soak")
            with self.tally.lock:
                self.tally.erased.add((self.tenant, version_id))

    def _rotate(self, api: Client) -> None:
        mine = [k for k in api.keys().keys if k.revoked_at is None and k.label == "soak"]
        if mine:
            made = api.rotate_key(mine[0].key_id)
            self.key[0] = made.key


def _proc(pid: int) -> tuple[float, int]:
    """RSS in MiB and open descriptors of a process."""
    rss = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def _gauge(text: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else float("nan")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def soak(minutes: float, window: float, tenants: int, clients: int, seed: int) -> int:
    """Run the soak; print a row per window and the checks; returns the exit status."""
    data = Path(tempfile.mkdtemp(prefix="soak-", dir="/tmp"))
    port, metrics_port = _free_port(), _free_port()
    env = {**os.environ, "STICHTAG_DATA_DIR": str(data), "STICHTAG_PORT": str(port),
           "STICHTAG_METRICS_LISTEN": f"127.0.0.1:{metrics_port}", "STICHTAG_LOG_LEVEL": "info",
           "STICHTAG_RATE_PER_SECOND": "1000", "STICHTAG_RATE_BURST": "1000",
           "STICHTAG_RATE_TENANT_QUEUE": "64", "STICHTAG_RATE_QUEUE_TIMEOUT": "30"}
    env.pop("STICHTAG_DATABASE_URL", None)
    env.setdefault("STICHTAG_MODELS_DIR", str(REPO / ".data" / "models"))
    settings = Settings(data_dir=data, models_path=Path(env["STICHTAG_MODELS_DIR"]))
    svc = bootstrap(settings, embedder=None)  # the operator, beside the server
    log = data / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen([sys.executable, "-m", "stichtag.cli", "serve"], env=env,
                                  cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    failures: list[str] = []
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        names, keys = [], []
        for n in range(tenants):
            row = svc.store.tenancy.create_tenant(uuid.uuid4(), f"soak{n}", "UTC")
            who = Principal(tenant_id=row.tenant_id, key_id="soak", scopes=frozenset(SCOPES),
                            clearance=3)
            _, token = svc.access.create_key(who.tenant_id, scopes=list(SCOPES), clearance=3,
                                             label="soak")
            names.append((f"soak{n}", who))
            keys.append([token])
        tally, stop = Tally(), threading.Event()
        threads = [Clients(url, names[t][0], keys[t], tally, seed * 100 + t * 10 + c, stop)
                   for t in range(tenants) for c in range(clients)]
        for t in threads:
            t.start()
        print(f"{'minute':>6} {'requests':>8} {'5xx':>4} {'answer p50/p95/p99 ms':>22} "
              f"{'search p50/p95/p99 ms':>22} {'RSS MiB':>8} {'fds':>5} {'db conns':>8} "
              f"{'pending':>8} {'runs KiB':>8}", flush=True)
        end, started = time.monotonic() + minutes * 60, time.monotonic()
        while time.monotonic() < end:
            time.sleep(min(window, max(0.0, end - time.monotonic())))
            taken = tally.window()
            rss, fds = _proc(server.pid)
            scrape = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30).text
            with svc.store.db.tx(None) as conn:
                row = conn.execute("SELECT count(*), pg_total_relation_size('runs') "
                                   "FROM pg_stat_activity "
                                   "WHERE datname = current_database()").fetchone()
            cells = []
            for route in ("answer", "search"):
                v = taken.get(route, [])
                cells.append(f"{statistics.median(v) if v else float('nan'):.0f}/"
                             f"{_pct(v, 0.95):.0f}/{_pct(v, 0.99):.0f}")
            print(f"{(time.monotonic() - started) / 60:>6.1f} "
                  f"{sum(len(v) for v in taken.values()):>8} {tally.server_errors:>4} "
                  f"{cells[0]:>22} {cells[1]:>22} {rss:>8.0f} {fds:>5} "
                  f"{row[0] if row else -1:>8} "
                  f"{_gauge(scrape, 'stichtag_index_pending_embeddings'):>8.0f} "
                  f"{(row[1] if row else 0) / 1024:>8.0f}", flush=True)
        stop.set()
        for t in threads:
            t.join(timeout=300)
        failures += _checks(svc, names, tally, url, keys)
        if tally.server_errors:
            failures.append(f"{tally.server_errors} responses 5xx (other than 503)")
        print(f"other refusals: {dict(tally.other_errors)}")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
        svc.close()
        release_database(settings)
        subprocess.run(["rm", "-rf", str(data)], check=False)
    for failure in failures:
        print(f"FAILED: {failure}")
    print("soak: ok" if not failures else f"soak: {len(failures)} failures")
    return 1 if failures else 0


def _checks(svc: Services, names: list[tuple[str, Principal]], tally: Tally, url: str,
            keys: list[list[str]]) -> list[str]:
    """Log verify, index check and every acknowledged write, per tenant."""
    failures: list[str] = []
    public = svc.runlog.public_key()
    for (name, who), key in zip(names, keys, strict=True):
        with Client(url, key[0], timeout=300) as api:
            report = api.verify_log(public.encode())
            if report.problems:
                failures.append(f"{name}: log verify: {report.problems[:3]}")
            seen = {(a.document, a.version_id) for doc in {d for t, d, _ in tally.acknowledged
                                                           if t == name}
                    for a in api.history(doc).assertions}
        lost = [(d, v) for t, d, v in tally.acknowledged
                if t == name and (d, v) not in seen and (name, v) not in tally.erased]
        if lost:
            failures.append(f"{name}: {len(lost)} acknowledged writes missing: {lost[:3]}")
        svc.indexer.sync_lexical(who.tenant_id)
        check = svc.indexer.check(who.tenant_id)
        if check["differences"]:
            failures.append(f"{name}: index check: {check['differences']} differences")
        print(f"{name}: {len([1 for t, _, _ in tally.acknowledged if t == name])} "
              f"acknowledged writes, log verified ({report.record_count} records), index "
              f"{check['indexed']} documents, {check['differences']} differences")
    return failures


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--window", type=float, default=300.0, help="seconds per row")
    parser.add_argument("--tenants", type=int, default=3)
    parser.add_argument("--clients", type=int, default=2, help="threads per tenant")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    return soak(args.minutes, args.window, args.tenants, args.clients, args.seed)


if __name__ == "__main__":
    raise SystemExit(main())
