"""Read replicas: standby lag under a mixed write + read load, answers/s on one and two
nodes reading from one standby (docs/benchmarks.md, "Read replicas").

A primary (embedded PostgreSQL) and its ``pg_basebackup -R`` standby on loopback
(tests/replica_cluster.py), the demo corpus ingested. Then:

1. **Lag**: for ``--seconds`` a writer ingests a new version every ``--write-every``
   seconds through node R while ``--clients`` threads ask answers through R at the present
   (``known_at`` = now, the case that must wait for the standby) and in the stable past. The
   replay delay of each write is the time from its response until the standby has
   replayed the primary's flush position read right after it, polled every 2 ms; the WAL
   bytes behind are sampled every 20 ms.
2. **Throughput**: answers/s for ``--seconds`` with ``--clients`` threads per variant: one
   node reading from the primary only, one node on the standby, two nodes on the standby
   (clients split over both), at stable-past Stichtage (the reads the standby can take).

Usage: ``python bench/bench_replica.py [--seconds 20] [--clients 4] [--write] [--doc]``;
``--doc`` rewrites the section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import _common as common
import httpx
import psycopg

from stichtag.store.replica import parse_lsn
from tests.integration.test_replica import _tenant_key
from tests.integration.test_two_nodes import _await_embeddings, _ingest_demo
from tests.replica_cluster import Replicated, replicated

QUESTIONS = ["Welcher Höchstrechnungszins gilt für Neugeschäft?",
             "Wie hoch ist die deklarierte Gesamtverzinsung?",
             "Welche Unterlagen braucht die Annahme bei Berufsunfähigkeit?",
             "decision deadline claims"]
PAST = [("2022-06-01", "2023-01-01"), ("2023-08-01", "2024-01-01"), ("2025-03-01", "2025-06-01")]


def _reads(client: httpx.Client) -> Counter[str]:
    found: Counter[str] = Counter()
    for labels, value in re.findall(r"^stichtag_replica_reads_total\{([^}]*)\} (\S+)$",
                                    client.get("/metrics").text, re.MULTILINE):
        named = dict(re.findall(r'(\w+)="(\w+)"', labels))
        found[f"{named['target']}/{named['reason']}"] = int(float(value))
    return found


def _answer_loop(url: str, headers: dict[str, str], stop: threading.Event, out: list[float],
                 *, present: bool, offset: int) -> None:
    """Answers until ``stop``; appends each latency (s) to ``out``."""
    n = offset
    with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
        while not stop.is_set():
            q = QUESTIONS[n % len(QUESTIONS)]
            valid_at, known_at = PAST[n % len(PAST)]
            body: dict[str, Any] = {"question": q, "valid_at": valid_at}
            if not present:
                body["known_at"] = known_at
            started = time.perf_counter()
            r = http.post("/v1/answer", json=body)
            r.raise_for_status()
            out.append(time.perf_counter() - started)
            n += 1


def _run_clients(target: Callable[[int, threading.Event, list[float]], None], clients: int,
                 seconds: float) -> tuple[list[float], float]:
    stop = threading.Event()
    latencies: list[float] = []
    threads = [threading.Thread(target=target, args=(i, stop, latencies), daemon=True)
               for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=120)
    return latencies, time.perf_counter() - started


def lag_phase(cluster: Replicated, url: str, headers: dict[str, str], *, seconds: float,
              clients: int, write_every: float) -> common.Table:
    """Replay delay of each write and WAL bytes behind, under answers at now and the past."""
    pending: list[tuple[float, int]] = []
    delays: list[float] = []
    behind: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer() -> None:
        n = 0
        with httpx.Client(base_url=url, headers=headers, timeout=120) as http, \
             psycopg.connect(cluster.admin_url, autocommit=True) as primary:
            while not stop.is_set():
                text = (f"# Lastnotiz\n\nDie Notiz Nummer {n} gilt ab heute.\n\n"
                        f"Sie ersetzt die Notiz {n - 1}.\n")
                r = http.post("/v1/documents/load-note/versions", json={
                    "text": text, "valid_from": "2026-01-01", "title": "Lastnotiz"})
                r.raise_for_status()
                assert r.headers["Stichtag-Consistency"].isdigit()
                answered = time.perf_counter()
                # The primary's flush position once the write has answered: it covers the
                # write (the client's token is the tenant's outbox position, not an LSN).
                row = primary.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()
                assert row is not None
                with lock:
                    pending.append((answered, parse_lsn(row[0])))
                n += 1
                stop.wait(write_every)

    def watcher() -> None:
        with psycopg.connect(cluster.standby_admin_url, autocommit=True) as s, \
             psycopg.connect(cluster.admin_url, autocommit=True) as p:
            last_sample = 0.0
            while not stop.is_set() or pending:
                row = s.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()
                assert row is not None
                replayed, now = parse_lsn(row[0]), time.perf_counter()
                with lock:
                    done = [(t, lsn) for t, lsn in pending if lsn <= replayed]
                    for item in done:
                        pending.remove(item)
                delays.extend(now - t for t, _ in done)
                if now - last_sample >= 0.02:
                    flushed = p.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()
                    assert flushed is not None
                    behind.append(max(0, parse_lsn(flushed[0]) - replayed))
                    last_sample = now
                time.sleep(0.002)

    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        before = _reads(http)
    background = [threading.Thread(target=writer, daemon=True),
                  threading.Thread(target=watcher, daemon=True)]
    for t in background:
        t.start()

    def client(i: int, stop_: threading.Event, out: list[float]) -> None:
        _answer_loop(url, headers, stop_, out, present=i % 2 == 0, offset=i)

    latencies, _ = _run_clients(client, clients, seconds)
    stop.set()
    for t in background:
        t.join(timeout=60)
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        routed = _reads(http) - before
    ms = [d * 1000 for d in delays]
    table = common.Table("Standby lag under mixed load (node R reads from the standby)",
                         ["measure", "p50", "p95", "max", "n"])
    table.rows.append(["replay delay of a write (ms)", f"{common.percentile(ms, .5):.1f}",
                       f"{common.percentile(ms, .95):.1f}", f"{max(ms, default=0):.1f}",
                       len(ms)])
    table.rows.append(["WAL behind, sampled every 20 ms (bytes)",
                       f"{common.percentile(behind, .5):.0f}",
                       f"{common.percentile(behind, .95):.0f}", f"{max(behind, default=0)}",
                       len(behind)])
    answer_ms = [x * 1000 for x in latencies]
    table.rows.append(["answer latency during it (ms)", f"{common.percentile(answer_ms, .5):.0f}",
                       f"{common.percentile(answer_ms, .95):.0f}",
                       f"{max(answer_ms, default=0):.0f}", len(answer_ms)])
    total = sum(routed.values()) or 1
    table.notes.append("read transactions of R by target/reason: " + ", ".join(
        f"{k} {v} ({100 * v / total:.0f} %)" for k, v in sorted(routed.items())))
    table.notes.append(f"{clients} answer clients (half at known_at = now, half in the stable "
                       f"past), one writer every {write_every:g} s, {seconds:g} s")
    return table


def throughput_phase(urls: dict[str, list[str]], headers: dict[str, str], *, seconds: float,
                     clients: int) -> common.Table:
    """Answers/s per variant at stable-past Stichtage, each variant measured twice in the
    order A B C C B A (half the time each), after a warm-up, so neither warm caches nor
    the other engineers' load favour one of them."""
    table = common.Table("Answers/s at stable-past Stichtage (extractive, demo corpus)",
                         ["variant", "answers/s", "p50 ms", "p95 ms", "answers"])
    results: dict[str, tuple[list[float], float]] = {name: ([], 0.0) for name in urls}
    names = list(urls)
    for round_, name in enumerate(names + names[::-1] if seconds >= 2 else names):
        nodes = urls[name]

        def client(i: int, stop: threading.Event, out: list[float],
                   nodes: list[str] = nodes) -> None:
            _answer_loop(nodes[i % len(nodes)], headers, stop, out, present=False, offset=i)

        if round_ < len(names):
            _run_clients(client, clients, 1.0)  # warm-up, not counted
        latencies, elapsed = _run_clients(client, clients, seconds / 2)
        before, total = results[name]
        results[name] = (before + latencies, total + elapsed)
    for name, (latencies, elapsed) in results.items():
        ms = [x * 1000 for x in latencies]
        table.rows.append([name, f"{len(latencies) / elapsed:.1f}",
                           f"{common.percentile(ms, .5):.0f}", f"{common.percentile(ms, .95):.0f}",
                           len(latencies)])
        common.say(f"{name}: {len(latencies) / elapsed:.1f} answers/s")
    table.notes.append(f"{clients} client threads, {seconds:g} s per variant in two halves "
                       "(order A B C C B A, 1 s warm-up each); every process (primary, "
                       "standby, nodes, clients) shares this machine's "
                       f"{os.cpu_count()} cores, so a second node adds no CPU: it can only "
                       "show what the database side allows, not what a second machine would")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--write-every", type=float, default=0.2)
    parser.add_argument("--doc", action="store_true", help="rewrite docs/benchmarks.md")
    args = parser.parse_args()
    started = time.perf_counter()
    models = common.MODELS
    common.build_models(models)
    with replicated() as cluster:
        key = _tenant_key(cluster, models)
        headers = {"Authorization": f"Bearer {key}"}
        url_p = cluster.node("p", models, replica=False)
        url_r = cluster.node("r", models, replica=True)
        url_r2 = cluster.node("r2", models, replica=True)
        with httpx.Client(base_url=url_p, headers=headers, timeout=120) as http:
            _ingest_demo(http)
        _await_embeddings(cluster.admin_url)
        cluster.await_standby()
        common.say("corpus ingested; lag phase")
        lag = lag_phase(cluster, url_r, headers, seconds=args.seconds, clients=args.clients,
                        write_every=args.write_every)
        _await_embeddings(cluster.admin_url)
        cluster.await_standby()
        common.say("throughput phase")
        rate = throughput_phase({"1 node, primary only": [url_p],
                                 "1 node on the standby": [url_r],
                                 "2 nodes on one standby": [url_r, url_r2]},
                                headers, seconds=args.seconds, clients=args.clients)
    tables = [lag, rate]
    common.emit(tables)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    command = (f"python bench/bench_replica.py --seconds {args.seconds:g} --clients "
               f"{args.clients} --write-every {args.write_every:g}")
    where = (f"{os.cpu_count()} cores shared with other work (load average after the run "
             f"{load}), {datetime.now(UTC):%Y-%m-%d}")
    body = "## Read replicas\n\n" + common.markdown(
        "Lag and throughput", tables, command=command, where=where,
        seconds=time.perf_counter() - started).replace("### Lag and throughput\n\n", "", 1)
    if args.doc:
        common.replace_section(common.DOC, "## Read replicas", body)
    print(body)


if __name__ == "__main__":
    main()
