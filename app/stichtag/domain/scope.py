"""The scope gate, the partial-answer rule and covering selection, over salient aspects.

Where each piece sits in the answer flow of :mod:`stichtag.domain.answer`::

    salient_aspects ─► support_in_force ─► gate_scope          (after gate_relevance)
    select_covering ─► generate (extractive) ─► ... ─► partial_gaps ─► gate_answer_support
      ─► status_for(gaps=gap_surfaces(uncovered))

All functions are pure and deterministic; they only read the aspects and texts given.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from stichtag.domain.answer import ANSWER_SUPPORT, SCOPE, Evidence, GateDecision
from stichtag.domain.aspect_support import Support, support
from stichtag.domain.salience import LEXICAL_KINDS, Aspect, surfaces

__all__ = [
    "ANSWER_SUPPORT", "DEFAULT_SCOPE_THRESHOLD", "evidence_text", "gap_surfaces",
    "gate_answer_support", "gate_scope", "partial_gaps", "select_covering",
]

# Suggested default (docs/salience.md): a question's salient content must be at least
# this share (by weight) of what occurs in a document in force.
DEFAULT_SCOPE_THRESHOLD = 0.6

SCOPE_ID = "scope-1"
"""Names the scope share's rule (recorded with every run; any change bumps it)."""

LOWERCASE_WEIGHT = 0.3
"""A salient word written in lower case counts this much of its weight in the scope share.
German capitalizes nouns, and a question's subject is its nouns: an unknown verb or
adjective ("die deklarierte Gesamtverzinsung" over documents that say "Deklaration") does
not move a question out of its subject, an unknown noun ("Arbeitslohn") does. English
questions, mostly lower case, keep their proper nouns at full weight. Measured on the law
sets (eval/scope_report.py): at threshold 0.6 the share of unanswerable questions stopped
rose from 82.9 % (factor 1) to 90.0 % (0.3), every answerable one still passing."""


def scope_weight(aspect: Aspect) -> float:
    """An aspect's weight in the scope share (``LOWERCASE_WEIGHT`` rule)."""
    return aspect.weight * (LOWERCASE_WEIGHT if aspect.surface[:1].islower() else 1.0)


def scope_share(in_force_support: Support) -> float | None:
    """The scope gate's observed value: the weighted share of the lexical salient aspects
    (terms and compounds) that occur in force; None when the question has none."""
    covered = math.fsum(scope_weight(a) for a in in_force_support.covered
                        if a.kind in LEXICAL_KINDS)
    missing = math.fsum(scope_weight(a) for a in in_force_support.uncovered
                        if a.kind in LEXICAL_KINDS)
    return covered / (covered + missing) if covered + missing > 0 else None

_LISTED = 5


def _named(aspects: Sequence[Aspect]) -> str:
    shown = ", ".join(surfaces(aspects[:_LISTED]))
    more = len(aspects) - _LISTED
    return shown + (f" and {more} more" if more > 0 else "")


def gate_scope(aspects: Sequence[Aspect], in_force_support: Support, threshold: float, *,
               valid_at: str) -> GateDecision:
    """Fail when too little of the question's salient content is in force at all.

    ``in_force_support`` comes from ``support_in_force`` (passages visible at the as-of
    pair). Observed value: ``scope_share``, the weighted share of the *lexical* salient
    weight (terms and compounds) that is supported, lower-case words discounted
    (``LOWERCASE_WEIGHT``); quantities and years are not judged here, because a question
    about a wrong or outdated value is still in scope. A question with no
    lexical aspect has nothing outside the corpus and passes with observed 1.0 (the
    relevance gate, which runs first, judges such questions). NaN fails.
    """
    lexical = [a for a in aspects if a.kind in LEXICAL_KINDS]
    covered = [a for a in in_force_support.covered if a.kind in LEXICAL_KINDS]
    missing = [a for a in in_force_support.uncovered if a.kind in LEXICAL_KINDS]
    if not lexical:
        return GateDecision(gate=SCOPE, passed=True, threshold=threshold, observed=1.0,
                            detail="the question has no salient term to look up")
    observed = scope_share(in_force_support)
    share = 0.0 if observed is None else observed
    passed = share >= threshold and not math.isnan(threshold)
    if passed:
        detail = f"salient share {share:.4f} in force on {valid_at} >= {threshold}"
        if missing:
            detail += f"; not in force: {_named(missing)}"
    elif not covered:
        detail = f"none of: {_named(missing)} occurs in a document in force on {valid_at}"
    else:
        detail = (f"not in force on {valid_at}: {_named(missing)} "
                  f"(salient share {share:.4f} below {threshold})")
    return GateDecision(gate=SCOPE, passed=passed, threshold=threshold, observed=share,
                        detail=detail)


