"""Where a cited sentence stands in another version of the same document.

A citation pins ``[start, end)`` of one immutable version. Against the document's current
version it is ``unchanged`` (the same sentence at the same offsets), ``moved`` (the same
sentence, by hash, elsewhere), ``changed`` (no identical sentence; the most similar one is
reported with its similarity) or ``removed`` (nothing similar enough).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

CHANGED_MIN_SIMILARITY = 0.6
"""Below this character-level similarity a sentence counts as removed, not changed."""

Status = Literal["unchanged", "moved", "changed", "removed"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Located:
    """A sentence of the target version: offsets, text and hash."""

    start: int
    end: int
    text: str
    hash: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class Anchor:
    """The result of re-anchoring one cited sentence."""

    status: Status
    target: Located | None
    similarity: float


def reanchor(quote: str, quote_hash: bytes, start: int, candidates: Sequence[Located],
             *, same_version: bool = False) -> Anchor:
    """Locate a cited sentence among the sentences of another version."""
    same = [c for c in candidates if c.hash == quote_hash]
    if same:
        # Several identical sentences: the nearest to the old offset is the one it was.
        best = min(same, key=lambda c: (abs(c.start - start), c.start))
        status: Status = "unchanged" if best.start == start or same_version else "moved"
        return Anchor(status=status, target=best, similarity=1.0)
    best_similarity = 0.0
    best_candidate: Located | None = None
    for candidate in candidates:
        matcher = difflib.SequenceMatcher(None, quote, candidate.text, autojunk=False)
        # Cheap upper bounds first: most sentences are nowhere near.
        if (matcher.real_quick_ratio() <= best_similarity
                or matcher.quick_ratio() <= best_similarity):
            continue
        similarity = matcher.ratio()
        if similarity > best_similarity or (
                similarity == best_similarity and best_candidate is not None
                and abs(candidate.start - start) < abs(best_candidate.start - start)):
            best_similarity, best_candidate = similarity, candidate
    if best_candidate is None or best_similarity < CHANGED_MIN_SIMILARITY:
        return Anchor(status="removed", target=None, similarity=round(best_similarity, 4))
    return Anchor(status="changed", target=best_candidate, similarity=round(best_similarity, 4))
