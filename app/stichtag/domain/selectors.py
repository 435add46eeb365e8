"""W3C Web Annotation selectors: a quote found again by its text, not by its offsets.

A citation pins ``[start, end)`` of one immutable version. Its TextQuoteSelector
(``exact`` = the quote, ``prefix`` and ``suffix`` = up to :data:`CONTEXT` code points
before and after it) survives edits that shift offsets: :func:`find_quote` looks for it
in another text exactly, then, when the quote occurs more than once, by how much of its
prefix and suffix surround each occurrence, and otherwise fuzzily among the text's
sentences. Positions are code points (the W3C TextPositionSelector counts characters,
not UTF-16 code units).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from stichtag.domain.reanchor import CHANGED_MIN_SIMILARITY

CONTEXT = 32
"""Code points of prefix and suffix kept in a TextQuoteSelector (fewer at the text's ends)."""

Method = Literal["exact", "context", "fuzzy"]
"""How a quote was found: the only occurrence; the occurrence its prefix and suffix
surround best; the most similar sentence."""


def quote_context(text: str, start: int, end: int) -> tuple[str, str]:
    """The prefix and suffix of ``text[start:end]``: up to :data:`CONTEXT` code points."""
    return text[max(0, start - CONTEXT):start], text[end:end + CONTEXT]


@dataclass(frozen=True, kw_only=True, slots=True)
class TextQuote:
    """A TextQuoteSelector: the exact quote and the text around it where it was taken."""

    exact: str
    prefix: str = ""
    suffix: str = ""

    def __post_init__(self) -> None:
        """An empty quote matches everywhere and nowhere in particular."""
        if not self.exact:
            raise ValueError("exact must not be empty")


@dataclass(frozen=True, kw_only=True, slots=True)
class QuoteMatch:
    """Where a quote was found: ``[start, end)`` in the searched text and how.

    ``occurrences`` counts the exact occurrences (0 for a fuzzy match); ``similarity`` is
    1.0 for an exact or context match, else the character similarity of the sentence.
    """

    start: int
    end: int
    method: Method
    similarity: float
    occurrences: int


def _occurrences(text: str, exact: str) -> list[int]:
    found: list[int] = []
    at = text.find(exact)
    while at != -1:
        found.append(at)
        at = text.find(exact, at + 1)
    return found


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def context_score(text: str, start: int, end: int, quote: TextQuote) -> int:
    """How many code points of the quote's prefix and suffix stand right around
    ``[start, end)`` in ``text``."""
    before = text[max(0, start - len(quote.prefix)):start]
    after = text[end:end + len(quote.suffix)]
    return _common_suffix(before, quote.prefix) + _common_prefix(after, quote.suffix)


def find_quote(text: str, quote: TextQuote, sentences: Sequence[tuple[int, int]], *,
               near: int | None = None) -> QuoteMatch | None:
    """Find ``quote`` in ``text``: exact, then prefix/suffix disambiguation, then fuzzy.

    ``sentences`` are the text's sentence spans, the candidates of a fuzzy match (at least
    :data:`~stichtag.domain.reanchor.CHANGED_MIN_SIMILARITY` similar). ``near`` (a position the
    quote had, e.g. from a TextPositionSelector) breaks ties between equally surrounded
    occurrences; without it the first in the text wins. None: nothing similar enough.
    """
    width = len(quote.exact)
    starts = _occurrences(text, quote.exact)
    if len(starts) == 1:
        return QuoteMatch(start=starts[0], end=starts[0] + width, method="exact",
                          similarity=1.0, occurrences=1)
    if starts:
        best = max(starts, key=lambda s: (context_score(text, s, s + width, quote),
                                          -abs(s - near) if near is not None else 0, -s))
        return QuoteMatch(start=best, end=best + width, method="context", similarity=1.0,
                          occurrences=len(starts))
    return _fuzzy(text, quote, sentences, near)


def _fuzzy(text: str, quote: TextQuote, sentences: Sequence[tuple[int, int]],
           near: int | None) -> QuoteMatch | None:
    best: tuple[float, int, int] | None = None  # (similarity, context, -distance)
    where: tuple[int, int] | None = None
    for start, end in sentences:
        matcher = difflib.SequenceMatcher(None, quote.exact, text[start:end], autojunk=False)
        floor = best[0] if best else 0.0
        # Cheap upper bounds first: most sentences are nowhere near.
        if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
            continue
        similarity = matcher.ratio()  # rounded only when reported: the bounds are exact
        key = (similarity, context_score(text, start, end, quote),
               -abs(start - near) if near is not None else 0)
        if best is None or key > best:
            best, where = key, (start, end)
    if best is None or where is None or best[0] < CHANGED_MIN_SIMILARITY:
        return None
    return QuoteMatch(start=where[0], end=where[1], method="fuzzy",
                      similarity=round(best[0], 4), occurrences=0)
