"""What the tenant clock and per-tenant ids cost (docs/semantics.md, "Transaction time").

Starts its own embedded PostgreSQL in a temporary directory and measures, in one run:

1. **The observation step of a recorded run**: before a search or answer reads, one short
   transaction moves the tenant's ``observed_to`` to the run's ``known_at``
   (``RunLog.observe``). Compared with an empty tenant transaction (set the tenant,
   commit), the floor of any database round trip.
2. **A run behind a write in flight**: the observation waits for the row lock of a write
   of the same tenant still in progress (on purpose: that write's ``tx_from`` may lie
   before the run's ``known_at``). Measured with a write transaction that holds the clock
   row for 200 ms, as a large ingest's transaction does.
3. **Per-tenant ids**: each insert draws its id as the tenant's largest plus one (an index
   descent). A large version ingested into a fresh tenant vs into a tenant that already
   holds ``--fill`` such versions: equal times mean the draw does not grow with the tenant.

    PYTHONPATH=. .venv/bin/python bench/bench_tenant_clock.py [--runs 300] [--paragraphs 1500]
        [--fill 8]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _embedded import stop_embedded

from stichtag.bootstrap import Services, bootstrap
from stichtag.cli.tenants import operator
from stichtag.config import Settings
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from stichtag.store.sqlfiles import query


def _law(paragraphs: int, edition: int) -> str:
    parts = [f"# Verordnung {edition}\n"]
    for n in range(paragraphs):
        if n % 10 == 0:
            parts.append(f"\n## § {n // 10 + 1} Abschnitt {n // 10 + 1}\n")
        parts.append(f"\n({n % 10 + 1}) Der Höchstzinssatz nach Absatz {n} der Fassung "
                     f"{edition} beträgt {n % 7},{edition % 10} Prozent der "
                     "Deckungsrückstellung.\n")
    return "".join(parts)


def _ms(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def observation(svc: Services, who: Principal, runs: int) -> list[str]:
    """Rows of table 1: the observation step against an empty tenant transaction."""
    def observe() -> None:
        with svc.store.units.unit(who.tenant_id) as uow:
            svc.runlog.observe(uow, svc.clock.now())

    def empty() -> None:
        with svc.store.units.unit(who.tenant_id):
            pass

    obs, base = [], []
    for _ in range(runs):  # interleaved, so drift hits both alike
        obs.append(_timed(observe))
        base.append(_timed(empty))
    (o50, o95), (b50, b95) = _ms(obs), _ms(base)
    return [f"| empty tenant transaction | {b50:.3f} | {b95:.3f} | 1.00 |",
            f"| observation step (`RunLog.observe`) | {o50:.3f} | {o95:.3f} | {o50 / b50:.2f} |"]


def behind_a_write(svc: Services, who: Principal, hold_ms: int) -> list[str]:
    """Rows of table 2: an observation started while a write holds the tenant's clock row
    (a write's transaction, held open for ``hold_ms`` as a large ingest would)."""
    locked = threading.Event()

    def write() -> None:
        with svc.store.documents.db.tx(who.tenant_id) as conn:
            conn.execute(query("tenant_clock_lock"))
            locked.set()
            time.sleep(hold_ms / 1000)

    thread = threading.Thread(target=write)
    thread.start()
    locked.wait()
    wait = _timed(lambda: observation_once(svc, who))
    thread.join()
    alone = statistics.median(_timed(lambda: observation_once(svc, who)) for _ in range(20))
    return [f"| observation, no write in flight (p50 of 20) | {alone:.1f} |",
            f"| observation while a write holds the clock row for {hold_ms} ms | {wait:.1f} |"]


def observation_once(svc: Services, who: Principal) -> None:
    """One observation at now."""
    with svc.store.units.unit(who.tenant_id) as uow:
        svc.runlog.observe(uow, svc.clock.now())


def id_draw(svc: Services, fresh: Principal, full: Principal, paragraphs: int,
            fill: int) -> list[str]:
    """Rows of table 3: a large version into a fresh tenant vs into a filled one."""
    start = datetime(2000, 1, 1, tzinfo=UTC)
    for n in range(fill):
        svc.documents.ingest(full, f"fill-{n}", IngestRequest(
            text=_law(paragraphs, 100 + n), valid_from=start + timedelta(days=n)))
    times = {}
    for name, who in (("fresh tenant", fresh), (f"tenant with {fill} such versions", full)):
        request = IngestRequest(text=_law(paragraphs, 7), valid_from=start)
        times[name] = _timed(lambda who=who, request=request: svc.documents.ingest(
            who, "target", request))
    first = next(iter(times.values()))
    return [f"| {name} | {ms:.1f} | {ms / first:.2f} |" for name, ms in times.items()]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the three measurements and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--paragraphs", type=int, default=1500)
    parser.add_argument("--fill", type=int, default=8)
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="stclock-", dir="/tmp"))
    svc: Services | None = None
    try:
        svc = bootstrap(Settings(data_dir=tmp, database_url=None, migration_database_url=None),
                        embedder=None)
        names = ("clock-a", "clock-b", "clock-c", "clock-d")
        for name in names:
            svc.access.create_tenant(name)
        a, b, c, d = (operator(svc, name) for name in names)
        print("| step | p50 ms | p95 ms | ratio p50 |\n| --- | --- | --- | --- |")
        print("\n".join(observation(svc, a, args.runs)) + "\n")
        print("| what | ms |\n| --- | --- |")
        print("\n".join(behind_a_write(svc, b, 200)) + "\n")
        print("| ingest of one large version | ms | ratio |\n| --- | --- | --- |")
        print("\n".join(id_draw(svc, c, d, args.paragraphs, args.fill)))
    finally:
        if svc is not None:
            svc.close()
        stop_embedded(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
