"""What the cross-encoder adds to one answer: its scoring time at 8 and 20 candidates.

    .venv/bin/python bench/bench_cross_encoder.py --models .data/models [--questions 60]

For questions of the law question set's test half (eval/law_questions/test.jsonl), the
candidates are passages of the question's gold version as the server cuts them (the gold
passage and its neighbours, so lengths are those an answer sees). Each variant scores the
same candidate lists, one call per answer as ``services/scoring.py`` does; the table gives
p50/p95 per answer in milliseconds, interleaved by question so load affects every variant
alike. Variants: the int8 and the float32 graph of the cross-encoder the build assembled,
each at 8 and at 20 candidates. Print the CPU flags with the table (they decide the int8
speed: AVX-512 VNNI or AVX2 only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "app"))

from stichtag.models.cross_encoder import RERANK_NAME  # noqa: E402
from stichtag.models.reranker import OnnxCrossEncoder  # noqa: E402
from stichtag.training.data import SHARED  # noqa: E402
from stichtag.training.student_data import LAW_CORPUS, _version_passages  # noqa: E402


def cpu_flags() -> str:
    """The instruction sets that decide int8 speed, as /proc/cpuinfo names them."""
    try:
        flags = Path("/proc/cpuinfo").read_text().split("flags")[1].split("\n")[0].split()
    except (OSError, IndexError):
        return "unknown"
    return " ".join(f for f in ("avx2", "avx512f", "avx512_vnni", "amx_int8") if f in flags)


def candidates(limit: int, k: int) -> list[tuple[str, list[str]]]:
    """(question, k passages around its gold passage) for the first ``limit`` items."""
    out = []
    test = REPO / "eval" / "law_questions" / "test.jsonl"
    for line in test.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if not item.get("gold"):
            continue
        rows = [body for _, body in _version_passages(
            SHARED / LAW_CORPUS / item["gold"]["version_file"])]
        gold = item["gold"]["gold_text"]
        at = next((i for i, body in enumerate(rows) if gold in body), 0)
        lo = max(0, min(at - k // 2, len(rows) - k))
        out.append((item["question"], rows[lo:lo + k]))
        if len(out) == limit:
            break
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=Path, default=REPO / ".data" / "models")
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    variants = {name: OnnxCrossEncoder(args.models / name, threads=args.threads)
                for name in (f"{RERANK_NAME}-int8", RERANK_NAME)}
    lists = {k: candidates(args.questions, k) for k in (8, 20)}
    times: dict[tuple[str, int], list[float]] = {(v, k): [] for v in variants for k in lists}
    for model in variants.values():  # warm-up: the first run allocates
        model.score(lists[8][0][0], lists[8][0][1])
    for i in range(args.questions):
        for k, rows in lists.items():
            if i >= len(rows):
                continue
            question, passages = rows[i]
            for name, model in variants.items():
                t = time.perf_counter()
                model.score(question, passages)
                times[(name, k)].append((time.perf_counter() - t) * 1000)
    print(f"CPU flags: {cpu_flags()}; onnxruntime threads {args.threads}; "
          f"{args.questions} law test-half questions")
    print("| variant | candidates | p50 ms | p95 ms | mean ms |")
    print("| --- | --- | --- | --- | --- |")
    for (name, k), values in times.items():
        print(f"| {name} | {k} | {pct(values, 0.5):.1f} | {pct(values, 0.95):.1f} | "
              f"{statistics.fmean(values):.1f} |")


if __name__ == "__main__":
    main()
