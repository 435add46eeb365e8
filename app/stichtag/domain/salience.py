"""Question salience: which parts of a question an answer must support, and how strongly.

A question is turned into *aspects*: content terms, German compounds (judged by their
parts), quantities (numbers, percentages, amounts) and years. Each aspect carries the
surface form in the question's own words (for gaps and abstention details), the index
terms that count as support, and a weight: its rarity among the passages in force at the
as-of pair. Question words, stop words, dates (the as-of pair's business), section
references and the names of the documents in the evidence are not salient.

Everything the corpus knows comes in through :class:`InForce`, which the caller builds
from its lexical index at the as-of pair; this module does no I/O and imports no adapter.
Terms are the index's terms (:mod:`stichtag.domain.german_terms`), so a document frequency is
looked up under the very key the index counts.

Rules (``SALIENCE_ID`` names them; any change bumps it, because gates and gaps depend on
them and every run records the id):

1. weight = BM25 idf of the term's document frequency among the ``passages`` in force,
   divided by the idf of a term that occurs nowhere: a term found in no passage in force
   weighs 1.0, one found in every passage almost 0 ("Versicherer", "Vertrag" weigh little
   without any word list).
2. A word that is in the vocabulary is a term. One that is not is split over the
   vocabulary (at most three parts of at least four letters, a Fugen element -s/-es/-n/
   -en/-er/-e/-ens may close a modifier; fewest parts win, then the longest head); it is
   then a compound whose weight is that of its rarest part. Hyphenated words are
   compounds of their hyphen parts. A compound is supported by a text that contains it as
   such, or that contains *all* of its parts (a part may sit inside a longer word).
   All parts rather than "head plus one modifier": "Grunderwerbsteuersatz" must not be
   supported by a passage about some other "Satz" with a "Steuer" in it.
3. Quantities with a unit (``numbers_in``) and years (1900-2199, not part of a date) are
   salient; bare numbers are section references ("§ 2 Abs. 1") and are not. A quantity
   weighs 1.0 (it is what the answer must state); a year weighs by its own frequency.
4. Order: first occurrence in the question; one aspect per index term. Pure and
   deterministic: no set or dict order reaches the output.
5. Support by a text (salience-2): a stem of at least seven letters ending in -t (a
   participle or third-person verb form the stemmer keeps) is also supported by a term
   containing the index term of that stem without its -t: "beteiligt" by
   "Überschussbeteiligung", "verjährt" by "Verjährung".
6. (salience-3) The participle of an -ieren verb is also supported by the -ation noun of
   its root: "deklariert(e)" by "Überschussdeklaration", "kalkuliert" by "Kalkulation"
   (the -t rule cannot see this pair: "deklari" is not in "deklaration").

This module finds the aspects (rules 1 to 4). The split of rule 2 is
:mod:`stichtag.domain.compounds`; support by a text or by the passages in force (rules 5 and 6
and the compound half of rule 2) is :mod:`stichtag.domain.aspect_support`. ``SALIENCE_ID`` names
the rules of all three.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from stichtag.domain.compounds import split_compound
from stichtag.domain.german_terms import SNOWBALL_GERMAN_STOPWORDS, analyze, term
from stichtag.domain.quantities import STOPWORDS, numbers_in

__all__ = [
    "AMOUNT", "COMPOUND", "COMPOUND_PART", "KINDS", "LEXICAL_KINDS", "NON_SALIENT", "NUMBER",
    "PERCENTAGE", "SALIENCE_ID", "TERM", "YEAR", "Aspect", "InForce", "Part",
    "quantities_in", "salient_aspects", "surfaces",
]

SALIENCE_ID = "salience-3"

TERM, COMPOUND, COMPOUND_PART = "term", "compound", "compound_part"
NUMBER, YEAR, PERCENTAGE, AMOUNT = "number", "year", "percentage", "amount"
KINDS = (TERM, COMPOUND, COMPOUND_PART, NUMBER, YEAR, PERCENTAGE, AMOUNT)
LEXICAL_KINDS = frozenset({TERM, COMPOUND})  # what the scope gate judges

# Words that frame a question rather than carry its content (compared casefolded):
# question words, modal verbs, fillers, section references, calendar words, English.
NON_SALIENT = frozenset(STOPWORDS | SNOWBALL_GERMAN_STOPWORDS | set(str.split("""
ab pro wegen vielen wann wen wem wessen weshalb wieso wozu woran worauf wofür womit wonach
wovon worin inwiefern inwieweit wieviele wie viele hoch hohe hoher hohes lang groß große
darf dürfen durfte
musste mussten konnte konnten sollte sollten mag möchte wollen gibt gab geben genau konkret
bitte eigentlich aktuell aktuelle aktuellen derzeit derzeitig momentan zurzeit heute heutige
schon bereits insbesondere jeweils ebenfalls gemäß laut lt abs absatz absätze satz sätze nr
nummer art artikel paragraph paragraf paragraphen buchst buchstabe ziffer halbsatz
unterabsatz vgl ff stichtag stand jahr jahre jahren jahres monat tag januar jänner februar
märz april mai juni juli august september oktober november dezember
is are was were do does did done has having shall might must please tell me us i we you
my our your they them there their its itself such same other according regarding per
under over between within without more most less least very rule rules say says said
law laws january february march april may june july august september october november
december year years today now still yet
""")))


_MONTH = (r"(?:januar|jänner|februar|märz|maerz|april|mai|juni|juli|august|september"
          r"|oktober|november|dezember|january|february|march|may|june|july|october"
          r"|december|jan|feb|mär|apr|jun|jul|aug|sep|sept|okt|oct|nov|dez|dec)(?![^\W\d_])\.?")
_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}\.\s?\d{{1,2}}\.\s?\d{{2,4}}\b"
    rf"|\b\d{{1,2}}\.?\s*(?:of\s+)?{_MONTH}(?:\s*,?\s*\d{{4}})?"
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s*\d{{4}}\b|\b{_MONTH}\s+\d{{4}}\b",
    re.IGNORECASE)
_NUM = r"\d+(?:[.,\u00a0\u202f]\d+)*"
_QUANTITY = re.compile(
    rf"(?<![\w.,])(?:(?:euro?|€|usd|\$)\s?{_NUM}|{_NUM}\s?(?:%|‰|v\.\s?h\.|per\s?cent"
    rf"|vom\s+(?:hundert|tausend)|[^\W\d_]+))(?!\w)", re.IGNORECASE)
_YEAR = re.compile(r"(?<![\w.,])(?:19|20|21)\d{2}(?![\w]|[.,]\d)")
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
# The old DeckRV writes "1,75 vom Hundert" and "40 vom Tausend"; numbers_in knows "%", "‰".
_PER = re.compile(r"\s*vom\s+(hundert|tausend)\b", re.IGNORECASE)


def quantities_in(text: str) -> set[str]:
    """``numbers_in`` that also reads "vom Hundert" as % and "vom Tausend" as ‰."""
    return numbers_in(_PER.sub(lambda m: " %" if m[1].lower() == "hundert" else " ‰", text))


@dataclass(frozen=True, kw_only=True, slots=True)
class InForce:
    """What the lexical index holds at the as-of pair, as the caller looked it up.

    ``passages``: passages visible at (valid_at, known_at). ``df(term)``: how many of
    them contain the index term. ``vocabulary(term)``: whether the index knows the term
    at all (for decompounding; best the whole tenant vocabulary within the key's
    clearance, so that a compound of a later version stays one unknown word instead of
    falling apart into parts that are in force). ``co_df(terms)``, optional: passages in
    force containing all the terms (a conjunctive count), used to judge a split compound
    without texts.
    """

    passages: int
    df: Callable[[str], int]
    vocabulary: Callable[[str], bool]
    co_df: Callable[[Sequence[str]], int] | None = None

    @classmethod
    def from_counts(cls, passages: int, df: Mapping[str, int],
                    vocabulary: Iterable[str] = ()) -> InForce:
        """From a df table; the vocabulary is the table's terms plus ``vocabulary``."""
        table = dict(df)
        known = frozenset(table) | frozenset(vocabulary)
        return cls(passages=passages, df=lambda t: table.get(t, 0),
                   vocabulary=known.__contains__)

    @classmethod
    def from_texts(cls, texts: Iterable[str], vocabulary: Iterable[str] = ()) -> InForce:
        """Counted over passage texts in memory (tests, small tenants, evaluation)."""
        sets = [frozenset(analyze(t)) for t in texts]
        counts = Counter(t for s in sets for t in s)
        known = frozenset(counts) | frozenset(vocabulary)
        return cls(passages=len(sets), df=lambda t: counts.get(t, 0),
                   vocabulary=known.__contains__,
                   co_df=lambda ts: sum(1 for s in sets if all(t in s for t in ts)))

    def weight(self, index_term: str) -> float:
        """Rarity in force: BM25 idf relative to a term found nowhere (1.0) -> (0, 1]."""
        n = max(self.passages, 0)
        d = min(max(self.df(index_term), 0), n)
        return _idf(d, n) / _idf(0, n)


