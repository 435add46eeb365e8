"""Retrieval quality on CLAPnq dev: BM25 alone vs vectors alone vs the fused list.

    .venv/bin/python bench/bench_retrieval.py [--quick] [--variant int8|float] [--markdown]

Reads ``../shared/eval/clapnq/clapnq_dev_{answerable,unanswerable}.jsonl``. Every distinct
passage of both files becomes one document (``text/plain``, valid from 2020-01-01) of a
fresh tenant on a new embedded PostgreSQL; the indexer then catches up (tantivy and every
passage embedding). Each answerable question has one gold passage, so the gold document is
known; for every question the three candidate lists are computed in the same loop:

- **bm25**: ``TenantIndex.search`` (what ``retrieve`` asks tantivy for);
- **vector**: the ``vector_search`` SQL block (HNSW + iterative scan, ``retrieve``'s
  settings) and ``visible_placements``, ranked as ``retrieve`` ranks them;
- **fused**: ``SearchService.retrieve`` (both lists, reciprocal-rank fusion, re-read).

A long CLAPnq passage is split into several stichtag passages (at most 600 characters),
so hits are mapped to their document. **Recall@k** counts a question as found when the
gold document is among the first k *distinct documents* of the list — the unit of the
DESIGN reference figures (one CLAPnq passage = one unit); the passage-level figure (gold
document among the first k passages) is reported too. ``--quick`` uses the first 60
answerable questions and only the documents they and 60 unanswerable ones bring.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c

from stichtag.services.documents import IngestRequest

KS = (1, 5, 10)
DEPTH = 50  # candidates per list, as SearchService.retrieve uses (CANDIDATES)
VALID_FROM = datetime(2020, 1, 1, tzinfo=UTC)
VARIANTS = ("bm25", "vector", "fused")


@dataclass(frozen=True)
class Question:
    """An answerable CLAPnq question and the key of its gold document."""

    text: str
    gold: str


def load(quick: bool) -> tuple[dict[str, str], list[Question], int]:
    """Documents (key -> text), answerable questions, and how many passages were repeats."""
    root = c.shared("eval", "clapnq")
    files = {kind: root / f"clapnq_dev_{kind}.jsonl" for kind in ("answerable", "unanswerable")}
    for path in files.values():
        if not path.is_file():
            c.shared("eval", "clapnq", path.name)
    docs: dict[str, str] = {}
    key_of: dict[str, str] = {}
    questions: list[Question] = []
    repeats = 0
    for kind, path in files.items():
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]
        if quick:
            rows = rows[:60]
        for row in rows:
            keys = []
            for passage in row["passages"]:
                text = passage["text"].strip()
                if text in key_of:
                    repeats += 1
                else:
                    key_of[text] = f"clapnq-{len(key_of):04d}"
                    docs[key_of[text]] = text
                keys.append(key_of[text])
            if kind == "answerable":
                questions.append(Question(text=row["input"], gold=keys[0]))
    return docs, questions, repeats


def distinct(documents: Iterable[str]) -> list[str]:
    """Documents in first-occurrence order."""
    return list(dict.fromkeys(documents))


def found_at(ranked: Sequence[str], gold: str, k: int) -> bool:
    """Whether ``gold`` is among the first ``k`` entries."""
    return gold in ranked[:k]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="60 + 60 questions (smoke test)")
    parser.add_argument("--variant", choices=("int8", "float"), default="int8",
                        help="embedding graph (the server default is int8)")
    parser.add_argument("--markdown", action="store_true",
                        help=f"print the Markdown sub-section for {c.DOC.name} at the end")
    args = parser.parse_args(argv)
    docs, questions, repeats = load(args.quick)
    started = time.perf_counter()
    model = c.embedder(args.variant)
    with c.services(model) as svc:
        where = c.machine(svc)
        who = c.tenant(svc, "clapnq")
        c.say(f"ingesting {len(docs)} documents")
        t = time.perf_counter()
        owner: dict[int, str] = {}
        for key, text in docs.items():
            result = svc.documents.ingest(who, key, IngestRequest(
                text=text, media_type="text/plain", valid_from=VALID_FROM))
            assert result.assertion is not None
            owner[result.assertion.assertion_id] = key
        ingest_s = time.perf_counter() - t
        c.say("catching up the indexer (tantivy + embeddings)")
        t = time.perf_counter()
        status = svc.indexer.catch_up(who.tenant_id)
        catch_up_s = time.perf_counter() - t
        assert status.pending_embeddings == 0, status
        with svc.store.tx(who.tenant_id) as conn:
            n_passages = conn.execute("SELECT count(*) FROM passages").fetchone()[0]  # type: ignore[index]
            n_placed = conn.execute(f"SELECT count(*) FROM ({c.placements(conn)}) pl"  # type: ignore[arg-type]
                                    ).fetchone()[0]  # type: ignore[index]

        now = datetime.now(UTC)
        found = {v: {k: 0 for k in KS} for v in VARIANTS}
        found_passage = {v: {k: 0 for k in KS} for v in VARIANTS}
        latency: dict[str, list[float]] = {v: [] for v in VARIANTS}
        c.say(f"{len(questions)} questions x {len(VARIANTS)} variants")
        for i, q in enumerate(questions):
            ranked: dict[str, list[str]] = {}
            # Rotate the order so no variant always runs first (warm caches, query vector).
            for variant in VARIANTS[i % 3:] + VARIANTS[:i % 3]:
                t = time.perf_counter()
                if variant == "bm25":
                    keys = c.lexical(svc, who, q.text, valid_at=now, known_at=now, k=DEPTH)
                    ranked[variant] = [owner[a] for a, _ in keys]
                elif variant == "vector":
                    qvec = model.embed_queries([q.text])[0]
                    nearest, placements = c.vector(svc, who, qvec, valid_at=now, known_at=now,
                                                   k=DEPTH)
                    sits: dict[int, list[int]] = {}
                    for pid, aid, _ in placements:
                        sits.setdefault(pid, []).append(aid)
                    order = sorted(nearest, key=lambda r: (r[1], r[0]))
                    ranked[variant] = [owner[a] for pid, _ in order
                                       for a in sorted(sits.get(pid, []))]
                else:
                    hits, _, _ = svc.search.retrieve(who, q.text, valid_at=now, known_at=now,
                                                     k=DEPTH, candidates=DEPTH)
                    ranked[variant] = [h.document for h in hits]
                latency[variant].append((time.perf_counter() - t) * 1000)
            for variant, passages in ranked.items():
                by_doc = distinct(passages)
                for k in KS:
                    found[variant][k] += found_at(by_doc, q.gold, k)
                    found_passage[variant][k] += found_at(passages, q.gold, k)

    n = len(questions)
    corpus = c.Table("CLAPnq dev corpus as indexed", ["measure", "value"])
    corpus.rows += [
        ["documents (distinct CLAPnq passages, both files)", f"{len(docs):,}"],
        ["  repeated passages merged", repeats],
        ["stichtag passages (embedded) / placements", f"{n_passages:,} / {n_placed:,}"],
        ["answerable questions scored", n],
        ["ingest (s)", f"{ingest_s:.1f}"],
        [f"indexer catch-up incl. embedding, {args.variant} (s)",
         f"{catch_up_s:.1f} ({n_passages / catch_up_s:.0f} passages/s)"],
    ]
    recall = c.Table(f"Recall of the gold document, {n} answerable questions "
                     f"(e5-small {args.variant})",
                     ["variant", *[f"found@{k}" for k in KS], *[f"R@{k}" for k in KS],
                      "passage R@1", "passage R@10", "p50 ms"])
    for variant in VARIANTS:
        recall.rows.append([
            variant, *[found[variant][k] for k in KS],
            *[f"{found[variant][k] / n:.3f}" for k in KS],
            f"{found_passage[variant][1] / n:.3f}", f"{found_passage[variant][10] / n:.3f}",
            f"{c.median(latency[variant]):.1f}"])
    for base in ("bm25", "vector"):
        recall.rows.append([f"fused/{base}", "", "", "",
                            *[c.ratio(found["fused"][k], found[base][k]) for k in KS],
                            c.ratio(found_passage["fused"][1], found_passage[base][1]),
                            c.ratio(found_passage["fused"][10], found_passage[base][10]),
                            c.ratio(c.median(latency["fused"]), c.median(latency[base]))])
    recall.notes += [
        "R@k: gold document among the first k distinct documents of the list (the unit of "
        "the DESIGN reference: BM25 0.91/0.98, e5 0.95/0.997, RRF 0.947/0.997 at @1/@10 on "
        "596 passages); passage R@k: among the first k passages.",
        f"every list is {DEPTH} candidates deep, as in retrieve; vector = HNSW (ef_search 200, "
        "iterative scan), fused = SearchService.retrieve (RRF k=60, re-read from PostgreSQL).",
        "p50 ms per question includes query embedding for vector and fused, and tantivy's "
        "outbox check for fused.",
    ]
    tables = [corpus, recall]
    c.emit(tables)
    seconds = time.perf_counter() - started
    print(f"benchmark run time {seconds:.0f} s")
    if args.markdown:
        command = " ".join([".venv/bin/python bench/bench_retrieval.py",
                            *(sys.argv[1:] if argv is None else argv)])
        print("\n" + c.markdown("Retrieval quality (CLAPnq dev)", tables, command=command,
                                where=where, seconds=seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
