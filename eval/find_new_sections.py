"""Find what a later version of a law added: new sections and words first seen in it.

Reads the shared corpus's manifest.csv, orders each document's ingested versions by
valid_from, and diffs each version against *all* earlier ones:

* sections: ``§ N[a-z]`` headings (Markdown ``#`` headings or gii ``##`` lines), keyed by
  their number; a number never seen before is new, printed with its title;
* words: folded words of at least ``--min-len`` letters never seen in an earlier version
  (candidates for a decisive term of a not-yet-in-force question).

Used to build eval/not_yet_in_force_de.jsonl (see eval/README.md). Only the standard
library; the corpus is read in place:

    python eval/find_new_sections.py ../shared/corpus/de-insurance-law [--document vag2016]
"""

from __future__ import annotations

import argparse
import csv
import re
import unicodedata
from pathlib import Path

_HEADING = re.compile(r"^#{1,6}\s*(?:\[[^\]]*\]\s*)?§\s*(\d+[a-z]?)\s*[-\u2013]?\s*(.*)$", re.M)
_WORD = re.compile(r"[^\W\d_]+")


def fold(word: str) -> str:
    """Case- and umlaut-insensitive form (as stichtag.domain.quantities.fold)."""
    table = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss"})
    return word.casefold().translate(table)


def sections(text: str) -> dict[str, str]:
    """Section number -> title of every ``§`` heading (the first title wins)."""
    out: dict[str, str] = {}
    for number, title in _HEADING.findall(text):
        out.setdefault(number, title.strip())
    return out


def words(text: str, min_len: int) -> set[str]:
    """Folded words of at least ``min_len`` letters."""
    return {fold(w) for w in _WORD.findall(text) if len(w) >= min_len}


def versions(root: Path, document: str) -> list[dict[str, str]]:
    """The document's ingested versions, in valid_from order."""
    with (root / "manifest.csv").open(encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle)
                if r["document"] == document and r["action"] == "ingest"]
    return sorted(rows, key=lambda r: (r["valid_from"], r["tx_time"]))


def main() -> None:
    """Print, per version, the sections and words that no earlier version had."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--document", action="append",
                        help="document key (repeatable); default: deckrv, vag2016, vvg2008")
    parser.add_argument("--min-len", type=int, default=12)
    args = parser.parse_args()
    for document in args.document or ["deckrv", "vag2016", "vvg2008"]:
        seen_sections: set[str] = set()
        seen_words: set[str] = set()
        for i, row in enumerate(versions(args.corpus, document)):
            text = unicodedata.normalize("NFC", (args.corpus / row["file"]).read_text("utf-8"))
            secs, ws = sections(text), words(text, args.min_len)
            if i:
                new_secs = sorted(set(secs) - seen_sections,
                                  key=lambda n: (int(re.match(r"\d+", n)[0]), n))  # type: ignore[index]
                new_words = sorted(ws - seen_words)
                if new_secs or new_words:
                    print(f"== {row['file']} (valid_from {row['valid_from']})")
                for n in new_secs:
                    print(f"   § {n} {secs[n]}")
                if new_words:
                    print("   words:", " ".join(new_words))
            seen_sections |= set(secs)
            seen_words |= ws


if __name__ == "__main__":
    main()
