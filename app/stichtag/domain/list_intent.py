"""List questions recognised by meaning (docs/semantics.md, "List questions by meaning").

The whole-question patterns of ``stichtag.domain.listing`` catch the common phrasings; a
question phrased a little differently ("Welche Stände der Annahmerichtlinie sind
vorhanden?", "Show the revision history of the claims handbook.") is recognised here from
its e5 query vector by two linear models fitted by ``eval/fit_list_intent.py``
(``list_intent_fit``): one scores list against content, the other tells the versions of a
document from the documents on a topic. The intent cut carries a margin above the
cross-validated one, so an unsure question stays a content question.

What the question lists is read from its words: the subject is what remains after the
words that frame a catalogue question are taken away, and the years name the window.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from stichtag.domain import list_intent_fit as fitted
from stichtag.domain.listing import DOCUMENTS, VERSIONS, ListQuestion

# Words that frame a question about the collection, not its subject (lower case).
_FRAMING = frozenset("""
welche welcher welches welchen was wie viele viel gibt es gab existieren existiert liegen
liegt vor sind ist waren war galten gilt galt gelten kraft alle alles aller zeig zeige mir
uns bitte liste listen auf auflisten kannst könnt du ihr habt hast haben wir hat der die das
des dem den zu zum zur über ueber thema von vom im in jahr jahren seit bis zwischen und oder
ab fassungen fassung versionen version ausgaben ausgabe stände stand änderungsstände historie
versionsgeschichte geschichte dokumente dokumenten dokument unterlagen quellen texte text
gespeichert hinterlegt verfügbar vorhanden veröffentlicht kennt kennst system
wissensdatenbank sammlung bestand katalog überblick einen einzelnen früheren bisherigen gib
wann wurde wurden geändert überall terminen neu gefasst gültigkeitszeiträume enthält für um
geht aus sieht
which what how many much are is were was there exist exists do does you we have has had on
about regarding concerning the a an of in to for during since between and or from all every
list show me give us please can could versions version editions edition releases release
revisions revision history documents document files file sources source material available
stored published knowledge base collection catalogue catalog overview past previous when
amended revised dates date over time periods period validity valid each force applied apply
applicable effect deal deals with covered cover contain contains know here that on your
our my i dir bei ich kann nachschlagen look up
""".split())
_WORD = re.compile(r"[\w§][\w§./\-]*", re.UNICODE)
# a year stands alone: not the number of a circular (2/2017) or part of a date (1.1.2020,
# 2026-03-17); "2016-2019" is a span of two
_YEAR = re.compile(r"(?<![\w/.])(1[89]\d\d|2\d\d\d)(?![\w/]|-\d\d-\d\d)")
_SINCE = re.compile(r"\b(?:seit|since|ab|from|after)\s+(?:dem\s+jahr\s+)?(1[89]\d\d|2\d\d\d)"
                    r"(?![\w/])", re.I)
_OPEN_END = 9998  # "since 2015": the window runs to the end of the calendar


def intent_score(vector: Sequence[float]) -> float:
    """The list-against-content score of a unit query vector (a scaled cosine plus bias)."""
    return _dot(vector, fitted.INTENT) + fitted.INTENT_BIAS


def asks_for_list(vector: Sequence[float]) -> bool:
    """Whether the question embedded as ``vector`` asks about the collection."""
    return intent_score(vector) > fitted.INTENT_CUT


def subject_words(question: str) -> str:
    """The question's words that are not catalogue framing or years, in its spelling."""
    words = [w.strip(".-") for w in _WORD.findall(question)]
    return " ".join(w for w in words
                    if w and w.casefold() not in _FRAMING and not _YEAR.fullmatch(w))


def years(question: str) -> tuple[int, int] | None:
    """The window the question names: one year, a span of two, or from a year on."""
    since = _SINCE.search(question)
    found = [int(y) for y in _YEAR.findall(question)]
    if since and len(found) == 1:
        return int(since.group(1)), _OPEN_END
    if len(found) == 1:
        return found[0], found[0]
    if len(found) == 2 and found[0] <= found[1]:
        return found[0], found[1]
    return None


def learned_list_question(question: str, vector: Sequence[float],
                          model: str) -> ListQuestion | None:
    """The list question ``question`` asks by meaning, or None: a content question, a vector
    of another embedding model than the fitted one, a version question naming no document,
    or one whose years make no window. A documents question naming no topic asks for the
    whole collection (subject "")."""
    if model.split(":", maxsplit=1)[0] != fitted.MODEL or not asks_for_list(vector):
        return None
    subject = subject_words(question)
    versions = _dot(vector, fitted.KIND) + fitted.KIND_BIAS > 0
    if not subject:  # "What documents do you have?": the whole collection; versions of what?
        return None if versions else ListQuestion(kind=DOCUMENTS, subject="")
    if versions:
        window = years(question)
        if window is None and _YEAR.search(question):  # "2021 bis 2019": no window
            return None
        return ListQuestion(kind=VERSIONS, subject=subject, years=window)
    return ListQuestion(kind=DOCUMENTS, subject=subject)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(x * y for x, y in zip(a, b, strict=True)))
