"""Question salience's index counts at a million passages: where the ``assess`` stage goes.

    .venv/bin/python bench/bench_salience_counts.py [--families 2] [--growth 600] [--queries 60]

A tantivy-only bench (no PostgreSQL, no model): the corpus of ``bench_scale`` (real law
text, two families of 30-version DeckRV/VVG histories, ``--growth`` VAG copies coming into
force in the last third of the time) is cut into passages of ~100 words and written to one
``TenantIndex`` as the indexer writes (assertion per version, valid time ending where the
next version starts). Questions are 3-6 word phrases sampled from the law text, as an
actuary would ask them. For each question ``salient_aspects`` and ``support_in_force`` run
as ``assess`` runs them, through ``TenantIndex.counter`` at the current time and at a deep
as-of point; every count the counter makes is timed by kind (the in-force total, ``df``,
``known``, ``co_df``). Variants run interleaved per question on the same index.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c
import bench_scale as scale

from stichtag.domain.aspect_support import support_in_force
from stichtag.domain.salience import InForce, salient_aspects
from stichtag.index import tantivy_index as ti
from stichtag.index.fields import IndexedPassage
from stichtag.index.ranges import INF_US, micros

WORDS = 100


def passages_of(text: str) -> list[tuple[str, str]]:
    """(heading, body) chunks of about WORDS words, paragraphs kept whole."""
    out: list[tuple[str, str]] = []
    heading, buf = "", []
    for line in text.split("\n"):
        if line.startswith("#"):
            if buf:
                out.append((heading, " ".join(buf)))
                buf = []
            heading = line.lstrip("# ").strip()
        elif line.strip():
            buf.append(line.strip())
            if sum(len(b.split()) for b in buf) >= WORDS:
                out.append((heading, " ".join(buf)))
                buf = []
    if buf:
        out.append((heading, " ".join(buf)))
    return out


def build(index: ti.TenantIndex, events: Sequence[scale.Event]) -> tuple[int, float]:
    """Index every version's passages; returns (documents, seconds)."""
    nxt: dict[int, datetime] = {}
    last: dict[str, int] = {}
    for i, e in enumerate(events):
        if e.key in last:
            nxt[last[e.key]] = e.valid_from
        last[e.key] = i
    ids: dict[str, int] = {}
    docs, seq, t0 = 0, 0, time.perf_counter()
    batch: list[IndexedPassage] = []
    for i, e in enumerate(events):
        for ordinal, (heading, body) in enumerate(passages_of(e.text)):
            text = f"{heading} {body}"
            pid = ids.setdefault(text, len(ids) + 1)
            batch.append(IndexedPassage(
                assertion_id=i + 1, passage_id=pid, document=e.key, version_id=f"v{i}",
                start=ordinal, end=ordinal + 1, text=body, heading_path=heading,
                valid_from=micros(e.valid_from), valid_to=micros(nxt.get(i)),
                tx_from=micros(e.tx), tx_to=INF_US, confidentiality=0))
        if len(batch) >= 20_000 or i == len(events) - 1:
            seq += 1
            index.apply(upserts=batch, close=[], seq=seq)
            docs += len(batch)
            batch = []
            print(f"  indexed {docs:,} documents ({time.perf_counter() - t0:.0f} s)",
                  file=sys.stderr, flush=True)
    return docs, time.perf_counter() - t0


def questions(events: Sequence[scale.Event], n: int) -> list[str]:
    rng = random.Random(7)
    bodies = [b for e in events[:6] for _, b in passages_of(e.text) if len(b.split()) > 20]
    out = []
    for _ in range(n):
        words = rng.choice(bodies).split()
        k = rng.randint(3, 6)
        start = rng.randrange(0, len(words) - k)
        out.append("Was gilt für " + " ".join(words[start:start + k]) + "?")
    return out


