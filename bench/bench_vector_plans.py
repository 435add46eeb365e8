"""The two vector plans across as-of dates: where filtering first stops paying off.

    .venv/bin/python bench/bench_vector_plans.py [--families 2] [--growth 60] [--queries 15]

The corpus is ``bench_scale``'s (real law text in 30-version histories plus late growth
documents, planted vectors). At a sweep of as-of dates, from the early history (about
1 % of the placements in force) to now (all of them), each query runs three statements
with ``PgRetrieval.nearest``'s settings, interleaved: ``vector_search`` (the visible
passages listed first, sorted exactly), ``vector_search_hnsw`` (HNSW drives, each
candidate checked through ``version_passages``) and the same HNSW statement before
0015, checking each candidate against the versions' passage arrays. The table gives the
median per statement, which plan the shipped rule (``hnsw_from_for``) picks there, and
what that costs against the faster of the two.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c
import bench_answer
import bench_scale as scale

from stichtag.services.documents import IngestRequest
from stichtag.store.retrieval import hnsw_from_for
from stichtag.store.sqlfiles import query

STATEMENTS = {"filter first": query("vector_search"),
              "HNSW + version_passages": query("vector_search_hnsw"),
              "HNSW + arrays (before 0015)": bench_answer.BEFORE_0015["vector_search_hnsw"]}
STEPS = (0, 10, 18, 20, 21, 22, 24, 26, 28, None)  # bench_scale version steps; None: now


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", type=int, default=2)
    parser.add_argument("--versions", type=int, default=30)
    parser.add_argument("--growth", type=int, default=60)
    parser.add_argument("--queries", type=int, default=15)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    events = scale.plan(args.families, args.versions, args.growth)
    model = scale.BenchEmbedder(c.embedder("int8"))
    texts = scale.queries(args.queries, model)
    with c.services(model) as svc:
        where = c.machine(svc)
        who = c.tenant(svc, "plans")
        for n, e in enumerate(events, start=1):
            svc.documents.ingest(who, e.key, IngestRequest(text=e.text, valid_from=e.valid_from,
                                                           tx_time=e.tx))
            if n % 50 == 0:
                c.say(f"ingested {n}/{len(events)}")
        c.say("planting synthetic vectors, rebuilding HNSW")
        scale.write_vectors(svc, who, model.model_hash)
        table = c.Table(f"Vector plans by as-of date, {len(texts)} queries each, median ms",
                        ["as of", "visible placements (share)", *STATEMENTS,
                         "the rule picks", "its cost / the faster plan"])
        with svc.store.tx(who.tenant_id) as conn:
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            conn.execute("SET LOCAL hnsw.ef_search = 200")
            for step in STEPS:
                at = (datetime.now(UTC) if step is None
                      else scale.START + step * scale.STEP + timedelta(days=30))
                params = {"valid_at": at, "known_at": at, "clearance": who.clearance, "k": 50,
                          "model_hash": model.model_hash}
                row = conn.execute(query("visible_placement_count"), params).fetchone()
                assert row is not None
                visible, passages = int(row[0]), int(row[1])
                ms: dict[str, list[float]] = {name: [] for name in STATEMENTS}
                for i, text in enumerate(texts):
                    params["query"] = model.vectors[text]
                    names = list(STATEMENTS)
                    for name in names[i % 3:] + names[:i % 3]:
                        t0 = time.perf_counter()
                        conn.execute(STATEMENTS[name], params).fetchall()  # type: ignore[call-overload]
                        ms[name].append((time.perf_counter() - t0) * 1000)
                med = {name: statistics.median(v) for name, v in ms.items()}
                hnsw = visible >= hnsw_from_for(passages)
                picked = med["HNSW + version_passages" if hnsw else "filter first"]
                best = min(med["HNSW + version_passages"], med["filter first"])
                table.rows.append([
                    "now" if step is None else at.date().isoformat(),
                    f"{visible:,} ({visible / max(passages, 1):.1%})",
                    *[f"{med[name]:.1f}" for name in STATEMENTS],
                    "HNSW" if hnsw else "filter first", f"{picked / best:.2f}x"])
                c.say(f"as of {at.date()}: {visible:,} visible")
        table.notes += [
            f"tenant: {passages:,} passages; the rule: HNSW from "
            f"sqrt(180 x passages) = {hnsw_from_for(passages):,} visible placements "
            "(app/stichtag/store/retrieval.py, HNSW_RATIO).",
            "statements with PgRetrieval.nearest's settings (iterative scan relaxed_order, "
            "ef_search 200), k = 50, in one read transaction, order rotating per query."]
    c.emit([table])
    seconds = time.perf_counter() - started
    print(f"\nbenchmark run time {seconds:.0f} s")
    if args.markdown:
        command = ".venv/bin/python bench/bench_vector_plans.py " + " ".join(
            argv or sys.argv[1:])
        print("\n" + c.markdown("The two vector plans by as-of date", [table],
                                command=command, where=where, seconds=seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
