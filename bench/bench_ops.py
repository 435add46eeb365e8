"""Operating costs: the index flag on answers, and the shutdown of ``stichtag serve``.

    .venv/bin/python bench/bench_ops.py [--answers 40] [--shutdowns 5]

1. **Index flag** (docs/api.md, "Index status"): the demo corpus in one tenant, caught up
   (tantivy and every embedding). ``AnswerService.answer`` runs ``--answers`` questions;
   each run's flag (``SearchService.index_state``: one round trip, the outbox head and,
   only when the tenant has passages without a vector, the count of those visible at the
   pair) is timed inside it (``timings_ms``) and again alone, once with no backlog (the
   fast path) and once while a second tenant has a backlog of its own (it must cost the
   same) and while the tenant itself has one (the count runs).
2. **Shutdown** (docs/operations.md, "The embedded database"): ``stichtag serve`` on a
   fresh data directory with its embedded PostgreSQL; ready, then SIGTERM; the time until
   the server process has exited and until its postmaster is gone.

Prints tables; numbers go to docs/benchmarks.md, "Operating costs" by hand with the
command line and the machine.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import MODELS, REPO, Table, embedder, emit, machine, say, services, tenant

from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from stichtag.store.embedded import embedded_status

QUESTIONS = ["Welcher Höchstrechnungszins gilt für Neugeschäft?",
             "Wie hoch ist die Überschussbeteiligung?",
             "Welche Frist gilt für den Widerruf?",
             "Was regelt die Zinsverordnung?"]
BACKLOG_TEXT = "# Rückstand\n\n" + "".join(
    f"## § {i}\n\n({i}) Ein Satz über den Rückstand Nummer {i} im Verzeichnis.\n\n"
    for i in range(1, 201))


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _row(name: str, values: list[float]) -> list[str]:
    return [name, str(len(values)), f"{statistics.median(values):.3f}",
            f"{_pct(values, 0.95):.3f}"]


def _time(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def index_flag(n: int) -> tuple[Table, str]:
    """Answer p50/p95 and the flag's share of it."""
    with services(embedder()) as svc:
        who = tenant(svc)
        ingest_manifest(svc, who, DEMO_DIR / "manifest.csv", use_tx_time=True)
        svc.indexer.catch_up(who.tenant_id)
        assert svc.answers is not None
        totals, flags = [], []
        for i in range(n):
            result = svc.answers.answer(who, QUESTIONS[i % len(QUESTIONS)],
                                        valid_at=datetime.now(UTC), known_at=datetime.now(UTC))
            assert result.index is not None and result.index.complete
            totals.append(result.timings_ms["total"])
        now = datetime.now(UTC)

        def flag(p: Principal) -> Callable[[], object]:
            return lambda: svc.search.index_state(p, valid_at=now, known_at=now,
                                                  lexical_seq=0)

        flags = _time(flag(who), n * 5)
        other = tenant(svc)
        beside: list[float] = []
        own: list[float] = []
        with svc.store.feed.embedding_owner(other.tenant_id, wait=True):
            svc.documents.ingest(other, "rueckstand", IngestRequest(text=BACKLOG_TEXT))
            own_state = svc.search.index_state(other, valid_at=datetime.now(UTC),
                                               known_at=datetime.now(UTC), lexical_seq=0)
            for _ in range(n * 5):  # interleaved: the machine's load hits both alike
                beside += _time(flag(who), 1)
                own += _time(flag(other), 1)
        table = Table("Index flag (ms)", ["what", "n", "p50", "p95"], rows=[
            _row("answer, total (flag included)", totals),
            _row("flag alone, no backlog", flags),
            _row("flag alone, another tenant's backlog", beside),
            _row(f"flag alone, own backlog of {own_state.pending}", own)],
            notes=[f"flag p50 / answer p50 = "
                   f"{statistics.median(flags) / statistics.median(totals):.4f}"])
        return table, machine(svc)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def shutdown(n: int) -> Table:
    """SIGTERM to exit and to no postmaster, ``n`` times on fresh data directories."""
    exits, gone = [], []
    for _ in range(n):
        data = Path(tempfile.mkdtemp(prefix="stops-", dir="/tmp"))
        port = _port()
        env = {**os.environ, "STICHTAG_DATA_DIR": str(data), "STICHTAG_MODELS_DIR": str(MODELS),
               "STICHTAG_PORT": str(port), "STICHTAG_LOG_LEVEL": "warning",
               "STICHTAG_METRICS_LISTEN": "off"}
        env.pop("STICHTAG_DATABASE_URL", None)
        proc = subprocess.Popen([sys.executable, "-m", "stichtag.cli", "serve"], env=env,
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        postmaster = embedded_status(data / "pg").pid
        t = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        exits.append(time.perf_counter() - t)
        while postmaster is not None and Path(f"/proc/{postmaster}").exists():
            time.sleep(0.01)
        gone.append(time.perf_counter() - t)
        subprocess.run(["rm", "-rf", str(data)], check=False)
    return Table("Shutdown of stichtag serve with its embedded PostgreSQL (s)",
                 ["from SIGTERM to", "n", "p50", "max"],
                 rows=[["server exited", str(n), f"{statistics.median(exits):.2f}",
                        f"{max(exits):.2f}"],
                       ["postmaster gone", str(n), f"{statistics.median(gone):.2f}",
                        f"{max(gone):.2f}"]])


def main() -> None:
    """Run both parts and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=40)
    parser.add_argument("--shutdowns", type=int, default=5)
    args = parser.parse_args()
    say("index flag")
    flag_table, where = index_flag(args.answers)
    say("shutdown")
    tables = [flag_table, shutdown(args.shutdowns)]
    print(f"{where}; {os.cpu_count()} cores shared with other work\n")
    emit(tables)


if __name__ == "__main__":
    main()
