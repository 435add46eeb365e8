"""Search latency at >= 100k passages: current-time vs as-of queries, HNSW vs exact.

    .venv/bin/python bench/bench_scale.py [--quick] [--families 7] [--growth 60] [--queries 100]

**What is real and what is synthetic.** Texts are real law text, replicated: the newest
Markdown DeckRV and VVG 2008 are copied into ``--families`` families (family f >= 1 gets
" (Teil f)" appended to every heading, so its passages are distinct from the others' —
the heading path is part of each passage's text). Each family document gets a
**30-version history** (valid and transaction times every 61 days from 2020-01-01,
ingested with admin-import transaction times, in order): version j re-edits ~3 % of the
paragraphs (numbers shifted, or a marker appended), cumulatively. The corpus also
**grows**: ``--growth`` single-version documents (VAG 2016 copies, same heading trick)
come into force — and become known — only in the last third of that time, as a tenant's
collection grows. An early as-of point therefore sees the early history only, a small
fraction of all vectors: the hard case for a filtered HNSW scan.

**Embeddings are synthetic** (embedding ~100k passages on 2 busy cores would take hours):
each passage (origin = document law and passage ordinal) gets a unit vector = a random
"topic" centre for its origin plus Gaussian noise (cosine ~0.93 to the centre), so the
versions and family copies of one passage form a tight cluster, as near-identical texts
do under a real model. They are written as the superuser with the current model hash, the
HNSW index ``passages_embedding`` being dropped first and re-created afterwards with its
exact definition (one bulk build instead of 100k incremental inserts). Query vectors are
the centre of a sampled passage's origin plus more noise; the query *texts* are 4 long
words of that passage. ``retrieve`` gets these vectors through a bench embedder that still
runs the real e5 model on the query text first, so the model's cost is paid as in
production.

**Measured**, interleaved per query (order rotating), at three as-of points — *current*
(now/now), *deep as-of* (valid_at = known_at = 30 days after version 2 of 30), and *past
valid, known now* — for (a) ``SearchService.retrieve`` (k=10), (b) lexical only
(``TenantIndex.search``, 50), (c) the ``vector_search`` SQL (HNSW, iterative scan, 50)
and (d) ``vector_search_exact`` (50), both with ``visible_placements`` as in retrieve:
p50/p95 per point, the as-of/current ratio (goal <= 1.2x), and HNSW recall@10 against
the exact list on the same filter (goal >= 0.95).

``--quick`` (1 family, 4 growth documents, 30 queries) is a smoke test.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

from stichtag.bootstrap import Services
from stichtag.domain.prepared import prepare
from stichtag.domain.text import normalize
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest

DIMS = 384
START = datetime(2020, 1, 1, tzinfo=UTC)
STEP = timedelta(days=61)
CHANGE = 0.03  # share of paragraphs each new version edits
NOISE = 0.02  # per-dimension sigma around a topic centre: cosine ~0.93
QUERY_NOISE = 0.035
K_SEARCH, K_LIST = 10, 50
VARIANTS = ("retrieve", "lexical", "vector hnsw", "vector exact")
POINTS = ("current", "deep as-of", "past valid, known now")


# -- the corpus -------------------------------------------------------------------------


def newest(law: str) -> str:
    """The text of a law's largest (newest) Markdown version in the shared corpus."""
    folder = c.shared("corpus", "de-insurance-law", law)
    return max(folder.glob("*.md"), key=lambda p: p.stat().st_size).read_text(encoding="utf-8")


def family_copy(text: str, family: int) -> str:
    """The law text with " (Teil f)" after every heading (family 0: unchanged)."""
    if family == 0:
        return text
    return "\n".join(f"{line} (Teil {family})" if line.startswith("#") else line
                     for line in text.split("\n"))


def history(text: str, versions: int, seed: str) -> list[str]:
    """The texts of a ``versions``-long history that starts with ``text``.

    Version j >= 1 touches each paragraph with probability CHANGE (a hash decides, so it
    is deterministic); a paragraph touched n times so far shows its numbers shifted by n.
    """
    original = text.split("\n")
    lines = list(original)
    body = c.paragraphs(text)
    touches = dict.fromkeys(body, 0)
    out = [text]
    for j in range(1, versions):
        for i in body:
            if _unit(f"{seed}:{i}:{j}") < CHANGE:
                touches[i] += 1
                lines[i] = c.edit_paragraph(original[i], touches[i])
        out.append("\n".join(lines))
    return out


