"""Peak memory of the index catch-up on a large tenant, per process (docs/operations.md, "Derived
indexes").

    nice .venv/bin/python bench/bench_catchup_memory.py [--families 2] [--growth 600]
        [--rounds 1] [--markdown]

The parent loads bench_scale's corpus (real law text; ``--growth 600`` gives ~1.08M
passage placements in 720 versions) into a fresh embedded PostgreSQL as a bulk load,
without a model: nothing is indexed or embedded yet. Each variant then runs in a child
process of its own, with its own tantivy directory, over that database. Each child reports
its peak RSS (``VmHWM``; PostgreSQL's processes are not counted):

- ``index sync: lexical``: ``Indexer.sync_lexical``, the first half of
  ``stichtag index sync``, the whole outbox;
- ``index sync: embedding``: ``Indexer.embed_pending`` with the real e5 int8 model,
  ``--rounds`` rounds of ``EMBED_BATCH`` passages picked from the whole backlog (every
  passage is pending). A round's memory does not depend on how many rounds follow: the
  backlog is walked by id, a round at a time. Embedding all of it would take days here;
- ``server worker``: a server's ``Worker`` started on the tenant, until its lexical
  thread has applied the whole outbox and its embedding thread has embedded
  ``--rounds`` rounds; then it is stopped.

The child's baseline (the interpreter and the models loaded, nothing done) is reported
beside each, so the work's own memory is the difference.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c
import bench_scale as scale

from stichtag.config import Settings

VARIANTS = ("index sync: lexical", "index sync: embedding", "server worker")
GOAL_MB = 1024


def memory_mb(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (the peak) of this process's own address space, MB.

    Not ``ru_maxrss``: Linux carries the parent's peak into a child across fork and exec
    (``signal_struct.maxrss``), so a child of a large parent reports the parent's size."""
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def child(args: argparse.Namespace) -> int:
    """One variant in this process; prints one JSON line with what it measured."""
    from stichtag.bootstrap import bootstrap
    from stichtag.index import applier
    from stichtag.index.worker import Worker

    settings = Settings(data_dir=Path(args.data_dir), models_path=c.MODELS,
                        database_url=args.database_url, migration_database_url=None,
                        pool_min=1, pool_max=4)
    model = None if args.child == "index sync: lexical" else c.embedder("int8")
    svc = bootstrap(settings, run_migrations=False, embedder=model,
                    index_dir=Path(args.index_dir))
    tenant = UUID(args.tenant)
    indexer = svc.indexer
    indexer.index(tenant)  # the replica opened: part of the baseline
    base = memory_mb("VmRSS")
    t = time.perf_counter()
    out: dict[str, Any] = {}
    try:
        if args.child == "index sync: lexical":
            out["applied"] = indexer.sync_lexical(tenant)
        elif args.child == "index sync: embedding":
            out["embedded"] = indexer.embed_pending(tenant, max_batches=args.rounds)
        else:
            # the worker embeds until nothing is pending: stopped after the rounds
            assert model is not None
            target = args.rounds * applier.EMBED_BATCH
            head = indexer.outbox_head(tenant)
            # an earlier variant may have embedded some: count this process's own
            before = indexer.feed.pending_count(tenant, model_hash=model.model_hash)
            worker = Worker(indexer)
            worker.start()
            worker.submit(tenant)
            try:
                while True:
                    time.sleep(1.0)
                    pending = indexer.feed.pending_count(tenant, model_hash=model.model_hash)
                    out["embedded"] = before - pending
                    if indexer.index(tenant).applied_seq() >= head and out["embedded"] >= target:
                        break
            finally:
                worker.stop()
            out["applied"] = indexer.index(tenant).applied_seq()
    finally:
        svc.close()
    out.update(variant=args.child, seconds=time.perf_counter() - t, baseline_mb=base,
               peak_mb=memory_mb("VmHWM"))
    print(json.dumps(out), flush=True)
    return 0