def _idf(d: int, n: int) -> float:
    return math.log(1.0 + (n - d + 0.5) / (d + 0.5))


@dataclass(frozen=True, kw_only=True, slots=True)
class Part:
    """One part of a split compound: the index term that supports it, and its weight."""

    surface: str
    stem: str
    weight: float
    kind: str = COMPOUND_PART


@dataclass(frozen=True, kw_only=True, slots=True)
class Aspect:
    """A salient aspect of a question.

    ``stems`` support the aspect as a whole (for a quantity: its normalized value, e.g.
    ``"1.75 %"``); a compound with ``parts`` is also supported by a text holding every
    part. ``start`` is the offset of ``surface`` in the question.
    """

    surface: str
    kind: str
    stems: tuple[str, ...]
    weight: float
    start: int
    parts: tuple[Part, ...] = ()


def _mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for s, e in spans:
        chars[s:e] = " " * (e - s)
    return "".join(chars)


def _names(documents: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """Index terms of the document names/keys/titles, and the digit runs in them."""
    terms: set[str] = set()
    digits: set[str] = set()
    for name in documents:
        for run in re.findall(r"[^\W\d_]+|\d+", unicodedata.normalize("NFC", name)):
            if run.isdigit():
                digits.add(run)
            elif (t := term(run)) is not None:
                terms.add(t)
    return frozenset(terms), frozenset(digits)


def _is_filler(word: str, names: frozenset[str]) -> bool:
    t = term(word)
    return word.casefold() in NON_SALIENT or t is None or t in names


def salient_aspects(question: str, in_force: InForce, *,
                    documents: Iterable[str] = ()) -> list[Aspect]:
    """The salient aspects of ``question`` at the as-of pair ``in_force`` describes.

    ``documents``: names, abbreviations, keys and titles of the documents in the
    evidence ("VVG", "deckrv", "Versicherungsaufsichtsgesetz"); their words are not
    salient, nor is a year right after such a name ("VAG 2016").
    """
    text = unicodedata.normalize("NFC", question)
    names, name_digits = _names(documents)
    text = _mask(text, (m.span() for m in _DATE.finditer(text)))
    found: list[Aspect] = []
    quantities = []
    for m in _QUANTITY.finditer(text):
        values = quantities_in(m.group())
        if len(values) == 1:
            value = next(iter(values))
            kind = (PERCENTAGE if value.endswith(("%", "‰")) else
                    AMOUNT if value.endswith(("EUR", "USD")) else NUMBER)
            found.append(Aspect(surface=m.group().strip(), kind=kind, stems=(value,),
                                weight=1.0, start=m.start()))
            quantities.append(m.span())
    text = _mask(text, quantities)
    for m in _YEAR.finditer(text):
        before = re.findall(r"[^\W\d_]+", text[: m.start()])
        if m.group() in name_digits and before and term(before[-1]) in names:
            continue
        found.append(Aspect(surface=m.group(), kind=YEAR, stems=(m.group(),),
                            weight=in_force.weight(m.group()), start=m.start()))
    for m in _WORD.finditer(text):
        aspect = _word_aspect(m.group(), m.start(), in_force, names)
        if aspect is not None:
            found.append(aspect)
    seen: set[tuple[str, ...]] = set()
    out = []
    for a in sorted(found, key=lambda a: (a.start, a.surface)):
        key = a.stems or tuple(p.stem for p in a.parts)
        if key not in seen:
            seen.add(key)
            out.append(a)
    return out


def _word_aspect(word: str, start: int, in_force: InForce,
                 names: frozenset[str]) -> Aspect | None:
    pieces = [p for p in word.split("-") if not _is_filler(p, names)]
    if not pieces:
        return None
    if len(pieces) > 1:  # hyphenated: the hyphen parts (each split further if unknown)
        hyphen_parts = tuple(part for p in pieces for part in _parts_of(p, in_force))
        return Aspect(surface=word, kind=COMPOUND, stems=(), start=start,
                      weight=max(p.weight for p in hyphen_parts), parts=hyphen_parts)
    piece = pieces[0]
    t = term(piece)
    assert t is not None  # _is_filler rejected stop words
    if in_force.vocabulary(t):
        return Aspect(surface=piece, kind=TERM, stems=(t,), weight=in_force.weight(t),
                      start=start)
    split = split_compound(piece, in_force.vocabulary)
    if not split:
        return Aspect(surface=piece, kind=TERM, stems=(t,), weight=in_force.weight(t),
                      start=start)
    parts = tuple(Part(surface=s, stem=st, weight=in_force.weight(st)) for s, st in split)
    return Aspect(surface=piece, kind=COMPOUND, stems=(t,), start=start,
                  weight=max(p.weight for p in parts), parts=parts)


def _parts_of(piece: str, in_force: InForce) -> list[Part]:
    t = term(piece)
    assert t is not None
    split = [] if in_force.vocabulary(t) else split_compound(piece, in_force.vocabulary)
    return ([Part(surface=s, stem=st, weight=in_force.weight(st)) for s, st in split]
            or [Part(surface=piece, stem=t, weight=in_force.weight(t))])


def surfaces(aspects: Iterable[Aspect]) -> list[str]:
    """The aspects as the question wrote them, in order (for gaps and details)."""
    return [a.surface for a in aspects]