def _unit(label: str) -> float:
    """A deterministic number in [0, 1) from a label."""
    return int.from_bytes(hashlib.blake2b(label.encode(), digest_size=8).digest(), "big") / 2**64


@dataclass(frozen=True)
class Event:
    """One version to ingest, in transaction-time order."""

    tx: datetime
    key: str
    text: str
    valid_from: datetime


def plan(families: int, versions: int, growth: int) -> list[Event]:
    """Every ingest of the corpus, sorted by transaction time."""
    bases = {"deckrv": newest("deckrv"), "vvg": newest("vvg2008")}
    vag = newest("vag2016")
    events = []
    for f in range(families):
        for law, base in bases.items():
            texts = history(family_copy(base, f), versions, f"{law}-{f}")
            for j, text in enumerate(texts):
                valid = START + j * STEP
                events.append(Event(tx=valid + timedelta(days=1, seconds=f), key=f"{law}-{f}",
                                    text=text, valid_from=valid))
    late, end = START + (2 * versions // 3) * STEP, START + versions * STEP
    for g in range(growth):
        valid = late + (end - late) * g / max(growth, 1)
        events.append(Event(tx=valid + timedelta(hours=12), key=f"vag-{g}",
                            text=family_copy(vag, g + 1), valid_from=valid))
    return sorted(events, key=lambda e: (e.tx, e.key))


def ingest(svc: Services, who: Principal, events: list[Event], *, bulk: bool = False,
           label: str = "") -> float:
    """Ingest the plan's versions in order, with progress; the seconds it took."""
    c.say(f"{label}ingesting {len(events)} versions" + (" (bulk)" if bulk else ""))
    t = time.perf_counter()
    for n, e in enumerate(events, start=1):
        svc.documents.ingest(who, e.key, IngestRequest(
            text=e.text, valid_from=e.valid_from, tx_time=e.tx, bulk=bulk))
        if n % 100 == 0:
            c.say(f"{label}ingested {n}/{len(events)}")
    return time.perf_counter() - t


# -- synthetic vectors ------------------------------------------------------------------


def unit(seed: str, centre: npt.NDArray[np.float32] | None = None,
         sigma: float = 0.0) -> npt.NDArray[np.float32]:
    """A deterministic unit vector: random direction, or ``centre`` plus noise."""
    rng = np.random.default_rng(int.from_bytes(hashlib.blake2b(seed.encode(), digest_size=8)
                                               .digest(), "big"))
    v = rng.standard_normal(DIMS) if centre is None else centre + sigma * rng.standard_normal(DIMS)
    return (v / np.linalg.norm(v)).astype(np.float32)


def origin(key: str, ordinal: int) -> str:
    """A passage's topic: its law (family and growth copies share it) and ordinal."""
    return f"{key.rsplit('-', 1)[0]}:{ordinal}"


def write_vectors(svc: Services, who: Principal, model_hash: str) -> tuple[int, float, float]:
    """Synthetic embeddings for every passage; (count, write seconds, HNSW build seconds)."""
    with c.admin(svc) as conn:
        (indexdef,) = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'passages_embedding'").fetchone()  # type: ignore[misc]
        rows = conn.execute(
            "SELECT DISTINCT ON (pl.passage_id) pl.passage_id, d.key, pl.ordinal "  # type: ignore[operator]
            f"FROM ({c.placements(conn)}) pl JOIN assertions a "
            "  ON a.tenant_id = pl.tenant_id AND a.version_id = pl.version_id "
            "JOIN documents d ON d.document_id = a.document_id "
            "WHERE pl.tenant_id = %s ORDER BY pl.passage_id, a.assertion_id, pl.ordinal",
            (who.tenant_id,)).fetchall()
        started = time.perf_counter()
        conn.execute("DROP INDEX passages_embedding")
        centres: dict[str, npt.NDArray[np.float32]] = {}
        conn.execute("CREATE TEMP TABLE synthetic (passage_id bigint, embedding vector(384))")
        with conn.cursor() as cur, cur.copy(
                "COPY synthetic (passage_id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "vector"])
            for pid, key, ordinal in rows:
                topic = origin(key, ordinal)
                if topic not in centres:
                    centres[topic] = unit(topic)
                copy.write_row((pid, unit(f"p{pid}", centres[topic], NOISE)))
        conn.execute("UPDATE passages p SET embedding = s.embedding, model_hash = %s "
                     "FROM synthetic s WHERE p.passage_id = s.passage_id", (model_hash,))
        written = time.perf_counter() - started
        started = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute(indexdef)  # the migration's own definition, verbatim
        built = time.perf_counter() - started
        conn.execute("VACUUM ANALYZE passages")
        conn.execute("ANALYZE versions")
        conn.execute("ANALYZE assertions")
        if c.placements(conn) == c.PLACEMENTS_TABLE:
            conn.execute("ANALYZE version_passages")
    return len(rows), written, built


class BenchEmbedder:
    """The Embedder port for ``retrieve``: runs the real model, returns the synthetic vector."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.vectors: dict[str, npt.NDArray[np.float32]] = {}

    @property
    def model_hash(self) -> str:
        """The real model's hash (the synthetic vectors are stored under it)."""
        return str(self.real.model_hash)

    def __getattr__(self, name: str) -> Any:
        """Everything else (manifest, dims, variant) is the real model's."""
        return getattr(self.real, name)

    def embed_queries(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Pay the real query-embedding cost, then hand out the planted vectors."""
        self.real.embed_queries(texts)
        return np.stack([self.vectors[t] for t in texts])

    def embed_passages(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Never called: every passage already carries a (synthetic) embedding."""
        raise AssertionError("bench_scale plants all passage vectors itself")


# -- queries and measurement ------------------------------------------------------------


def queries(n: int, model: BenchEmbedder) -> list[str]:
    """``n`` query texts from real passages, each with a planted query vector."""
    rng = np.random.default_rng(20240101)
    sources: dict[bool, list[tuple[str, int, list[str]]]] = {True: [], False: []}
    for law, name in (("deckrv", "deckrv"), ("vvg", "vvg2008"), ("vag", "vag2016")):
        for p in prepare(normalize(newest(name)), "text/markdown").passages:
            words = [w.strip(".,;:()") for w in p.embed_text.split("\n", 1)[-1].split()]
            words = [w for w in words if len(w) >= 6 and w.isalpha()]
            if len(words) >= 4:
                sources[law != "vag"].append((law, p.ordinal, words))
    # Half the queries are about the laws with a history, half about the growth documents
    # (which an early as-of point cannot see yet).
    picked = [pool[i] for pool, m in ((sources[True], n - n // 2), (sources[False], n // 2))
              for i in rng.choice(len(pool), size=m, replace=False)]
    out: list[str] = []
    for i, (law, ordinal, words) in enumerate(picked):
        text = " ".join(sorted(set(words), key=lambda w: (-len(w), w))[:4])
        if text in model.vectors:
            text = f"{text} {i}"
        topic = f"{law}:{ordinal}"
        model.vectors[text] = unit(f"q{i}", unit(topic), QUERY_NOISE)
        out.append(text)
    return out


def visible(svc: Services, who: Principal, at: tuple[datetime, datetime]) -> tuple[int, int]:
    """(distinct passages, placements) visible at the as-of pair."""
    with svc.store.tx(who.tenant_id) as conn:
        row = conn.execute(
            f"SELECT count(DISTINCT pl.passage_id), count(*) FROM ({c.placements(conn)}) pl "  # type: ignore[arg-type]
            "JOIN assertions a ON a.tenant_id = pl.tenant_id AND a.version_id = pl.version_id "
            "WHERE a.tx @> %s::timestamptz AND a.valid @> %s::timestamptz", (at[1], at[0])
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


Latencies = dict[tuple[str, str], list[float]]


def measure(svc: Services, who: Principal, model: BenchEmbedder, texts: list[str],
            points: dict[str, tuple[datetime, datetime]]
            ) -> tuple[Latencies, dict[str, list[float]], dict[str, int]]:
    """Latencies per (variant, point), HNSW recall@10 per point, short HNSW lists per point."""
    combos = [(v, p) for v in VARIANTS for p in points]
    times: dict[tuple[str, str], list[float]] = {combo: [] for combo in combos}
    recall: dict[str, list[float]] = {p: [] for p in points}
    short: dict[str, int] = dict.fromkeys(points, 0)
    for i, text in enumerate(texts):
        qvec = model.vectors[text]
        lists: dict[tuple[str, str], list[int]] = {}
        shift = i % len(combos)
        for variant, point in combos[shift:] + combos[:shift]:
            valid_at, known_at = points[point]
            started = time.perf_counter()
            if variant == "retrieve":
                svc.search.retrieve(who, text, valid_at=valid_at, known_at=known_at, k=K_SEARCH)
            elif variant == "lexical":
                c.lexical(svc, who, text, valid_at=valid_at, known_at=known_at, k=K_LIST)
            else:
                nearest, _ = c.vector(svc, who, qvec, valid_at=valid_at, known_at=known_at,
                                      k=K_LIST, exact=variant == "vector exact")
                ranked = sorted(nearest, key=lambda r: (r[1], r[0]))
                lists[(variant, point)] = [p for p, _ in ranked]
            times[(variant, point)].append((time.perf_counter() - started) * 1000)
        for point in points:
            approx, exact = lists[("vector hnsw", point)], lists[("vector exact", point)]
            short[point] += len(approx) < min(K_LIST, len(exact))
            if exact:
                top = set(exact[:K_SEARCH])
                recall[point].append(len(top & set(approx[:K_SEARCH])) / len(top))
        if (i + 1) % 10 == 0:
            c.say(f"query {i + 1}/{len(texts)}")
    return times, recall, short


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="1 family, 4 growth documents, 30 queries (smoke test)")
    parser.add_argument("--families", type=int, default=7,
                        help="DeckRV+VVG copies, each with a 30-version history")
    parser.add_argument("--versions", type=int, default=30)
    parser.add_argument("--growth", type=int, default=60,
                        help="single-version VAG copies that come into force late")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--explain", action="store_true",
                        help="print EXPLAIN ANALYZE of both vector blocks at each point")
    parser.add_argument("--markdown", action="store_true",
                        help=f"print the Markdown sub-section for {c.DOC.name} at the end")
    args = parser.parse_args(argv)
    if args.quick:
        args.families, args.growth, args.queries = 1, 4, 30
    started = time.perf_counter()
    c.say("planning the corpus")
    events = plan(args.families, args.versions, args.growth)
    model = BenchEmbedder(c.embedder("int8"))
    texts = queries(args.queries, model)
    with c.services(model) as svc:
        where = c.machine(svc)
        who = c.tenant(svc, "scale")
        ingest_s = ingest(svc, who, events)
        c.say("tantivy: applying the outbox")
        t = time.perf_counter()
        svc.indexer.sync_lexical(who.tenant_id)
        lexical_s = time.perf_counter() - t
        c.say("planting synthetic vectors, rebuilding HNSW")
        n_vectors, write_s, build_s = write_vectors(svc, who, model.model_hash)
        assert svc.indexer.status(who.tenant_id).pending_embeddings == 0
        now = datetime.now(UTC)
        deep = START + 2 * STEP + timedelta(days=30)
        points = {"current": (now, now), "deep as-of": (deep, deep),
                  "past valid, known now": (deep, now)}
        seen = {p: visible(svc, who, at) for p, at in points.items()}
        with svc.store.tx(who.tenant_id) as conn:
            placed = conn.execute(f"SELECT count(*) FROM ({c.placements(conn)}) pl"  # type: ignore[arg-type]
                                  ).fetchone()[0]  # type: ignore[index]
            assertions = conn.execute("SELECT count(*) FROM assertions").fetchone()[0]  # type: ignore[index]
        tantivy_docs = svc.indexer.index(who.tenant_id).doc_count()
        for text in texts[:5]:  # warm-up: caches, query plans, the ONNX session
            for at in points.values():
                svc.search.retrieve(who, text, valid_at=at[0], known_at=at[1], k=K_SEARCH)
        plans = {(exact, p): c.explain(svc, who, model.vectors[texts[0]], valid_at=at[0],
                                       known_at=at[1], k=K_LIST, exact=exact)
                 for exact in (False, True) for p, at in points.items()}
        if args.explain:
            for (exact, p), lines in plans.items():
                print(f"-- {'vector_search_exact' if exact else 'vector_search'} at {p}")
                print("\n".join(lines) + "\n")
        c.say(f"measuring {len(texts)} queries x {len(VARIANTS)} variants x {len(points)} points")
        times, recall, short = measure(svc, who, model, texts, points)

    corpus = c.Table("Scale corpus (one tenant)", ["measure", "value"])
    corpus.rows += [
        ["documents with a history (DeckRV + VVG copies) x versions",
         f"{2 * args.families} x {args.versions}"],
        ["growth documents (VAG copies, in force in the last third)", args.growth],
        ["versions ingested / assertions", f"{len(events):,} / {assertions:,}"],
        ["passage placements (passage x version)", f"{placed:,}"],
        ["distinct passages = vectors in HNSW (synthetic)", f"{n_vectors:,}"],
        ["tantivy documents (assertion x passage)", f"{tantivy_docs:,}"],
        *[[f"visible at {p}: passages / placements", f"{seen[p][0]:,} / {seen[p][1]:,}"]
          for p in points],
        ["ingest, real text (s)", f"{ingest_s:.0f}"],
        ["tantivy catch-up (s)", f"{lexical_s:.0f}"],
        ["write synthetic vectors / build HNSW (s)", f"{write_s:.0f} / {build_s:.0f}"],
    ]
    latency = c.Table(f"Search latency, {len(texts)} queries, interleaved (ms)",
                      ["variant", *[f"{p} p50 / p95" for p in points],
                       *[f"{p}/current p50, p95" for p in POINTS[1:]]])
    for v in VARIANTS:
        cur = times[(v, "current")]
        cells = [f"{c.percentile(times[(v, p)], 0.5):.1f} / {c.percentile(times[(v, p)], 0.95):.1f}"
                 for p in points]
        ratios = [f"{c.ratio(c.percentile(times[(v, p)], 0.5), c.percentile(cur, 0.5))}, "
                  f"{c.ratio(c.percentile(times[(v, p)], 0.95), c.percentile(cur, 0.95))}"
                  for p in POINTS[1:]]
        latency.rows.append([v, *cells, *ratios])
    latency.notes += [
        "goal: as-of <= 1.2x current; DESIGN bar: extractive answer p95 <= 300 ms at 100k "
        "passages (retrieve is its retrieval part).",
        f"retrieve = SearchService.retrieve (k={K_SEARCH}; outbox check, tantivy, real e5 query "
        f"embedding, HNSW, placements, RRF, re-read); lexical = TenantIndex.search ({K_LIST}); "
        f"vector = the vector_search / vector_search_exact SQL ({K_LIST}) + visible_placements, "
        "with retrieve's settings (iterative_scan relaxed_order, ef_search 200), no embedding.",
    ]
    quality = c.Table(f"HNSW vs exact on the same filter, {len(texts)} queries",
                      ["as-of point", "recall@10 mean", "min", "queries < 1.0",
                       f"HNSW lists shorter than exact ({K_LIST})", "vector_search plan",
                       "vector_search_exact plan"])
    for p in points:
        r = recall[p]
        quality.rows.append([p, f"{float(np.mean(r)):.3f}", f"{min(r):.2f}",
                             sum(x < 1 for x in r), short[p], c.plan_shape(plans[(False, p)]),
                             c.plan_shape(plans[(True, p)])])
    quality.notes += ["goal: recall@10 >= 0.95; vectors are synthetic (see the corpus note).",
                      "plan: what PostgreSQL chose for the first query at that point "
                      "(--explain prints the plans)."]
    tables = [corpus, latency, quality]
    c.emit(tables)
    seconds = time.perf_counter() - started
    print(f"benchmark run time {seconds:.0f} s")
    if args.markdown:
        command = " ".join([".venv/bin/python bench/bench_scale.py",
                            *(sys.argv[1:] if argv is None else argv)])
        print("\n" + c.markdown("Search latency at scale, as of", tables, command=command,
                                where=where, seconds=seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