def run_child(args: argparse.Namespace, variant: str, work: Path, url: str,
              tenant: UUID) -> dict[str, Any]:
    """A variant in a child process; its result line."""
    index_dir = work / f"index-{VARIANTS.index(variant)}"
    command = [sys.executable, __file__, "--child", variant, "--data-dir", str(work),
               "--index-dir", str(index_dir), "--database-url", url, "--tenant", str(tenant),
               "--rounds", str(args.rounds)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{variant}: the child failed ({done.returncode})")
    found: dict[str, Any] = json.loads(lines[-1])
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", type=int, default=2)
    parser.add_argument("--versions", type=int, default=30)
    parser.add_argument("--growth", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=1,
                        help="embedding rounds of EMBED_BATCH passages per embedding variant")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    parser.add_argument("--index-dir", help=argparse.SUPPRESS)
    parser.add_argument("--database-url", help=argparse.SUPPRESS)
    parser.add_argument("--tenant", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)
    variants = [v for v in args.variants.split(",") if v]
    if unknown := set(variants) - set(VARIANTS):
        parser.error(f"unknown variants {sorted(unknown)}")
    started = time.perf_counter()
    events = scale.plan(args.families, args.versions, args.growth)
    c.embedder("int8")  # builds the models now if needed, not inside a child
    with c.services(None) as svc:
        where = c.machine(svc)
        who = c.tenant(svc, "scale")
        ingest_s = scale.ingest(svc, who, events, bulk=True, label="catch-up memory: ")
        with c.admin(svc) as conn:
            passages, placements, outbox = conn.execute(
                "SELECT (SELECT count(*) FROM passages WHERE tenant_id = %(t)s), "
                "(SELECT count(*) FROM version_passages WHERE tenant_id = %(t)s), "
                "(SELECT count(*) FROM outbox WHERE tenant_id = %(t)s)",
                {"t": who.tenant_id}).fetchone()  # type: ignore[misc]
        work = svc.settings.data_dir
        results = []
        for variant in variants:
            c.say(f"catch-up memory: {variant}")
            results.append(run_child(args, variant, work, svc.urls.app_url, who.tenant_id))
            c.say(f"catch-up memory: {variant}: {results[-1]}")
    table = c.Table(f"Index catch-up per process, bench_scale's corpus ({len(events)} versions, "
                    f"{passages:,} passages, {placements:,} placements, {outbox:,} outbox "
                    "rows)", ["variant", "work done", "seconds", "baseline RSS (MB)",
                              "peak RSS (MB)", "peak - baseline (MB)", f"<= {GOAL_MB} MB"])
    for r in results:
        done = ", ".join(f"{k} {r[k]:,}" for k in ("applied", "embedded") if k in r)
        table.rows.append([r["variant"], done, f"{r['seconds']:.0f}", f"{r['baseline_mb']:,.0f}",
                           f"{r['peak_mb']:,.0f}",
                           f"{r['peak_mb'] - r['baseline_mb']:,.0f}",
                           "yes" if r["peak_mb"] <= GOAL_MB else "no"])
    table.notes += [
        f"ingest (bulk, in the parent, no index): {ingest_s:.0f} s.",
        "peak RSS = the child's VmHWM (its own address space's high-water mark); baseline = "
        "its VmRSS after bootstrap, the model loaded (embedding variants) and the replica "
        "opened, before any work.",
        f"embedding variants: {args.rounds} round(s) of the e5 int8 model over a backlog of "
        f"{passages:,} pending passages; 'applied' is the outbox position reached.",
    ]
    c.emit([table])
    seconds = time.perf_counter() - started
    print(f"benchmark run time {seconds:.0f} s")
    if args.markdown:
        command = " ".join([".venv/bin/python bench/bench_catchup_memory.py",
                            *(sys.argv[1:] if argv is None else argv)])
        print("\n" + c.markdown("Index catch-up memory per process", [table], command=command,
                                where=where, seconds=seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
