"""Answer latency while an operator bulk-loads the same tenant (docs/operations.md, "Derived
indexes").

One embedded PostgreSQL in a temporary data directory, one ``stichtag serve`` process
(defaults: the worker thread running, rate limit off for the bench's own key). Each
load's tenant starts with the DeckRV versions of the shared law corpus, indexed. Then,
phase by phase:

* **idle**: ``--clients`` closed-loop clients ask DeckRV questions (at the current time
  and as of 2015, alternately) with ``--think`` seconds between answers;
* **ingest**: the same clients while ``stichtag ingest --now --manifest`` loads every
  other row of the manifest (VAG, VVG: 71 rows) into the same tenant, at the present
  transaction time (the answers have observed it, so history cannot be back-dated);
* **index sync**: the same clients while ``stichtag index sync`` embeds the new passages
  (the CLI owns the tenant's embedding work; the server's worker steps aside);
* **after**: ``--after`` seconds once the CLI is done.

Both ways of loading run in one invocation, each on its own tenant: ``--interactive``
(a reader waits until the index has applied every row committed before it: the only
behaviour before 0014_outbox_awaited.sql) and the bulk default (readers do not wait for
the load's rows).

Per phase: answers, p50/p95/p99 and max latency, the server's CPU (cores, its process
only) and, for the CLI phases, the CLI's wall time. A request belongs to the phase in
which it started.

Usage: ``python bench/bench_ingest_serving.py [--clients 2] [--think 0.2] [--idle 30]
[--after 30] [--variants interactive,bulk] [--doc]``; ``--doc`` rewrites the section
of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import _common as common
import httpx
from _embedded import stop_embedded
from bench_throughput import (
    MODELS,
    _cpu,
    _rss,
    cli,
    free_port,
    models_ready,
    scrape,
    stage_profile,
    start,
    stop,
)

REPO = Path(__file__).resolve().parents[1]
SECTION = "## Answers while the same tenant is bulk-loaded"
LOADS = {"interactive": "`--interactive` (readers wait)", "bulk": "bulk (default)"}
QUESTIONS = [("Wie hoch ist der Höchstzinssatz für die Berechnung der Deckungsrückstellungen?",
              None),
             ("Wie hoch ist der Höchstzinssatz für die Berechnung der Deckungsrückstellungen?",
              "2015-06-01"),
             ("Welche Sterbetafeln sind für die Deckungsrückstellung zu verwenden?", None),
             ("Was gilt für die Zinszusatzreserve?", "2015-06-01")]


class Clients:
    """Closed-loop answer clients; every latency is tagged with the phase it started in."""

    def __init__(self, base: str, token: str, clients: int, think: float) -> None:
        self.base, self.token, self.think = base, token, think
        self.phase = "warm-up"
        self.latencies: dict[str, list[float]] = {}
        self.failures: dict[str, dict[int, int]] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._loop, args=(i,), daemon=True)
                         for i in range(clients)]

    def __enter__(self) -> Clients:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()

    def _loop(self, offset: int) -> None:
        n = offset
        with httpx.Client(base_url=self.base, timeout=300,
                          headers={"Authorization": f"Bearer {self.token}"}) as http:
            while not self._stop.is_set():
                n += 1
                question, at = QUESTIONS[n % len(QUESTIONS)]
                body: dict[str, object] = {"question": question}
                if at is not None:
                    body["valid_at"] = at
                phase = self.phase
                t0 = time.perf_counter()
                r = http.post("/v1/answer", json=body)
                took = time.perf_counter() - t0
                with self._lock:
                    if r.status_code == 200:
                        self.latencies.setdefault(phase, []).append(took)
                    else:
                        codes = self.failures.setdefault(phase, {})
                        codes[r.status_code] = codes.get(r.status_code, 0) + 1
                self._stop.wait(self.think)


def _manifest(rows: list[dict[str, str]], path: Path, fields: list[str]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--think", type=float, default=0.2)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--after", type=float, default=30.0)
    parser.add_argument("--variants", type=lambda v: v.split(","),
                        default=["interactive", "bulk"],
                        help="interactive (readers wait for the load: the behaviour before "
                             "0014), bulk (the default of ingest --manifest); in this order")
    parser.add_argument("--doc", action="store_true")
    args = parser.parse_args(argv)
    if not models_ready("bench_ingest_serving.py"):
        return 2
    corpus = common.shared("corpus", "de-insurance-law")
    with (corpus / "manifest.csv").open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields = list(reader.fieldnames or [])
        rows = list(reader)
    for r in rows:  # the copies live elsewhere: absolute paths (a manifest allows them)
        r["file"] = str(corpus / r["file"]) if r["file"] else ""
    tmp = Path(tempfile.mkdtemp(prefix="stingest-", dir="/tmp"))
    first = _manifest([r for r in rows if r["document"] == "deckrv"], tmp / "deckrv.csv", fields)
    rest = _manifest([r for r in rows if r["document"] != "deckrv"], tmp / "rest.csv", fields)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STICHTAG_")}
    env.update({"STICHTAG_DATA_DIR": str(tmp / "data"), "STICHTAG_MODELS_DIR": str(MODELS),
                "STICHTAG_LOG_LEVEL": "warning", "STICHTAG_RATE_PER_SECOND": "0"})
    load_before = os.getloadavg()
    started = time.monotonic()
    table = common.Table(
        f"{args.clients} answer clients, {args.think:g} s think time, one server process",
        ["load", "phase", "wall s", "answers", "refused (status: n)", "p50 ms", "p95 ms",
         "p99 ms", "max ms", "index wait ms (mean)", "server CPU (cores)",
         "server RSS MiB"])
    try:
        tokens: dict[str, str] = {}
        for variant in args.variants:
            tenant = f"law-{variant}"
            common.say(f"tenant {tenant} with the DeckRV versions")
            cli(env, "tenants", "create", tenant, "--time-zone", "Europe/Berlin")
            tokens[variant] = cli(env, "keys", "create", "--tenant", tenant, "--scopes",
                                  "read", "--label", "bench")["key"]
            cli(env, "ingest", "--tenant", tenant, "--manifest", str(first))
            cli(env, "index", "sync", "--tenant", tenant)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = start(env, 1, port)
        try:
            for variant in args.variants:
                tenant = f"law-{variant}"
                # --now: the served answers observed the present, and a tenant's
                # transaction time never goes back behind a recorded run
                load = ["ingest", "--tenant", tenant, "--now", "--manifest", str(rest)]
                if variant == "interactive":
                    load.append("--interactive")
                steps: list[tuple[str, list[str] | float]] = [
                    ("idle", args.idle), ("ingest", load),
                    ("index sync", ["index", "sync", "--tenant", tenant]),
                    ("after", args.after)]
                with Clients(base, tokens[variant], args.clients, args.think) as c:
                    time.sleep(5)
                    for phase, work in steps:
                        c.phase = phase
                        stages0 = scrape(base, 1)
                        cpu0, t0 = _cpu(proc.pid), time.monotonic()
                        common.say(f"{variant}: phase {phase}")
                        if isinstance(work, float):
                            time.sleep(work)
                        else:
                            cli(env, *work)
                        wall = time.monotonic() - t0
                        cpu = (_cpu(proc.pid) - cpu0) / wall
                        wait = stage_profile(stages0, scrape(base, 1)).get("retrieve_sync")
                        lat = c.latencies.get(phase, [])
                        refused = ", ".join(f"{k}: {v}" for k, v in
                                            sorted(c.failures.get(phase, {}).items())) or "0"
                        ms = [f"{1000 * common.percentile(lat, q):.0f}" if lat else "-"
                              for q in (0.5, 0.95, 0.99)]
                        table.rows.append([LOADS[variant], phase, f"{wall:.0f}", len(lat),
                                           refused, *ms,
                                           f"{1000 * max(lat):.0f}" if lat else "-",
                                           "-" if wait is None else f"{wait:.0f}",
                                           f"{cpu:.2f}", f"{_rss(proc.pid):.0f}"])
                        common.say(str(table.rows[-1]))
                    c.phase = "done"
        finally:
            stop(proc)
    finally:
        stop_embedded(tmp / "data")
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    table.notes.append("a request belongs to the phase it started in; server CPU and RSS are "
                       "the server process's (PostgreSQL and the CLI not counted)")
    table.notes.append("index wait: the answers' retrieve_sync stage (read-your-writes: the "
                       "lexical index reaches the newest awaited outbox row as of the "
                       "request), mean over the answers finished in the phase, from "
                       "stichtag_stage_seconds")
    table.notes.append("each load is its own tenant (law-interactive, law-bulk), both served "
                       "by the same server, one after the other")
    header = (f"`python bench/bench_ingest_serving.py --clients {args.clients} --think "
              f"{args.think:g} --idle {args.idle:g} --after {args.after:g}` — commit "
              f"`{common.revision()}`, {os.cpu_count()} cores, load average "
              f"{load_before[0]:.2f} before / {os.getloadavg()[0]:.2f} after, run time "
              f"{time.monotonic() - started:.0f} s; per load, a tenant with the 11 DeckRV "
              "versions first, then the other 71 manifest rows through the CLI while the "
              "clients ask.")
    print(table.text() + "\n")
    print(header)
    if args.doc:
        common.replace_section(REPO / "docs" / "benchmarks.md", SECTION, "\n".join(
            [SECTION, "", header, "", table.markdown(), ""]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
