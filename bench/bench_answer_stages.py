"""Where law answers spend their time: per-stage p50/p95 and the slowest questions.

    .venv/bin/python bench/bench_answer_stages.py --data-dir DIR --tenant law [--rounds 3]

Runs on an existing data directory whose tenant holds the law corpus, ingested and
indexed (``stichtag ingest --manifest ../shared/corpus/de-insurance-law/manifest.csv``
then ``stichtag index sync``, as ``bench/law_index_sync.sh`` does). The questions are the
repository's law question files (``eval/asof_de_insurance.jsonl``,
``eval/not_yet_in_force_de.jsonl``, ``eval/out_of_scope_de.jsonl``), asked at the current
time with the built-in thresholds, recorded like a served answer. Each round asks every
question once per variant, the variants interleaved per question (which goes first
alternates: the first pays the query embedding, the second finds it cached), so both see
the same machine load:

- ``meaning``: evidence sentences scored by the sentence rule that reads meaning
  (``stichtag.domain.sentence_rule``, the default);
- ``overlap``: scored by word overlap alone (the rule before).

Stages come from ``AnswerResult.timings_ms``: ``sync`` (lexical index freshness),
``lexical`` (tantivy), ``vector`` (pgvector, with the query embedding), ``fusion+details``
(fusion and the visible placements), ``rerank``, ``cross`` (the cross-encoder over the
candidates), ``assess`` (relevance and scope features,
the gates' inputs), ``sentences`` (evidence and its sentence scores), ``generate``,
``gates+citations`` (the rest of ``total``) and ``record+log`` (the call's wall time minus
``total``: building the run record and appending it to the log).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from _common import MODELS, REPO, embedder, percentile

from stichtag.bootstrap import bootstrap
from stichtag.config import Settings
from stichtag.domain.sentence_rule import MEANING_RULE, OVERLAP_RULE
from stichtag.services.access import SCOPES, Principal

FILES = ("asof_de_insurance.jsonl", "not_yet_in_force_de.jsonl", "out_of_scope_de.jsonl")
STAGES = ("sync", "lexical", "vector", "fusion+details", "rerank", "cross", "assess",
          "sentences",
          "generate", "gates+citations", "record+log", "wall")
VARIANTS = {"meaning": MEANING_RULE, "overlap": OVERLAP_RULE}


def questions() -> list[str]:
    """The distinct questions of the repository's law question files, in file order."""
    out: list[str] = []
    for name in FILES:
        for line in (REPO / "eval" / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line)["question"])
    return list(dict.fromkeys(out))


def stages(timings: dict[str, float], wall: float) -> dict[str, float]:
    """One answer's time per stage, in ms."""
    t = timings
    known = ("rerank", "cross", "assess", "sentences", "generate")
    retrieve = sum(t.get(f"retrieve_{k}", 0.0) for k in ("sync", "lexical", "vector",
                                                          "details"))
    out = {"sync": t.get("retrieve_sync", 0.0), "lexical": t.get("retrieve_lexical", 0.0),
           "vector": t.get("retrieve_vector", 0.0),
           "fusion+details": t.get("retrieve_details", 0.0)}
    out.update({k: t.get(k, 0.0) for k in known})
    out["gates+citations"] = max(0.0, t["total"] - retrieve - sum(out[k] for k in known))
    out["record+log"] = max(0.0, wall - t["total"])
    out["wall"] = wall
    return out


def main() -> int:
    """Ask every question ``--rounds`` times per variant; print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--tenant", default="law")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--slowest", type=int, default=8)
    ap.add_argument("--raw", type=Path, help="write every answer's stages here (JSON)")
    args = ap.parse_args()
    for name in ("STICHTAG_DATABASE_URL", "STICHTAG_MIGRATION_DATABASE_URL"):
        os.environ.pop(name, None)
    settings = Settings(data_dir=args.data_dir, models_path=MODELS, database_url=None,
                        migration_database_url=None, pool_min=1, pool_max=4)
    svc = bootstrap(settings, embedder=embedder())
    try:
        row = svc.store.tenancy.tenant_by_name(args.tenant)
        assert row is not None, f"no tenant {args.tenant!r} in {args.data_dir}"
        who = Principal(tenant_id=row.tenant_id, key_id="bench", scopes=frozenset(SCOPES),
                        clearance=3)
        answers = svc.answers
        assert answers is not None
        asked = questions()
        per: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
        by_q: dict[str, list[tuple[float, dict[str, float]]]] = {q: [] for q in asked}
        now = datetime.now(UTC)
        answers.answer(who, asked[0], valid_at=now, known_at=now)  # warm caches and sessions
        for r in range(args.rounds):
            for n, q in enumerate(asked):
                # the first variant asked pays the query embedding (the second finds it
                # cached): which goes first alternates
                pairs = list(VARIANTS.items())
                for variant, rule_id in (pairs if (r + n) % 2 == 0 else pairs[::-1]):
                    answers.sentence_rule = rule_id
                    t = time.perf_counter()
                    result = answers.answer(who, q, valid_at=now, known_at=now)
                    wall = (time.perf_counter() - t) * 1000
                    st = stages(result.timings_ms, wall)
                    per[variant].append(st)
                    if variant == "meaning":
                        by_q[q].append((wall, st))
        answers.sentence_rule = MEANING_RULE
        if args.raw is not None:  # every answer's stages, for a later look
            args.raw.write_text(json.dumps({"per": per, "by_question": by_q}), encoding="utf-8")
        print(f"{len(asked)} questions x {args.rounds} rounds; {os.cpu_count()} cores; "
              f"flags: {cpu_flags()}\n")
        print("| stage | " + " | ".join(f"{v} p50 | {v} p95" for v in VARIANTS) + " |")
        print("| --- | " + " | ".join("--- | ---" for _ in VARIANTS) + " |")
        for stage in STAGES:
            cells = []
            for v in VARIANTS:
                xs = [s[stage] for s in per[v]]
                cells += [f"{statistics.median(xs):.1f}", f"{percentile(xs, 0.95):.1f}"]
            print(f"| {stage} | " + " | ".join(cells) + " |")
        print("\nslowest questions (meaning; median over rounds, ms):\n")
        print("| question | wall | " + " | ".join(STAGES[:-1]) + " |")
        print("| --- | --- | " + " | ".join("---" for _ in STAGES[:-1]) + " |")
        med = {q: _median_stages([s for _, s in runs]) for q, runs in by_q.items()}
        for q in sorted(asked, key=lambda q: -med[q]["wall"])[:args.slowest]:
            m = med[q]
            print(f"| {q[:60]} | {m['wall']:.0f} | "
                  + " | ".join(f"{m[s]:.0f}" for s in STAGES[:-1]) + " |")
    finally:
        svc.close()
    return 0


def _median_stages(runs: list[dict[str, float]]) -> dict[str, float]:
    return {s: statistics.median(r[s] for r in runs) for s in STAGES}


def cpu_flags() -> str:
    """The vector extensions that decide ONNX Runtime's kernels (docs/benchmarks.md)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    return ", ".join(f for f in wanted if f in flags) or "none of " + ", ".join(wanted)


if __name__ == "__main__":
    raise SystemExit(main())
