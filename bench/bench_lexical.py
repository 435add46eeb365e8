"""Lexical search latency: current-time query vs an as-of query deep in history.

Builds one tenant index of ~100k (assertion, passage) documents through the real
``TenantIndex.apply`` path: documents of synthetic German regulatory text, each going
through 10 version generations. Every new generation follows the bitemporal rule of the
design (section 3.4): the current assertion is closed (``tx_to = now``), its valid part
before the new version is re-asserted, and the new version is asserted — so the index
holds 19 assertions per document and only about 5 % of it is visible at any as-of pair.

Then the same random queries run, interleaved, at three as-of pairs and the script prints
p50/p95 latencies and their ratios (machines are noisy; compare within one run).

    .venv/bin/python bench/bench_lexical.py [--documents 530] [--queries 300]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from stichtag.index.fields import IndexedPassage
from stichtag.index.ranges import INF_US
from stichtag.index.tantivy_index import TenantIndex

YEAR_US = 365 * 24 * 3600 * 1_000_000
T0_US = 1_451_606_400 * 1_000_000  # 2016-01-01T00:00:00Z

# Vocabulary of German insurance supervision and actuarial text, written for this bench:
# nouns and compounds, verbs, adjectives, and the function words that make real text.
CONTENT = """
Höchstzinssatz Rechnungszins Deckungsrückstellung Deckungsrückstellungen Zinszusatzreserve
Versicherungsunternehmen Lebensversicherung Rentenversicherung Krankenversicherung
Versicherungsnehmer Versicherer Aufsichtsbehörde Bundesanstalt Finanzdienstleistungsaufsicht
Solvabilität Solvabilitätskapitalanforderung Mindestkapitalanforderung Eigenmittel
Risikomarge Bewertung Rückstellung Prämie Prämien Beitrag Beiträge Leistung Leistungen
Überschussbeteiligung Überschüsse Bewertungsreserven Kapitalanlagen Sicherungsvermögen
Sterbetafel Sterbewahrscheinlichkeit Ausscheideordnung Rechnungsgrundlagen Kosten
Abschlusskosten Verwaltungskosten Stornoabzug Rückkaufswert Garantiezins Zinsen Zins
Vertrag Verträge Tarif Tarife Geschäftsjahr Bilanzstichtag Jahresabschluss Lagebericht
Verantwortlicher Aktuar Gutachten Erläuterungsbericht Berechnung Verfahren Methode
Annahmen Szenario Stresstest Marktwert Buchwert Duration Cashflow Diskontierung
Zinskurve Referenzzins Zinsstrukturkurve Volatilitätsanpassung Übergangsmaßnahme
Verordnung Gesetz Absatz Satz Nummer Anlage Vorschrift Anwendung Inkrafttreten
Pensionskasse Pensionsfonds Altersvorsorge Hinterbliebenenrente Berufsunfähigkeit
Mindestzuführung Rohüberschuss Schlussüberschuss Direktgutschrift Kollektiv
festgelegt berechnet angewendet ermittelt bewertet bilden gebildet übersteigen
unterschreiten anzusetzen maßgeblich zulässig erforderlich angemessen vorsichtig
jährlich monatlich vorläufig endgültig gesetzlich vertraglich technischen kapitalbildenden
""".split()
FUNCTION = [
    "der",
    "die",
    "das",
    "und",
    "nach",
    "für",
    "ist",
    "sind",
    "wird",
    "werden",
    "bei",
    "von",
    "zu",
    "mit",
    "auf",
    "im",
    "des",
    "den",
    "dem",
]


@dataclass(frozen=True, slots=True)
class Result:
    """Latencies of one query variant in milliseconds."""

    name: str
    latencies_ms: list[float]

    def p(self, q: float) -> float:
        """The ``q`` quantile (0..1) of the latencies."""
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def sentence(rng: random.Random) -> str:
    words = [rng.choice(CONTENT) if rng.random() < 0.6 else rng.choice(FUNCTION)]
    words += [
        rng.choice(CONTENT) if rng.random() < 0.6 else rng.choice(FUNCTION)
        for _ in range(rng.randint(8, 16))
    ]
    if rng.random() < 0.3:
        words.insert(rng.randint(0, len(words)), f"§ {rng.randint(1, 40)} Abs. {rng.randint(1, 5)}")
    return " ".join(words) + "."


def mutate(text: str, rng: random.Random) -> str:
    """A later version of a passage: usually unchanged, sometimes one word replaced."""
    if rng.random() > 0.3:
        return text
    words = text.split(" ")
    words[rng.randrange(len(words))] = rng.choice(CONTENT)
    return " ".join(words)


def build(ix: TenantIndex, documents: int, passages: int, generations: int) -> int:
    """Index ``generations`` versions per document; returns the number of documents."""
    rng = random.Random(7)
    texts = [
        [" ".join(sentence(rng) for _ in range(3)) for _ in range(passages)]
        for _ in range(documents)
    ]
    next_id = 1
    current: dict[int, tuple[int, int, list[str]]] = {}  # doc -> assertion, valid_from, texts
    for gen in range(generations):
        now = T0_US + gen * YEAR_US
        upserts: list[IndexedPassage] = []
        closes: list[tuple[int, int]] = []
        for doc in range(documents):
            if doc in current:
                texts[doc] = [mutate(t, rng) for t in texts[doc]]
                old_id, old_from, old_texts = current[doc]
                closes.append((old_id, now))
                upserts += rows(next_id, doc, old_texts, (old_from, now), now)  # re-assertion
                next_id += 1
            upserts += rows(next_id, doc, texts[doc], (now, INF_US), now)
            current[doc] = (next_id, now, texts[doc])
            next_id += 1
        ix.apply(upserts=upserts, close=closes, seq=gen + 1)
    return ix.doc_count()


def rows(
    assertion_id: int, doc: int, texts: list[str], valid: tuple[int, int], now: int
) -> list[IndexedPassage]:
    out = []
    offset = 0
    for i, text in enumerate(texts):
        out.append(
            IndexedPassage(
                assertion_id=assertion_id,
                passage_id=i,
                document=f"doc{doc}",
                version_id=f"b3:{assertion_id:064x}",
                start=offset,
                end=offset + len(text),
                text=text,
                heading_path=f"Dokument {doc} \u203a § {i + 1}",
                valid_from=valid[0],
                valid_to=valid[1],
                tx_from=now,
                tx_to=INF_US,
                confidentiality=doc % 3,
            )
        )
        offset += len(text) + 1
    return out


def measure(
    variants: dict[str, Callable[[str], int]], queries: list[str], rounds: int = 3
) -> list[Result]:
    """Run every query in every variant, interleaved so drift hits all variants alike."""
    for q in queries[:50]:  # warm the page cache and the searcher
        for run in variants.values():
            run(q)
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for q in queries:
            for name, run in variants.items():
                start = time.perf_counter_ns()
                run(q)
                samples[name].append((time.perf_counter_ns() - start) / 1e6)
    return [Result(name, values) for name, values in samples.items()]


def main() -> None:
    """Build the index, run the query variants, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=530)
    parser.add_argument("--passages", type=int, default=10)
    parser.add_argument("--generations", type=int, default=10)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(11)
    queries = [" ".join(rng.sample(CONTENT, rng.randint(2, 4))) for _ in range(args.queries)]
    now = T0_US + args.generations * YEAR_US
    deep = T0_US + YEAR_US + YEAR_US // 2  # inside generation 1 of 10
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with TenantIndex(Path(tmp) / "tenant") as writer:
            docs = build(writer, args.documents, args.passages, args.generations)
        # Closing waits for background merges; searching a fresh reader measures the
        # steady state instead of whatever segments a merge happens to be rewriting.
        build_s = time.perf_counter() - started
        size_mb = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file()) / 2**20
        ix = TenantIndex(Path(tmp) / "tenant")
        segments = ix._index.searcher().num_segments  # a bench may peek at internals

        def at(valid_at: int, known_at: int) -> Callable[[str], int]:
            def run(q: str) -> int:
                hits = ix.search(q, valid_at=valid_at, known_at=known_at, clearance=3, k=args.k)
                return len(hits)

            return run

        variants = {
            "current (valid=known=now)": at(now, now),
            "as-of deep (valid=known=gen 1)": at(deep, deep),
            "as-of valid gen 1, known now": at(deep, now),
        }
        visible = {name: sum(run(q) for q in queries[:20]) / 20 for name, run in variants.items()}
        results = measure(variants, queries)
        ix.close()
    shape = f"{args.documents} docs x {args.passages} passages x {2 * args.generations - 1}"
    print(f"indexed: {docs:,} passage docs ({shape} assertions)")
    print(f"build via apply(): {build_s:.1f} s, {size_mb:.0f} MiB in {segments} segments")
    print(f"queries: {len(queries)} x 3 rounds, k={args.k}, 2-4 words each\n")
    base = results[0]
    print(
        f"{'variant':34} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {'p50 ratio':>10} "
        f"{'p95 ratio':>10} {'hits/q':>7}"
    )
    for r in results:
        mean = statistics.fmean(r.latencies_ms)
        print(
            f"{r.name:34} {r.p(0.5):8.2f} {r.p(0.95):8.2f} {mean:8.2f}"
            f" {r.p(0.5) / base.p(0.5):10.2f} {r.p(0.95) / base.p(0.95):10.2f}"
            f" {visible[r.name]:7.1f}"
        )


if __name__ == "__main__":
    main()
