"""Scope and relevance across languages, for :class:`stichtag.services.answer.AnswerService`.

When the lexical gates stop a question and some of its candidates are written in another
language than the question, each gate that words failed is judged again on those
candidates' semantic evidence (``stichtag.domain.crosslang``): scope by the best cosine
against the fitted ``CROSS_SCOPE``, relevance by the fitted one-feature model
``CROSS_RELEVANCE`` against the tenant's θ_rel. When both hold, the answer is drawn from
those candidates alone, best cosine first, and without the question's words as salient
aspects: a German word cannot be covered by an English sentence, so gaps and the
answer-support gate would only list the question's own words (docs/salience.md, "The
partial rule").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from stichtag.domain.answer import ABSTAINED, RELEVANCE, SCOPE, GateDecision, gate_relevance
from stichtag.domain.crosslang import best_across, gate_scope_across
from stichtag.domain.language import detect
from stichtag.domain.relevance import RelevanceModel
from stichtag.domain.retrieval import Hit
from stichtag.services.access import Principal
from stichtag.services.answer_result import AnswerResult
from stichtag.services.assess import Assessment, hit_text
from stichtag.services.crosslang_fit import CROSS_RELEVANCE, CROSS_SCOPE
from stichtag.services.search import SearchService

MODEL = RelevanceModel.from_dict(CROSS_RELEVANCE)
WIDER = 4
"""How far to look for candidates in another language: this many times the run's number
of passages, fused (retrieval ranks same-language passages first, so a German answer to an
English question is rarely among the first eight)."""


@dataclass(frozen=True, kw_only=True)
class Across:
    """The gate decisions across languages and the candidates an answer may draw from."""

    decisions: list[GateDecision]
    order: list[int]

    @property
    def passed(self) -> bool:
        """Whether scope and relevance hold on the semantic evidence."""
        return all(d.passed for d in self.decisions)


def decide_across(assessment: Assessment, raw: Sequence[float],
                  decisions: Sequence[GateDecision], *, theta_rel: float,
                  stale: str | None, cross_encoder: str | None = None) -> Across | None:
    """Scope and relevance judged on the candidates in another language, or None when
    the rule does not apply (the lexical gates passed, the question's language is unknown,
    or every candidate shares it). ``decisions`` are the lexical [scope, relevance];
    ``cross_encoder`` is the hash of the cross-encoder whose logits the candidates carry
    (a fitted model that reads ``cross`` refuses without it, or with another)."""
    crossing = assessment.crossing
    if crossing is None or not crossing.others() or all(d.passed for d in decisions):
        return None
    best = best_across(crossing, raw)
    lexical_scope, lexical_relevance = decisions
    # only a gate that words failed is judged again on meaning
    scope = (lexical_scope if lexical_scope.passed
             else gate_scope_across(lexical_scope, crossing, best, CROSS_SCOPE))
    relevance = lexical_relevance
    # relevance is judged on meaning only where the meaning reaches the scope threshold: a
    # question whose words passed the lexical scope by chance (an abbreviation both
    # languages share) is not let through on the flat relevance model alone
    if (not relevance.passed and scope.passed and best is not None
            and best >= CROSS_SCOPE):
        values = _values(assessment, best)
        if stale is None and (MODEL.cross_encoder not in (None, cross_encoder)
                              or MODEL.missing(values)):
            stale = (f"the cross-language relevance model reads the cross-encoder "
                     f"{str(MODEL.cross_encoder)[:12]}, this run has "
                     f"{(cross_encoder or 'none')[:12]}: build it (stichtag models build)")
        observed = None if stale is not None else MODEL.apply(values)
        relevance = gate_relevance(observed, theta_rel, stale=stale)
    order = sorted(crossing.others(), key=lambda i: (-raw[i], i))
    return Across(decisions=[scope, relevance], order=order)


def _values(assessment: Assessment, best: float) -> dict[str, float]:
    """What the cross-language relevance model reads: the best cosine, and the best
    cross-encoder logit, among the candidates in another language."""
    values = {"rerank": best}
    crossing = assessment.crossing
    logits = [assessment.candidates[i].cross for i in crossing.others()] if crossing else []
    if logits and all(x is not None for x in logits):
        values["cross"] = max(float(x) for x in logits if x is not None)
    return values


def other_language_hits(search: SearchService, principal: Principal, question: str,
                        hits: Sequence[Hit], result: AnswerResult, *, valid_at: datetime,
                        known_at: datetime) -> list[Hit]:
    """Candidates in another language than the question, to judge it again with: only for
    a run the lexical scope or relevance gate refused, whose question's language is known
    and whose candidates were all in that language. Up to ``len(hits)`` of them, in fused
    order, from a retrieval ``WIDER`` times as deep; none when there are none."""
    crossing = result.assessment.crossing
    failed = result.failed
    if (crossing is None or crossing.question is None or crossing.others() or not hits
            or result.status != ABSTAINED or failed is None
            or failed.gate not in (SCOPE, RELEVANCE)):
        return []
    wider, _, _ = search.retrieve(principal, question, valid_at=valid_at, known_at=known_at,
                                  k=WIDER * len(hits))
    seen = {h.key for h in hits}
    others = [h for h in wider if h.key not in seen
              and detect(hit_text(h)) not in (None, crossing.question)]
    return others[:len(hits)]
