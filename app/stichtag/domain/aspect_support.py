"""Support: which salient aspects of a question a text, or the passages in force, support.

The other half of salience (rules 5 and 6 of :mod:`stichtag.domain.salience`, and the compound
half of rule 2): :mod:`stichtag.domain.salience` says what a question asks for, this module
checks a body of text against it, for the gaps of an answer, the partial rule and the
scope gate. Matching is the index's (``analyze``), so a stem found here is a stem the
lexical index counts. Any change of its verdicts bumps ``SALIENCE_ID``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from stichtag.domain.german_terms import analyze, term
from stichtag.domain.salience import (
    AMOUNT,
    LEXICAL_KINDS,
    NUMBER,
    PERCENTAGE,
    YEAR,
    Aspect,
    InForce,
    quantities_in,
)

__all__ = ["Support", "support", "support_in_force"]

_MIN_CONTAINED = 4  # stems this long may be found inside a longer term
_MIN_VERB_FORM = 7  # a stem this long ending in -t may also match without its -t


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
