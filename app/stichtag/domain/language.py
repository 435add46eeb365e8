"""Which language a question or a passage is written in: German, English, or unknown.

Function words decide, not content words: every German or English sentence of some length
uses articles, pronouns, prepositions and auxiliaries, and their lists are closed (the
German list is Snowball's, the one the index analyzer drops; the English list is
Snowball's English stop list). Words that are function words in both languages ("in",
"so", "was", "am", "an", "die", "also") count for neither. Umlauts and ß count as German.
A text is the language with more evidence when it has at least ``MIN_EVIDENCE`` words of
evidence and leads by at least ``MARGIN`` of them; otherwise it is unknown, and a caller
treats unknown as "no language difference" (the lexical rules apply as before).

``LANGUAGE_ID`` names this rule; it is recorded with every answer (docs/architecture.md §7).
"""

from __future__ import annotations

import re

from stichtag.domain.german_terms import SNOWBALL_GERMAN_STOPWORDS

__all__ = ["DE", "EN", "LANGUAGE_ID", "detect"]

LANGUAGE_ID = "lang-1"
DE, EN = "de", "en"
MIN_EVIDENCE = 1
MARGIN = 1

# Snowball's English stop word list (snowballstem.org, english/stop.txt), contractions left
# out because the tokenizer below splits at apostrophes.
SNOWBALL_ENGLISH_STOPWORDS = frozenset(str.split("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
she her hers herself it its itself they them their theirs themselves what which who whom
this that these those am is are was were be been being have has had having do does did
doing would should could ought a an the and but if or because as until while of at by for
with about against between into through during before after above below to from up down
in out on off over under again further then once here there when where why how all any
both each few more most other some such no nor not only own same so than too very
""")) | {"can", "will", "must", "shall", "may", "within", "whose", "according", "under"}

_BOTH = SNOWBALL_ENGLISH_STOPWORDS & SNOWBALL_GERMAN_STOPWORDS
_GERMAN = SNOWBALL_GERMAN_STOPWORDS - _BOTH
_ENGLISH = SNOWBALL_ENGLISH_STOPWORDS - _BOTH
_WORD = re.compile(r"(?<!\w)[^\W\d_]+(?!\w)")  # whole words: not the "a" of "§ 104a"
_GERMAN_LETTERS = re.compile(r"[äöüß]", re.IGNORECASE)


def evidence(text: str) -> tuple[int, int]:
    """(German, English) evidence: function words of each language, plus one German point
    per word with an umlaut or ß."""
    german = english = 0
    for word in _WORD.findall(text):
        low = word.casefold()
        if low in _GERMAN:
            german += 1
        elif low in _ENGLISH:
            english += 1
        if _GERMAN_LETTERS.search(low):
            german += 1
    return german, english


def detect(text: str) -> str | None:
    """``"de"``, ``"en"`` or None (too little evidence, or too close to call)."""
    german, english = evidence(text)
    if max(german, english) < MIN_EVIDENCE or abs(german - english) < MARGIN:
        return None
    return DE if german > english else EN
