"""The model side of the sentence rule: each candidate sentence's cosine to the question.

``stichtag.domain.sentence_rule`` says how a sentence's factor is computed; this module
runs the embedder for the rules that read meaning. The sentences one answer may cite
first are embedded as one list, in evidence order, with the ``passage:`` prefix and their
section headings (exactly what ``eval/fit_sentence_rule.py`` fitted on). The int8 graph's
vectors depend on their batch-mates (docs/models.md, "Replayability rule for int8"): the
list is a function of the run's evidence, so a replay that recomputes the evidence
recomputes the same cosines on the same machine, and names any difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stichtag.domain.passages import embed_text, section_of
from stichtag.domain.sentence_rule import (
    OVERLAP_RULE,
    READ_AT_MOST,
    READ_CHARS,
    SentenceRule,
    read_by_model,
)
from stichtag.ports import Embedder, Reranker


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """A sentence before it becomes evidence: its passage's rank and its features."""

    passage: int
    quote: str
    heading_path: tuple[str, ...]
    overlap: float


@dataclass(frozen=True, kw_only=True)
class SentenceScoring:
    """What one run's sentence scores were computed with; recorded and replayed."""

    rule: SentenceRule
    model: str | None
    cosines: list[float | None] = field(default_factory=list)
    cross_model: str | None = None
    """The cross-encoder that read the sentences (rules that read its logit)."""
    logits: list[float | None] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The run record's ``sentence_scores`` entry (logits only for rules that read
        them, so earlier records compare equal)."""
        out: dict[str, Any] = {"rule": self.rule.rule_id, "model": self.model,
                               "cosines": self.cosines}
        if self.rule.reads_cross:
            out.update(cross_model=self.cross_model, logits=self.logits)
        return out


def score_candidates(rule: SentenceRule, candidates: Sequence[Candidate],
                     passage_scores: Sequence[float], *, embedder: Embedder | None,
                     model: str | None, query_vector: Any, question: str = "",
                     cross: Reranker | None = None) -> SentenceScoring:
    """The cosine (and, for a rule that reads it, the cross-encoder's logit) of each
    candidate the rule reads (None for the others)."""
    cosines: list[float | None] = [None] * len(candidates)
    logits: list[float | None] = [None] * len(candidates)
    if not rule.reads_meaning or embedder is None or query_vector is None:
        return SentenceScoring(rule=rule, model=None, cosines=cosines)
    read = read_by_model(passage_scores)
    idx = [i for i, c in enumerate(candidates) if read[c.passage]][:READ_AT_MOST]
    if idx:
        texts = [embed_text(section_of(candidates[i].heading_path),
                            candidates[i].quote[:READ_CHARS]) for i in idx]
        sims = np.asarray(embedder.embed_passages(texts)) @ np.asarray(query_vector)
        for i, s in zip(idx, sims, strict=True):
            cosines[i] = round(float(s), 6)
        if rule.reads_cross and cross is not None:
            for i, x in zip(idx, cross.score(question, texts), strict=True):
                logits[i] = round(float(x), 6)
    return SentenceScoring(rule=rule, model=model, cosines=cosines,
                           cross_model=cross.model_hash if cross is not None else None,
                           logits=logits)


def recorded_rule(record: dict[str, Any]) -> str:
    """The sentence rule a recorded run used: the one it names, else word overlap (every
    run recorded before the rule was named)."""
    named = record.get("sentence_scores")
    return str(named["rule"]) if named else OVERLAP_RULE


def differences(recorded: dict[str, Any] | None, replayed: SentenceScoring | None,
                tolerance: float = 1e-6) -> list[tuple[str, Any, Any]]:
    """(what, recorded, replayed) for each way a replay's sentence scoring differs from
    the record: rule or model, or a cosine by more than ``tolerance``."""
    if recorded is None or replayed is None:
        return []
    again = replayed.record()
    if (recorded["rule"], recorded["model"]) != (again["rule"], again["model"]):
        return [("sentence_scores.model", [recorded["rule"], recorded["model"]],
                 [again["rule"], again["model"]])]
    if recorded.get("cross_model") != again.get("cross_model"):
        return [("sentence_scores.cross_model", recorded.get("cross_model"),
                 again.get("cross_model"))]
    out = []
    for name in ("cosines", "logits"):
        was, now = recorded.get(name, []), again.get(name, [])
        if len(was) != len(now):
            out.append((f"sentence_scores.{name}", was, now))
            continue
        out.extend((f"sentence_scores.{name}[{i}]", a, b)
                   for i, (a, b) in enumerate(zip(was, now, strict=True))
                   if (a is None) != (b is None)
                   or (a is not None and b is not None and abs(a - b) > tolerance))
    return out
