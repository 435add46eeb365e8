"""German compounds split over a vocabulary: rule 2 of :mod:`stichtag.domain.salience`.

"Grunderwerbsteuersatz" is unknown to an index that knows "grunderwerb", "steuer" and
"satz"; the split names the parts a passage must hold to support the compound. Separate
from the salience rules because it is a self-contained search (fewest parts, then the
longest head) that needs nothing but the index's ``term`` and a vocabulary lookup. Any
change of its result changes salience and bumps ``SALIENCE_ID``.
"""

from __future__ import annotations

from collections.abc import Callable

from stichtag.domain.german_terms import term

__all__ = ["split_compound"]

_FUGEN = ("ens", "es", "en", "er", "s", "n", "e")
_MIN_PART = 4
_MAX_PARTS = 3


def split_compound(word: str, vocabulary: Callable[[str], bool]) -> list[tuple[str, str]]:
    """(surface piece, index term) parts of ``word`` over the vocabulary, or [] if none.

    Rule 2 of :mod:`stichtag.domain.salience`; the surface pieces keep the question's spelling
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
