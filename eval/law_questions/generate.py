"""Generate the law question set from the shared corpus, split by law section.

    python eval/law_questions/generate.py [--corpus ../shared/corpus/de-insurance-law]

writes ``fit.jsonl`` and ``test.jsonl`` next to this file (format: ``eval/README.md``).
Everything is derived from the manifest and the version files; the only choices are the
templates below and a seeded hash, so the output is reproducible byte for byte.

- For every section (``§ N Title`` of every law) one as-of pair is drawn; the gold version
  is the one visible there (``corpus.visible``), the gold text a phrase of the section's
  first sentence in that version.
- Two German paraphrases per section from a pool of templates; sections whose text says
  when something enters into force get an entry-into-force question, sections that refer
  to another section a cross-reference question.
- Unanswerable: the same templates at an as-of pair where the named law is not visible
  (before its first version, or after the old VAG's retraction is known and before VAG 2016
  is valid), and questions about subjects that no version of the corpus mentions.
- A third of the sections (by hash), and every subject, also get their items in English.
- The split: a hash of the section key (``law:§N``, or ``subject:…``) decides fit or test,
  so every item about one section is on the same side.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Section, read_manifest, read_text, sections, visible

HERE = Path(__file__).resolve().parent
LATEST = "2026-12-01"
FIRST, LAST = "2012-08-02", "2026-07-31"

LAWS = {
    "deckrv": ("DeckRV", "Deckungsrückstellungsverordnung",
               "the DeckRV (German regulation on actuarial reserves)"),
    "vag_old": ("VAG", "Versicherungsaufsichtsgesetz",
                "the former German Insurance Supervision Act (VAG)"),
    "vag2016": ("VAG", "Versicherungsaufsichtsgesetz",
                "the German Insurance Supervision Act (VAG)"),
    "vvg2008": ("VVG", "Versicherungsvertragsgesetz",
                "the German Insurance Contract Act (VVG)"),
}

# {n}: section number, {law}: abbreviation, {long}: full name, {title}: heading, {date}
DE_TEMPLATES = [
    "Was regelt § {n} {law} ({title})?",
    "Welche Vorschriften enthält das {long} in § {n} zum Thema „{title}“?",
    "Was bestimmt § {n} des {law} über „{title}“, Stand {date}?",
    "Worum geht es in § {n} {law}?",
    "Was gilt nach dem {law} für „{title}“?",
    "Welche Regelung trifft das {law} zu „{title}“?",
    "Was sieht § {n} {law} am {date} vor?",
    "Wie ist „{title}“ im {long} geregelt?",
]
EN_TEMPLATES = [
    "What does section {n} of {law_en} provide?",
    "What did section {n} of {law_en} say on {date}?",
    "Which rules does section {n} of {law_en} lay down?",
]
DE_IN_FORCE = [
    "Wann tritt das {long} nach § {n} in Kraft?",
    "Ab wann gilt die Regelung in § {n} {law}?",
]
EN_IN_FORCE = ["When does {law_en} enter into force according to section {n}?"]
DE_XREF = [
    "Auf welche Vorschrift verweist § {n} {law} ({title})?",
    "Welche andere Norm nennt § {n} des {law}?",
]
EN_XREF = ["Which other provision does section {n} of {law_en} refer to?"]

# Subjects no version of the corpus mentions (checked below: every stem is absent from every
# file). German stem, German phrase, English phrase.
SUBJECTS = [
    ("mietkaution", "die Höhe einer Mietkaution", "the maximum rental deposit"),
    ("mindestlohn", "den gesetzlichen Mindestlohn", "the statutory minimum wage"),
    ("elterngeld", "das Elterngeld", "parental allowance"),
    ("grunderwerbsteuer", "die Grunderwerbsteuer", "the real estate transfer tax"),
    ("kündigungsschutzklage", "die Frist für eine Kündigungsschutzklage",
     "the deadline for an unfair dismissal claim"),
    ("tempolimit", "das Tempolimit auf Autobahnen", "the speed limit on motorways"),
    ("urlaubsanspruch", "den gesetzlichen Urlaubsanspruch", "statutory annual leave"),
    ("bürgergeld", "den Regelsatz des Bürgergelds", "the standard rate of citizen's income"),
    ("kindergeld", "die Höhe des Kindergelds", "the amount of child benefit"),
    ("schengen", "Einreiseregeln im Schengen-Raum", "entry rules of the Schengen area"),
    ("mietpreisbremse", "die Mietpreisbremse", "the rent cap"),
    ("umsatzsteuervoranmeldung", "die Umsatzsteuervoranmeldung", "the advance VAT return"),
    ("führerschein", "den Entzug des Führerscheins", "driving licence withdrawal"),
    ("kryptowährung", "die Besteuerung von Kryptowährungen", "the taxation of cryptocurrencies"),
    ("denkmalschutz", "Auflagen des Denkmalschutzes", "heritage protection requirements"),
    ("ladenöffnung", "die Ladenöffnungszeiten am Sonntag", "Sunday shop opening hours"),
    ("hundesteuer", "die Hundesteuer", "the dog tax"),
    ("baugenehmigung", "die Baugenehmigung für ein Carport", "a building permit for a carport"),
    ("streaming", "Urheberrechte beim Streaming", "copyright when streaming"),
    ("rundfunkbeitrag", "die Höhe des Rundfunkbeitrags", "the broadcasting licence fee"),
    ("fluggastrechte", "Fluggastrechte bei Verspätung", "air passenger rights for delays"),
    ("jagdschein", "die Prüfung für den Jagdschein", "the hunting licence exam"),
    ("einbürgerung", "die Voraussetzungen der Einbürgerung", "the requirements for naturalisation"),
    ("parkverbot", "Bußgelder bei Parkverbot", "fines for illegal parking"),
    # near the corpus's domain (finance, insurance elsewhere): a scope rule must refuse
    # these too, not only subjects far from insurance
    ("ifrs", "die vertragliche Servicemarge nach IFRS 17",
     "the contractual service margin under IFRS 17"),
    ("guaranty", "US-Guaranty-Fonds für insolvente Versicherer",
     "US state guaranty funds for insolvent insurers"),
    ("sarbanes", "interne Kontrollen nach dem Sarbanes-Oxley Act",
     "internal controls under the Sarbanes-Oxley Act"),
    ("mifid", "die Produktüberwachung nach MiFID II", "product governance under MiFID II"),
    ("ucits", "Anlagegrenzen von OGAW-Fonds (UCITS)", "the diversification limits of UCITS funds"),
    ("pfandbrief", "die Deckungsmasse eines Pfandbriefs", "the cover pool of a Pfandbrief"),
    ("mindestreserve", "die Mindestreserve der Banken bei der EZB",
     "banks' minimum reserves at the ECB"),
    ("einlagensicherung", "die gesetzliche Einlagensicherung für Bankkonten",
     "statutory deposit insurance for bank accounts"),
    ("riester", "die Höhe der Riester-Zulage", "the amount of the Riester allowance"),
    ("medicare", "die Leistungen von Medicare", "the benefits of Medicare"),
    ("crowdfunding", "die Prospektpflicht beim Crowdfunding",
     "the prospectus duty for crowdfunding"),
    ("wertpapierprospekt", "die Billigung eines Wertpapierprospekts",
     "the approval of a securities prospectus"),
    ("insolvenzgeld", "das Insolvenzgeld für Arbeitnehmer", "insolvency benefit for employees"),
    ("zollfreigrenze", "die Zollfreigrenze bei Reisen", "the customs allowance when travelling"),
]
DE_SUBJECT = [
    "Was regelt das {law} zu {subject}?",
    "Welche Vorschrift des {long} gilt für {subject}?",
]
EN_SUBJECT = ["What does {law_en} say about {subject}?"]

_REF = re.compile(r"§§? ?(\d+[a-z]?)")
_IN_FORCE = re.compile(r"in Kraft")
# Paragraph numbers "(1) " and enumerations "1." are where sentence splitters differ: a gold
# phrase starts after the former and ends before the latter.
_NUMBERING = re.compile(r"^\s*\(\d+[a-z]?\)\s*")
_ENUMERATION = re.compile(r"(?<![\w§])\d+[a-z]?\.(?!\d)")
_SENTENCE = re.compile(r"(?<=[.;:])\s+(?=[A-ZÄÖÜ(0-9])")


def key_hash(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


def side(key: str) -> str:
    """fit or test, by a hash of the section key: a section never sits on both sides."""
    return "fit" if key_hash("split:" + key) % 2 == 0 else "test"


def _phrase(line: str, at: int, rng: random.Random) -> str | None:
    """A phrase of 3-8 words of ``line`` starting at a word boundary at or after ``at``."""
    line = _NUMBERING.sub("", line[at:])
    cut = _ENUMERATION.search(line)
    line = line[:cut.start()] if cut else line
    words = list(re.finditer(r"\S+", line))
    if len(words) < 4:
        return None
    count = min(len(words), rng.randint(4, 8))
    text = line[words[0].start():words[count - 1].end()].rstrip(",;:.")
    return text if len(text) >= 18 else None


def gold_phrase(section: Section, file_text: str, rng: random.Random,
                pattern: re.Pattern[str] | None = None) -> str | None:
    """A short phrase of the section body, within one line and one sentence, that occurs in
    the version once (so a citation containing it cites this section); with ``pattern``, a
    phrase that contains a match of it."""
    for raw in section.body.split("\n"):
        for sentence in _SENTENCE.split(raw.strip()):
            if pattern is None:
                candidates = [_phrase(sentence, 0, rng)]
            else:
                match = pattern.search(sentence)
                if match is None:
                    continue
                words = [w.start() for w in re.finditer(r"\S+", sentence[:match.start()])]
                begin = words[-3] if len(words) >= 3 else 0
                end = sentence.find(" ", match.end() + 1)
                chunk = sentence[begin:end if end > 0 else len(sentence)].rstrip(",;:.")
                candidates = [chunk if len(chunk) >= 12 else None]
            for text in candidates:
                if text and file_text.count(text) == 1:
                    return text
    return None


def _date(rng: random.Random, low: str, high: str) -> str:
    a, b = date.fromisoformat(low), date.fromisoformat(high)
    return (a + timedelta(days=rng.randint(0, (b - a).days))).isoformat()


def _fill(template: str, law: str, number: str, title: str, day: str) -> str:
    short, long, english = LAWS[law]
    return template.format(n=number, law=short, long=long, law_en=english,
                           title=title or f"§ {number}", date=day, subject="")


class Generator:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.rows = read_manifest(root)
        self._texts: dict[str, str] = {}
        self._sections: dict[str, dict[str, Section]] = {}

    def text(self, file: str) -> str:
        if file not in self._texts:
            self._texts[file] = read_text(self.root / file)
        return self._texts[file]

    def sections_of(self, file: str) -> dict[str, Section]:
        if file not in self._sections:
            self._sections[file] = {s.number: s for s in sections(self.text(file))}
        return self._sections[file]

    def section_keys(self) -> list[tuple[str, str, str]]:
        """(law, number, title) of every section in any version, in a stable order."""
        seen: dict[tuple[str, str], str] = {}
        for row in self.rows:
            if row.action == "ingest":
                for number, sec in self.sections_of(row.file).items():
                    seen.setdefault((row.document, number), sec.title)
        return sorted((law, n, t) for (law, n), t in seen.items())

    def items(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for law, number, _title in self.section_keys():
            out.extend(self._section_items(law, number))
        out.extend(self._subject_items())
        return out

    def _draw_asof(self, law: str, number: str, rng: random.Random
                   ) -> tuple[str, str, str, Section] | None:
        for _ in range(40):
            valid_at = _date(rng, FIRST, LAST)
            known_at = LATEST if rng.random() < 0.75 else valid_at
            file = visible(self.rows, law, valid_at, known_at)
            if file is None:
                continue
            sec = self.sections_of(file).get(number)
            if sec is not None and len(sec.body.strip()) > 60 and "weggefallen" not in sec.title:
                return valid_at, known_at, file, sec
        return None

    def _section_items(self, law: str, number: str) -> list[dict[str, object]]:
        key = f"{law}:§{number}"
        rng = random.Random(key_hash(key))  # noqa: S311 - a reproducible draw, no secret
        drawn = self._draw_asof(law, number, rng)
        if drawn is None:
            return []
        valid_at, known_at, file, sec = drawn
        english = key_hash("en:" + key) % 3 == 0
        base = {"section": key, "split": side(key), "valid_at": valid_at, "known_at": known_at,
                "title": sec.title}
        items: list[dict[str, object]] = []

        def add(kind: str, lang: str, template: str, gold_text: str | None, *,
                day: str = valid_at, asof: dict[str, str] | None = None) -> None:
            item = dict(base, id=f"{law}-{number}-{kind}-{lang}-{len(items)}", category=kind,
                        lang=lang, question=_fill(template, law, number, sec.title, day))
            if asof:
                item.update(asof)
            if gold_text is None:
                item["answerable"] = False
            else:
                item["answerable"] = True
                item["gold"] = {"document": law, "version_file": file, "gold_text": gold_text}
            items.append(item)

        phrase = gold_phrase(sec, self.text(file), rng)
        if phrase is not None:
            for template in rng.sample(DE_TEMPLATES, 2):
                add("section", "de", template, phrase)
            if english:
                add("section", "en", rng.choice(EN_TEMPLATES), phrase)
        in_force = gold_phrase(sec, self.text(file), rng, _IN_FORCE)
        if in_force is not None:
            add("in-force", "de", rng.choice(DE_IN_FORCE), in_force)
            if english:
                add("in-force", "en", EN_IN_FORCE[0], in_force)
        refs = [m for m in _REF.finditer(sec.body) if m.group(1) != number]
        xref = gold_phrase(sec, self.text(file), rng, re.compile(re.escape(refs[0].group(0)))
                           ) if refs else None
        if xref is not None:
            add("cross-reference", "de", rng.choice(DE_XREF), xref)
            if english:
                add("cross-reference", "en", EN_XREF[0], xref)
        # Unanswerable by as-of: the same question where the named law is not visible.
        if phrase is not None and key_hash("gone:" + key) % 2 == 0:
            gone = self._not_visible(law, rng)
            if gone is not None:
                asof = {"valid_at": gone[0], "known_at": gone[1]}
                add("not-in-force", "de", rng.choice(DE_TEMPLATES), None, day=gone[0], asof=asof)
                if english:
                    add("not-in-force", "en", rng.choice(EN_TEMPLATES), None, day=gone[0],
                        asof=asof)
        return items

    def _not_visible(self, law: str, rng: random.Random) -> tuple[str, str] | None:
        for _ in range(40):
            valid_at = _date(rng, "2005-01-01", LAST)
            if visible(self.rows, law, valid_at, LATEST) is None:
                return valid_at, LATEST
        return None

    def _subject_items(self) -> list[dict[str, object]]:
        corpus = " ".join(self.text(r.file).lower() for r in self.rows if r.action == "ingest")
        items: list[dict[str, object]] = []
        for stem, german, english in SUBJECTS:
            if stem in corpus:
                raise SystemExit(f"subject {stem!r} occurs in the corpus")
            key = f"subject:{stem}"
            rng = random.Random(key_hash(key))  # noqa: S311 - a reproducible draw, no secret
            law = rng.choice(sorted(LAWS))
            day = _date(rng, "2020-01-01", LAST)
            base = {"section": key, "split": side(key), "valid_at": day, "known_at": LATEST,
                    "category": "off-corpus", "answerable": False}
            # every subject in both languages: out-of-scope questions are few, and each half
            # needs English ones to fit and to measure the rule across languages on
            for lang, templates, phrase in (("de", DE_SUBJECT, german),
                                            ("en", EN_SUBJECT, english)):
                for template in templates:
                    short, long, law_en = LAWS[law]
                    items.append(dict(base, id=f"subject-{stem}-{lang}-{len(items)}", lang=lang,
                                      question=template.format(law=short, long=long,
                                                               law_en=law_en, subject=phrase)))
        return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path,
                        default=HERE.parents[2] / "shared" / "corpus" / "de-insurance-law")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    items = Generator(args.corpus.resolve()).items()
    for half in ("fit", "test"):
        lines = [json.dumps(i, ensure_ascii=False, sort_keys=True) for i in items
                 if i["split"] == half]
        (args.out / f"{half}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{half}: {len(lines)} items")


if __name__ == "__main__":
    main()
