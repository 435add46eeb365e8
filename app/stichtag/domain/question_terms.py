"""Gaps only for content words: which uncovered aspects a ``partial`` answer lists.

Salience weighs a word by its rarity in the corpus, so a word that never occurs in statutes
(an interrogative, the question's verb: "Worüber", "regelt", "provide") weighs most, and
an answer that cites the right sentence was listed as ``partial`` with such a word as its
gap. Which words frame questions is learned from question sides instead
(``eval/fit_question_terms.py``): a term used in the questions of many different subjects
(``FRAMING``, fitted on the law question set's fit half and XQuAD's fitting articles)
frames questions whatever they ask, and is never listed as a gap; it stays an aspect for
everything else (scope, relevance, covering). ``QUESTION_TERMS_ID`` names the rule and its
fitted table; a run records it, and a run recorded before it replays without it.
"""

from __future__ import annotations

from collections.abc import Iterable

from stichtag.domain.question_terms_fit import FRAMING
from stichtag.domain.salience import TERM, Aspect

__all__ = ["QUESTION_TERMS_ID", "content_gaps", "frames"]

QUESTION_TERMS_ID = "qterms-1"


def frames(aspect: Aspect) -> bool:
    """Whether a term aspect is a framing word (every index term of it is in FRAMING)."""
    return aspect.kind == TERM and bool(aspect.stems) and all(s in FRAMING for s in aspect.stems)


def content_gaps(uncovered: Iterable[Aspect]) -> tuple[Aspect, ...]:
    """The uncovered aspects a reader is told about: all but framing words."""
    return tuple(a for a in uncovered if not frames(a))