class Timed:
    """An InForce whose every count is timed by kind."""

    def __init__(self, counter: Any, spent: dict[str, float], calls: dict[str, int]) -> None:
        self.counter, self.spent, self.calls = counter, spent, calls

    def wrap(self, kind: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*a: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a)
            finally:
                self.spent[kind] += time.perf_counter() - t
                self.calls[kind] += 1
        return call


def recount(index: ti.TenantIndex, *, valid_at: int, known_at: int,
            clearance: int) -> ti.TermCounter:
    """The counter before memoization: every count filtered by all five ranges, afresh."""
    return ti.TermCounter(index, index._searcher(), valid_at=valid_at, known_at=known_at,
                          clearance=clearance)


VARIANTS: dict[str, Callable[..., ti.TermCounter]] = {
    "recount (before)": recount,
    "memoized per index state": lambda index, **at: index.counter(**at),
}


def run(index: ti.TenantIndex, variant: str, question: str, at: tuple[int, int],
        spent: dict[str, float], calls: dict[str, int]) -> float:
    t0 = time.perf_counter()
    counter = VARIANTS[variant](index, valid_at=at[0], known_at=at[1], clearance=0)
    spent["total in force"] += time.perf_counter() - t0
    calls["total in force"] += 1
    w = Timed(counter, spent, calls)
    in_force = InForce(passages=counter.passages, df=w.wrap("df", counter.df),
                       vocabulary=w.wrap("known", counter.known),
                       co_df=w.wrap("co_df", counter.co_df))
    aspects = salient_aspects(question, in_force, documents=())
    support_in_force(aspects, in_force, ())
    return (time.perf_counter() - t0) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", type=int, default=2)
    parser.add_argument("--versions", type=int, default=30)
    parser.add_argument("--growth", type=int, default=600)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--index", type=Path, default=None,
                        help="keep the built index in DIR and reuse it when present")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    events = scale.plan(args.families, args.versions, args.growth)
    now = datetime.now(UTC)
    deep = scale.START + 2 * scale.STEP + timedelta(days=30)
    points = {"current": (micros(now), micros(now)), "deep as-of": (micros(deep), micros(deep))}
    with tempfile.TemporaryDirectory(prefix="stichtag-salience-") as tmp:
        where = args.index or Path(tmp)
        index = ti.TenantIndex(where, writer_heap_bytes=256 * 2**20)
        if index.applied_seq():
            docs, seconds = index.doc_count(), float("nan")
        else:
            docs, seconds = build(index, events)
        qs = questions(events, args.queries)
        rows = []
        for name, at in points.items():
            visible = recount(index, valid_at=at[0], known_at=at[1], clearance=0).passages
            spent: dict[str, dict[str, float]] = {v: defaultdict(float) for v in VARIANTS}
            calls: dict[str, dict[str, int]] = {v: defaultdict(int) for v in VARIANTS}
            walls: dict[str, list[float]] = {v: [] for v in VARIANTS}
            for i, q in enumerate(qs):  # interleaved, the order alternating
                for v in (list(VARIANTS) if i % 2 == 0 else list(reversed(VARIANTS))):
                    walls[v].append(run(index, v, q, at, spent[v], calls[v]))
            for v in VARIANTS:
                rows.append([name, v, f"{visible:,}", f"{c.percentile(walls[v], 0.5):.1f}",
                             f"{c.percentile(walls[v], 0.95):.1f}",
                             *(f"{spent[v][k] * 1000 / len(qs):.1f} ({calls[v][k] / len(qs):.1f})"
                               for k in ("total in force", "df", "known", "co_df"))])
        table = c.Table(
            f"salience counts: {docs:,} index documents (built in {seconds:.0f} s), "
            f"{len(qs)} questions; per question: ms (calls)",
            ["as of", "counter", "visible", "p50 ms", "p95 ms", "in-force total", "df",
             "known", "co_df"],
            rows)
        print(table.markdown() if args.markdown else table.text())
        index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
