"""Fit which words frame questions rather than name their subject, from question sides.

    python eval/fit_question_terms.py [--write]

A word that names a question's subject turns up in the questions of few subjects; a word
that frames questions (an interrogative, "regelt", "Vorschrift", "provide") turns up in
the questions of many, whatever they are about. For each source of labelled questions, a
term's *spread* is the share of that source's subjects with a question containing it
(index terms, ``stichtag.domain.german_terms.term``); a term's spread is its largest over
the sources:

- **law**: the fit half of eval/law_questions (German and English), subject = law section;
- **xquad-de**, **xquad-en**: the questions of XQuAD's fitting articles (the 12 articles
  with the smallest sha256 of their title are held out, as eval/fit_defaults.py does),
  subject = paragraph (an article has several, each asked about its own facts).

The threshold ``S`` is fitted on the law fit half, where each question's subject words are
known (the words of the section heading it names) and every other word frames it: the
spread at or above which a term is taken for framing is the one with the best balanced
accuracy over those term occurrences (ties: the higher, fewer words framing). ``--write``
rewrites app/stichtag/domain/question_terms_fit.py with the terms at or above ``S``.
The test half and the external set are never read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "app"))

from stichtag.domain.german_terms import analyze  # noqa: E402

FIT = REPO / "eval" / "law_questions" / "fit.jsonl"
XQUAD = REPO.parent / "shared" / "eval" / "xquad"
OUT = REPO / "app" / "stichtag" / "domain" / "question_terms_fit.py"
HELD_OUT = 12
GRID = [i / 1000 for i in range(5, 305, 5)]


def spreads(subjects: dict[str, list[str]]) -> dict[str, float]:
    """term -> share of subjects with a question containing it."""
    seen: dict[str, set[str]] = defaultdict(set)
    for subject, questions in subjects.items():
        for question in questions:
            for t in analyze(question):
                seen[t].add(subject)
    return {t: len(s) / len(subjects) for t, s in seen.items()}


def law_fit() -> list[dict[str, object]]:
    return [json.loads(line) for line in FIT.read_text(encoding="utf-8").splitlines() if line]


def xquad(lang: str) -> dict[str, list[str]]:
    data = json.loads((XQUAD / f"xquad.{lang}.json").read_text(encoding="utf-8"))
    english = json.loads((XQUAD / "xquad.en.json").read_text(encoding="utf-8"))
    titles = [a["title"] for a in english["data"]]  # the de file has the en titles too
    held = set(sorted(titles, key=lambda t: hashlib.sha256(t.encode()).hexdigest())[:HELD_OUT])
    return {f"{a['title']}#{i}": [q["question"] for q in p["qas"]]
            for a in data["data"] if a["title"] not in held
            for i, p in enumerate(a["paragraphs"])}


def combined() -> dict[str, float]:
    law: dict[str, list[str]] = defaultdict(list)
    for item in law_fit():
        law[str(item["section"])].append(str(item["question"]))
    out: dict[str, float] = {}
    for table in (spreads(law), spreads(xquad("de")), spreads(xquad("en"))):
        for t, v in table.items():
            out[t] = max(out.get(t, 0.0), v)
    return out


def labelled() -> Iterable[tuple[str, bool]]:
    """(term, is framing) of every term of every law fit question about a named heading:
    the heading's terms are its subject; the law's names are left out (not salient)."""
    names = {t for n in ("DeckRV VAG VVG Deckungsrückstellungsverordnung "
                         "Versicherungsaufsichtsgesetz Versicherungsvertragsgesetz German "
                         "Insurance Supervision Contract Act regulation actuarial reserves "
                         "former") for t in analyze(n)}
    for item in law_fit():
        title = str(item.get("title") or "")
        if not title:
            continue
        subject = set(analyze(title))
        for t in analyze(str(item["question"])):
            if t not in names:
                yield t, t not in subject


def fit(spread: dict[str, float]) -> tuple[float, float]:
    rows = list(labelled())
    best = (-1.0, 0.0)
    for s in GRID:
        framing = [spread.get(t, 0.0) >= s for t, _ in rows]
        tp = sum(f and y for f, (_, y) in zip(framing, rows, strict=True))
        tn = sum(not f and not y for f, (_, y) in zip(framing, rows, strict=True))
        pos = sum(y for _, y in rows)
        neg = len(rows) - pos
        balanced = (tp / pos + tn / neg) / 2
        if balanced >= best[0]:
            best = (balanced, s)
    return best[1], best[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    spread = combined()
    threshold, balanced = fit(spread)
    framing = sorted(t for t, v in spread.items() if v >= threshold)
    why = (f"fitted by eval/fit_question_terms.py: S = {threshold} (balanced accuracy "
           f"{balanced:.3f} on the law fit half, sha256 "
           f"{hashlib.sha256(FIT.read_bytes()).hexdigest()[:12]}); spread over the law fit "
           f"half and XQuAD de/en fitting articles; {len(framing)} terms")
    print(why)
    print(" ".join(framing))
    if args.write:
        body = "\n".join(f"    {json.dumps(t, ensure_ascii=False)}," for t in framing)
        OUT.write_text(
            '"""Index terms that frame questions rather than name their subject.\n\n'
            "Written by ``eval/fit_question_terms.py``; do not edit by hand — rerun it\n"
            '(docs/salience.md, "Gaps only for content words").\n"""\n\n'
            "from __future__ import annotations\n\n"
            f"SPREAD_THRESHOLD = {threshold!r}\n"
            "RATIONALE = (\n" + "".join(
                f"    {json.dumps(why[i:i + 80], ensure_ascii=False)}\n"
                for i in range(0, len(why), 80)) + ")\n"
            f"FRAMING = frozenset({{\n{body}\n}})\n", encoding="utf-8")


if __name__ == "__main__":
    main()
