"""Scope across languages: when a question and the passages it found are in different
languages, words say nothing about scope, meaning does.

The lexical scope gate (:mod:`stichtag.domain.scope`) asks whether the question's salient
words occur in force. An English question over German statutes fails it whatever it asks,
because English words do not occur in German text. So when the question's language is
known and some candidate passages are in another one (``Crossing``), a question the
lexical gates stop is judged again on the semantic evidence of those passages: the best
embedding cosine among them against a threshold fitted on the fit half of the law question
set (``stichtag.services.crosslang_fit``). A refusal then names missing terms only where
they mean something: when every candidate is in another language, it names the semantic
value and its threshold instead.

Questions whose lexical gates pass, and questions in the language of their passages, are
decided exactly as before. ``CROSS_ID`` names this rule; a run records it, and a run
recorded before it replays without it (docs/architecture.md §8).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stichtag.domain.answer import SCOPE, GateDecision
from stichtag.domain.language import LANGUAGE_ID, detect
from stichtag.domain.question_terms import QUESTION_TERMS_ID

__all__ = ["CROSS_ID", "Crossing", "crossing_of", "gate_scope_across"]

CROSS_ID = "xlang-1"


@dataclass(frozen=True, kw_only=True, slots=True)
class Crossing:
    """The language of a question and of each candidate passage (None: unknown)."""

    question: str | None
    passages: tuple[str | None, ...]

    def others(self) -> tuple[int, ...]:
        """Indices of the candidates written in a known language other than the question's
        (none when the question's language is unknown)."""
        if self.question is None:
            return ()
        return tuple(i for i, lang in enumerate(self.passages)
                     if lang is not None and lang != self.question)

    def pure(self) -> bool:
        """Whether no candidate is in the question's language (words compare nothing)."""
        return bool(self.others()) and self.question not in self.passages

    def record(self) -> dict[str, Any]:
        """What a run records (replay recomputes it from the same texts)."""
        return {"id": CROSS_ID, "detector": LANGUAGE_ID, "gaps": QUESTION_TERMS_ID,
                "question": self.question, "passages": list(self.passages)}


def crossing_of(question: str, texts: Sequence[str]) -> Crossing:
    """Detect the languages of a question and its candidate passages."""
    return Crossing(question=detect(question), passages=tuple(detect(t) for t in texts))


def best_across(crossing: Crossing, raw: Sequence[float]) -> float | None:
    """The best raw rerank score (the e5 cosine by default) among the candidates in
    another language; None when there is none or it is not a number."""
    values = [raw[i] for i in crossing.others()]
    best = max(values, default=None)
    return None if best is None or math.isnan(best) else best


def _languages(crossing: Crossing) -> str:
    others = sorted({lang for lang in crossing.passages
                     if lang is not None and lang != crossing.question})
    return f"question in {crossing.question}, passages in {', '.join(others)}"


def gate_scope_across(lexical: GateDecision, crossing: Crossing, best: float | None,
                      threshold: float) -> GateDecision:
    """The scope decision for a question the lexical gates stopped, with candidates in
    another language: passes when their best cosine reaches ``threshold``.

    A refusal's detail names the missing words only when some candidate shares the
    question's language (there, words mean something); otherwise it names the semantic
    value and threshold. NaN and a missing value fail.
    """
    where = _languages(crossing)
    if best is not None and best >= threshold and not math.isnan(threshold):
        return GateDecision(gate=SCOPE, passed=True, threshold=threshold, observed=best,
                            detail=f"{where}: best cosine {best:.4f} >= {threshold} across "
                                   "languages (words are not compared across languages)")
    value = "no candidate" if best is None else f"best cosine {best:.4f}"
    if crossing.pure():
        return GateDecision(gate=SCOPE, passed=False, threshold=threshold, observed=best,
                            detail=f"{where}: {value} below {threshold}; words are not "
                                   "compared across languages")
    return GateDecision(gate=SCOPE, passed=False, threshold=lexical.threshold,
                        observed=lexical.observed,
                        detail=f"{lexical.detail}; {where}: {value} below {threshold}")
