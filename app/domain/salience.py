"""Question salience: which parts of a question an answer must support, and how strongly.

A question is turned into *aspects*: content terms, German compounds (judged by their
parts), quantities (numbers, percentages, amounts) and years. Each aspect carries the
surface form in the question's own words (for gaps and abstention details), the index
terms that count as support, and a weight: its rarity among the passages in force at the
as-of pair. Question words, stop words, dates (the as-of pair's business), section
references and the names of the documents in the evidence are not salient.

Everything the corpus knows comes in through :class:`InForce`, which the caller builds
from its lexical index at the as-of pair; this module does no I/O and imports no adapter.
Terms are the index's terms (:mod:`app.domain.german_terms`), so a document frequency is
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
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from app.domain.answer import STOPWORDS, numbers_in
from app.domain.german_terms import SNOWBALL_GERMAN_STOPWORDS, analyze, term

__all__ = [
    "AMOUNT", "COMPOUND", "COMPOUND_PART", "KINDS", "LEXICAL_KINDS", "NON_SALIENT", "NUMBER",
    "PERCENTAGE", "SALIENCE_ID", "TERM", "YEAR", "Aspect", "InForce", "Part", "Support",
    "quantities_in", "salient_aspects", "split_compound", "support", "support_in_force",
    "surfaces",
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

_FUGEN = ("ens", "es", "en", "er", "s", "n", "e")
_MIN_PART = 4
_MAX_PARTS = 3
_MIN_CONTAINED = 4  # stems this long may be found inside a longer term
_MIN_VERB_FORM = 7  # a stem this long ending in -t may also match without its -t

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


def split_compound(word: str, vocabulary: Callable[[str], bool]) -> list[tuple[str, str]]:
    """(surface piece, index term) parts of ``word`` over the vocabulary, or [] if none.

    Rule 2 of the module docstring; the surface pieces keep the question's spelling
    (Fugen element included), so gaps read as the user wrote them.
    """
    low = word.lower()
    n = len(low)
    # best[i]: the best split of low[:i] as (part count, pieces); fewer parts first
    best: list[list[tuple[str, str]] | None] = [None] * (n + 1)
    best[0] = []
    for i in range(n):
        head = best[i]
        if head is None or len(head) >= _MAX_PARTS:
            continue
        for j in range(i + _MIN_PART, n + 1):
            piece = low[i:j]
            stem = _piece_term(piece, final=j == n, vocabulary=vocabulary)
            if stem is None:
                continue
            candidate = [*head, (word[i:j], stem)]
            current = best[j]
            if current is None or _better(candidate, current):
                best[j] = candidate
    found = best[n]
    return found if found is not None and len(found) >= 2 else []


def _better(a: list[tuple[str, str]], b: list[tuple[str, str]]) -> bool:
    """Fewer parts, then the longer last part, then the lexically smaller pieces."""
    ka = (len(a), -len(a[-1][0]), [p for p, _ in a])
    kb = (len(b), -len(b[-1][0]), [p for p, _ in b])
    return ka < kb


def _piece_term(piece: str, *, final: bool, vocabulary: Callable[[str], bool]) -> str | None:
    t = term(piece)
    if t is not None and vocabulary(t):
        return t
    if final:
        return None
    for linker in _FUGEN:  # a modifier may end in a Fugen element: "Rechnungs|zins"
        core = piece[: -len(linker)]
        if piece.endswith(linker) and len(core) >= _MIN_PART:
            t = term(core)
            if t is not None and vocabulary(t):
                return t
    return None


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


# --- support ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Support:
    """Which aspects a body of text supports, in the aspects' order."""

    covered: tuple[Aspect, ...]
    uncovered: tuple[Aspect, ...]

    def share(self, kinds: Iterable[str] | None = None) -> float | None:
        """Weighted share of salient weight covered (restricted to ``kinds``); None if empty."""
        allowed = None if kinds is None else frozenset(kinds)
        cov = sum(a.weight for a in self.covered if allowed is None or a.kind in allowed)
        unc = sum(a.weight for a in self.uncovered if allowed is None or a.kind in allowed)
        return cov / (cov + unc) if cov + unc > 0 else None