def evidence_text(ev: Evidence) -> str:
    """What a reader sees of a citation: its heading path and the quote."""
    return " ".join((*ev.heading_path, ev.quote))


def partial_gaps(aspects: Sequence[Aspect],
                 cited_texts: Iterable[str]) -> tuple[tuple[Aspect, ...], tuple[Aspect, ...]]:
    """(covered, uncovered) salient aspects of the question by the cited sentences.

    The partial rule: an answer is ``partial`` only when the cited evidence covers at
    least one salient aspect and leaves at least one uncovered; its gaps are exactly the
    uncovered aspects, in the question's words (``gap_surfaces``). An answer whose cited
    sentences cover no salient aspect is abstained (``gate_answer_support``, reason
    insufficient_evidence): citing text that addresses none of the question is no answer.
    A question without salient aspects has nothing uncovered.
    """
    result = support(aspects, cited_texts)
    return result.covered, result.uncovered


def gap_surfaces(uncovered: Iterable[Aspect]) -> list[str]:
    """The gaps list: uncovered aspects as the question wrote them, in question order."""
    return surfaces(uncovered)


def gate_answer_support(covered: Sequence[Aspect], uncovered: Sequence[Aspect]) -> GateDecision:
    """Pass when the cited sentences cover a salient aspect (or the question has none).

    ``observed`` is the covered share of salient weight; the gate needs it above 0.
    """
    share = Support(covered=tuple(covered), uncovered=tuple(uncovered)).share()
    if share is None:
        return GateDecision(gate=ANSWER_SUPPORT, passed=True, threshold=0.0, observed=None,
                            detail="the question has no salient aspect")
    passed = share > 0.0
    detail = (f"cited sentences cover {len(covered)} of {len(covered) + len(uncovered)} "
              "salient aspects" if passed else
              f"cited sentences cover none of: {_named(list(uncovered))}")
    return GateDecision(gate=ANSWER_SUPPORT, passed=passed, threshold=0.0, observed=share,
                        detail=detail)


def _score(ev: Evidence) -> float:
    return ev.score if not math.isnan(ev.score) else -math.inf


def select_covering(aspects: Sequence[Aspect], evidence_candidates: Sequence[Evidence],
                    max_sentences: int) -> list[Evidence]:
    """Greedy covering: each pick adds the most uncovered salient weight.

    Ties go to the higher score, then document order (document, version, start, id), so
    the result does not depend on the candidates' order. Stops when no candidate adds
    weight; if none covers anything, returns the best-scored sentence alone (the partial
    rule then abstains). Blank and duplicate quotes are skipped, as the generator does.
    """
    if max_sentences < 1:
        raise ValueError("max_sentences must be at least 1")
    pool: list[Evidence] = []
    quotes: set[str] = set()
    for ev in sorted(evidence_candidates, key=lambda e: (-_score(e), e.document,
                                                         e.version_id, e.start, e.eid)):
        if ev.quote.strip() and ev.quote not in quotes:
            quotes.add(ev.quote)
            pool.append(ev)
    covers: dict[str, frozenset[int]] = {}
    for ev in pool:
        hit = support(aspects, [evidence_text(ev)]).covered
        covers[ev.eid] = frozenset(i for i, a in enumerate(aspects) if a in hit)
    chosen: list[Evidence] = []
    done: set[int] = set()

    def gain(ev: Evidence) -> float:
        return sum(aspects[i].weight for i in covers[ev.eid] - done)

    while pool and len(chosen) < max_sentences:
        best = max(pool, key=gain)  # first maximum: the better-scored of equal gains
        if gain(best) <= 0:
            break
        chosen.append(best)
        done |= covers[best.eid]
        pool.remove(best)
    return chosen or pool[:1]
