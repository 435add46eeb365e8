"""How the scope gate's observed share separates answerable from unanswerable questions.

For every item of the three German sets (asof_de_insurance, out_of_scope_de,
not_yet_in_force_de) this builds what the lexical index would hold at the item's as-of
pair straight from the shared corpus -- passages = blank-line blocks (Markdown) or lines
(gii text) of every version in force, vocabulary = every version known at known_at --
computes the salient aspects (document keys, abbreviations and names excluded) and the
scope gate's observed share, then prints, per threshold, the share of answerable items
that pass and of unanswerable items that are stopped. Model-free and deterministic:

    python eval/scope_report.py ../shared/corpus/de-insurance-law [--items]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import unicodedata
from collections import Counter
from functools import cache
from pathlib import Path

from stichtag.domain.aspect_support import support_in_force
from stichtag.domain.german_terms import analyze
from stichtag.domain.salience import InForce, salient_aspects
from stichtag.domain.scope import gate_scope

EVAL = Path(__file__).resolve().parent
SETS = ("asof_de_insurance.jsonl", "out_of_scope_de.jsonl", "not_yet_in_force_de.jsonl")
NAMES = {"deckrv": ("deckrv", "DeckRV", "Deckungsrückstellungsverordnung"),
         "vag2016": ("vag2016", "VAG", "Versicherungsaufsichtsgesetz"),
         "vag_old": ("vag_old", "VAG", "Versicherungsaufsichtsgesetz"),
         "vvg2008": ("vvg2008", "VVG", "Versicherungsvertragsgesetz")}
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def in_force(rows: list[dict[str, str]], doc: str, valid_at: str, known_at: str) -> str | None:
    """As in tests/integration/test_eval.py: the file in force at (valid_at, known_at)."""
    known = [r for r in rows if r["document"] == doc and r["tx_time"] <= known_at]
    if any(r["valid_from"] <= valid_at for r in known if r["action"] == "retract"):
        return None
    starts = [r for r in known if r["action"] == "ingest" and r["valid_from"] <= valid_at]
    return max(starts, key=lambda r: r["valid_from"])["file"] if starts else None


def main() -> None:
    """Print per-item shares (with --items) and the separation table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--items", action="store_true", help="print every item's share")
    args = parser.parse_args()
    with (args.corpus / "manifest.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))

    @cache
    def passages(file: str) -> tuple[frozenset[str], ...]:
        text = unicodedata.normalize("NFC", (args.corpus / file).read_text(encoding="utf-8"))
        cut = r"\n\s*\n" if file.endswith(".md") else r"\n"
        return tuple(frozenset(analyze(b)) for b in re.split(cut, text) if b.strip())

    @cache
    def vocabulary(known_at: str) -> frozenset[str]:
        files = [r["file"] for r in rows if r["action"] == "ingest" and r["tx_time"] <= known_at]
        return frozenset(t for f in files for p in passages(f) for t in p)

    results: list[tuple[str, str, bool, float]] = []
    for name in SETS:
        for line in (EVAL / name).read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            valid_at, known_at = item.get("valid_at", "2026-01-01"), item.get("known_at",
                                                                             "2026-01-01")
            docs = [d for d in NAMES if in_force(rows, d, valid_at, known_at)]
            sets = [p for d in docs for p in passages(str(in_force(rows, d, valid_at, known_at)))]
            counts = Counter(t for p in sets for t in p)
            vocab = vocabulary(known_at)
            state = InForce(passages=len(sets), df=lambda t, c=counts: c.get(t, 0),
                            vocabulary=vocab.__contains__,
                            co_df=lambda ts, s=sets: sum(1 for p in s if all(t in p for t in ts)))
            aspects = salient_aspects(item["question"], state,
                                      documents=[n for d in docs for n in NAMES[d]])
            gate = gate_scope(aspects, support_in_force(aspects, state), 0.0, valid_at=valid_at)
            share = gate.observed if gate.observed is not None else 0.0
            results.append((name, item["id"], bool(item["answerable"]), share))
            if args.items:
                print(f"{share:5.2f} {'A' if item['answerable'] else 'U'} {item['id']:34s} "
                      f"{gate.detail[:110]}")
    answerable = [s for _, _, a, s in results if a]
    unanswerable = [s for _, _, a, s in results if not a]
    print(f"\n{len(answerable)} answerable, {len(unanswerable)} unanswerable items")
    print("threshold  answerable passing  unanswerable stopped")
    for t in THRESHOLDS:
        passing = sum(s >= t for s in answerable) / len(answerable)
        stopped = sum(s < t for s in unanswerable) / len(unanswerable)
        print(f"{t:9.1f}  {passing:18.1%}  {stopped:20.1%}")


if __name__ == "__main__":
    main()