class _Text:
    """One text, analyzed once: its index terms and its quantities."""

    __slots__ = ("numbers", "terms")

    def __init__(self, text: str) -> None:
        self.terms = frozenset(analyze(text))
        self.numbers = quantities_in(text)

    def has(self, stem: str) -> bool:
        if stem in self.terms:
            return True
        if len(stem) >= _MIN_CONTAINED and any(stem in t for t in self.terms):
            return True
        # A participle or third-person verb form ("beteiligt", "verjährt") is supported by
        # its noun ("Überschussbeteiligung", "Verjährung"): the stemmer leaves the -t.
        if len(stem) >= _MIN_VERB_FORM and stem.endswith("t"):
            base = term(stem[:-1])  # the index term of the form without its -t
            if base is not None and len(base) >= _MIN_CONTAINED + 1 and any(
                    base in t for t in self.terms):
                return True
        # "deklariert" by "Deklaration": an -ieren verb's participle by its -ation noun.
        if len(stem) >= _MIN_VERB_FORM + 2 and stem.endswith("iert"):
            noun = stem[:-4] + "ation"
            return any(noun in t for t in self.terms)
        return False

    def covers(self, aspect: Aspect) -> bool:
        if aspect.kind in (NUMBER, PERCENTAGE, AMOUNT):
            return any(v in self.numbers for v in aspect.stems)
        if aspect.kind == YEAR:
            return any(v in self.terms for v in aspect.stems)
        if any(self.has(s) for s in aspect.stems):
            return True
        return bool(aspect.parts) and all(self.has(p.stem) for p in aspect.parts)


def _split(aspects: Sequence[Aspect], covered: Callable[[Aspect], bool]) -> Support:
    flags = [covered(a) for a in aspects]
    return Support(covered=tuple(a for a, f in zip(aspects, flags, strict=True) if f),
                   uncovered=tuple(a for a, f in zip(aspects, flags, strict=True) if not f))


def support(aspects: Sequence[Aspect], texts: Iterable[str]) -> Support:
    """Covered: some one text supports the aspect (a compound's parts all in that text).

    Matching is the index's: case, umlauts and inflection endings do not matter
    ("Höchstrechnungszinses" supports "Höchstrechnungszins"); a stem of four or more
    letters may sit inside a longer word ("Zillmersatz" in "Höchstzillmersätze").
    """
    analyzed = [_Text(t) for t in texts]
    return _split(aspects, lambda a: any(t.covers(a) for t in analyzed))


def support_in_force(aspects: Sequence[Aspect], in_force: InForce,
                     texts: Iterable[str] = ()) -> Support:
    """Support by the passages in force, for the scope gate (lexical aspects only).

    A term is supported when its df is positive or a text supports it; a compound when it
    occurs as such, or (with ``co_df``) its parts occur together in some passage in force,
    or a text holds all its parts. Without ``co_df`` and texts, a split compound counts
    as supported only as such: the parts' separate counts say nothing about one passage.
    ``texts`` are the visible candidates the caller retrieved.
    """
    lexical = [a for a in aspects if a.kind in LEXICAL_KINDS]
    analyzed = [_Text(t) for t in texts]

    def covered(a: Aspect) -> bool:
        if any(in_force.df(s) > 0 for s in a.stems) or any(t.covers(a) for t in analyzed):
            return True
        if a.parts and in_force.co_df is not None:
            return in_force.co_df([p.stem for p in a.parts]) > 0
        return False

    return _split(lexical, covered)


def surfaces(aspects: Iterable[Aspect]) -> list[str]:
    """The aspects as the question wrote them, in order (for gaps and details)."""
    return [a.surface for a in aspects]

