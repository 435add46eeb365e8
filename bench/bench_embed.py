"""Embedding throughput: float vs int8 e5-small, measured in the same run.

    .venv/bin/python bench/bench_embed.py [--models-dir DIR] [--threads 2] [--rounds 5]

Builds the models if needed (idempotent), then interleaves float and int8 rounds so
machine noise hits both variants alike; the int8/float ratio is the number to trust.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stichtag.models.build import build_models
from stichtag.models.embedder import OnnxEmbedder

SENTENCES = [
    "Der Höchstzinssatz für Lebensversicherungsverträge beträgt ab dem 1. Januar 2022 0,25 %.",
    "Für Verträge, die vorher abgeschlossen wurden, gilt der bei Abschluss maßgebliche Satz.",
    "Die Deckungsrückstellung ist nach § 341f HGB prospektiv zu berechnen.",
    "Der Verantwortliche Aktuar prüft jährlich die Angemessenheit der Rechnungsgrundlagen.",
    "Die Zinszusatzreserve wird nach der Korridormethode ermittelt.",
    "Rückkaufswerte sind nach § 169 VVG unter Berücksichtigung eines Stornoabschlags zu zahlen.",
    "Die Überschussbeteiligung richtet sich nach der Mindestzuführungsverordnung.",
    "Eine Änderung der Rechnungsgrundlagen bedarf der Zustimmung des Treuhänders.",
    "Die BaFin kann jederzeit Auskünfte über die Berechnung der Prämien verlangen.",
    "Für Rentenversicherungen sind die Sterbetafeln DAV 2004 R mit Trendannahmen zu verwenden.",
    "Die Abschlusskosten werden über die ersten fünf Vertragsjahre gezillmert.",
    "Bewertungsreserven werden zur Hälfte an ausscheidende Versicherungsnehmer ausgeschüttet.",
]
QUERIES = [
    "Welcher Höchstzinssatz galt am 1. Januar 2022?",
    "Wie wird die Zinszusatzreserve berechnet?",
    "Wer muss einer Änderung der Rechnungsgrundlagen zustimmen?",
    "Welche Sterbetafel gilt für Rentenversicherungen?",
]


def make_passages(embedder: OnnxEmbedder, count: int, target_tokens: int) -> list[str]:
    """Deterministic German passages of about ``target_tokens`` tokens each."""
    rng = random.Random(20220101)
    tokenizer = embedder._tokenizer  # the bench measures, it may look inside
    passages = []
    while len(passages) < count:
        text = ""
        while len(tokenizer.encode("passage: " + text).ids) < target_tokens:
            text = (text + " " + rng.choice(SENTENCES)).strip()
        passages.append(text)
    return passages


def passages_per_second(embedder: OnnxEmbedder, passages: list[str]) -> float:
    start = time.perf_counter()
    embedder.embed_passages(passages)
    return len(passages) / (time.perf_counter() - start)


def query_latencies_ms(embedder: OnnxEmbedder, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        for query in QUERIES:
            start = time.perf_counter()
            embedder.embed_queries([query])
            out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dir = Path(os.environ.get("STICHTAG_DATA_DIR", Path.home() / ".cache" / "stichtag"))
    parser.add_argument("--models-dir", type=Path, default=default_dir / "models")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--passages", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=100)
    args = parser.parse_args()

    build_models(args.models_dir, progress=lambda msg: print(f"# {msg}", file=sys.stderr))
    model_dir = args.models_dir / "e5-small"
    embedders = {
        variant: OnnxEmbedder(model_dir, variant=variant, threads=args.threads, batch_size=32)
        for variant in ("float", "int8")
    }
    passages = make_passages(embedders["float"], args.passages, args.tokens)
    lengths = [len(embedders["float"]._tokenizer.encode("passage: " + p).ids) for p in passages]
    for embedder in embedders.values():  # warm-up: session init, allocator arenas
        embedder.embed_passages(passages[:32])
        query_latencies_ms(embedder, 1)

    throughput: dict[str, list[float]] = {v: [] for v in embedders}
    latency: dict[str, list[float]] = {v: [] for v in embedders}
    for _ in range(args.rounds):
        for variant, embedder in embedders.items():
            throughput[variant].append(passages_per_second(embedder, passages))
            latency[variant].extend(query_latencies_ms(embedder, 5))

    print(
        f"e5-small, {args.threads} threads, batch 32, {len(passages)} German passages of "
        f"{min(lengths)}-{max(lengths)} tokens (median {statistics.median(lengths):.0f}), "
        f"{args.rounds} interleaved rounds"
    )
    print(f"{'variant':<8} {'passages/s':>11} {'query p50 ms':>13} {'query p95 ms':>13}")
    for variant in embedders:
        lat = sorted(latency[variant])
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
        print(
            f"{variant:<8} {statistics.median(throughput[variant]):>11.1f} "
            f"{statistics.median(lat):>13.2f} {p95:>13.2f}"
        )
    ratio = statistics.median(throughput["int8"]) / statistics.median(throughput["float"])
    per_round = [i / f for i, f in zip(throughput["int8"], throughput["float"], strict=True)]
    print(
        f"int8/float throughput ratio: {ratio:.2f} "
        f"(per round {min(per_round):.2f}-{max(per_round):.2f})"
    )
    q_ratio = statistics.median(latency["float"]) / statistics.median(latency["int8"])
    print(f"float/int8 query latency ratio: {q_ratio:.2f}")


if __name__ == "__main__":
    main()
