"""Gated answering, the pure part: evidence, drafts, gates, citations, contradictions.

A generator only formulates; everything that decides whether an answer may be shown lives
here, so that replay can recompute it (docs/architecture.md §7). The flow a caller composes::

    gate_relevance ─► generate ─► gate_generation ─► check_integrity ─► detect_conflicts
      ─► resolve_conflict ─► gate_conflict ─► without_superseded ─► coverage ─► gate_coverage
      ─► status_for ─► resolve (only when not abstained)

Every gate fails closed: NaN, ``None`` and unknown markers never pass. Citations are cut
from :class:`Evidence` (which the caller cut from the version text), never from anything
a generator wrote.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from stichtag.domain.fundstelle import Citation, instant
from stichtag.domain.quantities import content_words, fold, numbers_in
from stichtag.domain.segment import segment_block

# Abstention reasons: the closed vocabulary of docs/architecture.md §7.
INSUFFICIENT_EVIDENCE = "insufficient_evidence"
OUT_OF_SCOPE = "out_of_scope"
CONTRADICTORY_SOURCES = "contradictory_sources"
COVERAGE_BELOW_THRESHOLD = "coverage_below_threshold"
INTEGRITY_ERROR = "integrity_error"
REASONS = (INSUFFICIENT_EVIDENCE, OUT_OF_SCOPE, CONTRADICTORY_SOURCES,
           COVERAGE_BELOW_THRESHOLD, INTEGRITY_ERROR)

# What a person can do next; shown with every abstention (English throughout).
NEXT_STEPS: dict[str, str] = {
    INSUFFICIENT_EVIDENCE: "No sufficiently relevant passage is in force at this as-of date: "
    "rephrase the question with the document's terms, check valid_at and known_at, or "
    "ingest the missing document.",
    OUT_OF_SCOPE: "The question is outside what this knowledge base covers: ask the owner of "
    "the subject matter or ingest the governing document.",
    CONTRADICTORY_SOURCES: "Sources of equal rank and date state different values: compare "
    "the cited passages and retract or correct the one that is wrong, or ask the document "
    "owners which applies.",
    COVERAGE_BELOW_THRESHOLD: "Too few answer sentences are backed by evidence: narrow the "
    "question to one aspect, or ask again with generator=extractive.",
    INTEGRITY_ERROR: "The generated answer could not be verified against this run's evidence "
    "(unknown evidence ids or unusable generator output): ask again, or use "
    "generator=extractive; report the run id if it repeats.",
}

ANSWERED, PARTIAL, ABSTAINED = "answered", "partial", "abstained"

# Gate names as recorded in the run, and the reason each one's failure abstains with.
RELEVANCE, GENERATION, INTEGRITY, CONFLICT, COVERAGE, SCOPE, ANSWER_SUPPORT, SOURCES = (
    "relevance", "generation", "integrity", "conflict", "coverage", "scope", "answer_support",
    "sources")
GATE_REASONS: dict[str, str] = {
    RELEVANCE: INSUFFICIENT_EVIDENCE, SCOPE: OUT_OF_SCOPE, GENERATION: INTEGRITY_ERROR,
    INTEGRITY: INTEGRITY_ERROR, CONFLICT: CONTRADICTORY_SOURCES,
    COVERAGE: COVERAGE_BELOW_THRESHOLD,
    # The subject is in force (scope passed) but the sentences the answer would cite
    # address none of the question's salient aspects: no grounds for this answer.
    ANSWER_SUPPORT: INSUFFICIENT_EVIDENCE,
    # The answer would be delivered with no consulted source (stichtag.domain.provenance).
    SOURCES: INSUFFICIENT_EVIDENCE,
}
# A result may only be delivered after each of these was decided (fail closed: a caller
# that forgets a gate gets an error, not an unchecked answer).
REQUIRED_GATES = (SCOPE, RELEVANCE, GENERATION, INTEGRITY, CONFLICT, COVERAGE, ANSWER_SUPPORT,
                  SOURCES)

# Declared document-class ranks for contradictions; classes not listed rank lowest, so an
# undeclared class never outranks a declared one.
DOC_CLASS_RANK: dict[str, int] = {
    "regulation": 5, "guideline": 4, "declaration": 3, "handbook": 2, "note": 1, "document": 0,
}
LATER_VALID_FROM = "later_valid_from_wins"
HIGHER_DOC_CLASS = "higher_doc_class_wins"

PLAIN = "text/plain"
_MAX_LISTED = 5  # offending markers named in a gate detail; the count says the rest
_MARKER_SHOWN = 24  # characters of one offending marker in a detail (it is model output)


@dataclass(frozen=True, kw_only=True, slots=True)
class Evidence(Citation):
    """One evidence sentence of a run: a citation with a run-scoped ``eid``, the document
    class of its assertion (for the declared contradiction rules) and its score."""

    eid: str
    doc_class: str
    score: float
    # the sentence's cosine to the question when the run's sentence rule read it
    # (stichtag.domain.sentence_rule); None: scored by word overlap alone
    answers: float | None = None

    def __post_init__(self) -> None:
        """An evidence id is never empty; span and times are checked as for a citation."""
        if not self.eid:
            raise ValueError("evidence id must not be empty")
        try:
            Citation.__post_init__(self)  # zero-argument super() breaks under slots=True
        except ValueError as exc:
            raise ValueError(f"{self.eid}: {exc}") from None


@dataclass(frozen=True, kw_only=True, slots=True)
class DraftSentence:
    """One sentence as a generator wrote it, with the evidence ids it claims."""

    text: str
    evidence_ids: list[str]


@dataclass(frozen=True, kw_only=True, slots=True)
class Draft:
    """A generator's output, unverified: ids are exactly what the generator wrote.

    What the generator read is not part of it: that is derived from what it did
    (``stichtag.domain.provenance``), never taken from its own account."""

    sentences: list[DraftSentence]
    gaps: list[str]


@dataclass(frozen=True, kw_only=True, slots=True)
class AnsweredSentence:
    """An answer sentence with its resolved citations (empty if it cites nothing)."""

    text: str
    citations: list[Citation]


@dataclass(frozen=True, kw_only=True, slots=True)
class GateDecision:
    """One fail-closed check as recorded in the run: what was compared, and the verdict."""

    gate: str
    passed: bool
    threshold: float | None
    observed: float | None
    detail: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    """The final status; ``reason``/``next_step``/``failed`` are set only when abstaining."""

    status: str
    reason: str | None
    next_step: str | None
    failed: GateDecision | None


class UnknownEvidence(ValueError):
    """A marker reached resolution without passing the integrity gate."""


def _shown(markers: Sequence[str]) -> str:
    names = [repr(m[:_MARKER_SHOWN]) for m in markers[:_MAX_LISTED]]
    more = len(markers) - _MAX_LISTED
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def check_integrity(draft: Draft, evidence_by_id: Mapping[str, Evidence]) -> GateDecision:
    """Pass only if every marker names evidence of this run.

    Ids are compared exactly: normalizing " e1" to "E1" would turn a typo into a
    citation. One bad marker rejects the whole answer; ``observed`` counts them all.
    """
    bad = [m for s in draft.sentences for m in s.evidence_ids if m not in evidence_by_id]
    return GateDecision(gate=INTEGRITY, passed=not bad, threshold=0.0,
                        observed=float(len(bad)),
                        detail=(f"markers outside this run's evidence: {_shown(bad)}" if bad
                                else "every marker names evidence of this run"))


def sentence_splitter(media_type: str = PLAIN) -> Callable[[str], list[str]]:
    """The versioned segmenter (SEGMENTER_ID) as a text -> sentences function."""

    def split(text: str) -> list[str]:
        return [text[s:e] for s, e in segment_block(text, media_type)]

    return split


def coverage(draft_sentences: Sequence[DraftSentence],
             segment: Callable[[str], list[str]]) -> tuple[float, int, int]:
    """(coverage, cited pieces, all pieces) of an answer.

    Each generator sentence is re-split with the versioned segmenter, because a generator
    may glue several claims into one "sentence"; every piece inherits the markers of the
    sentence it came from. The denominator is the number of answer sentences after
    segmentation; a piece counts as cited when its sentence carries at least one marker
    (whether markers are valid is the integrity gate's job, which runs first). An empty
    answer has coverage 0, never a vacuous 1.
    """
    cited = total = 0
    for sentence in draft_sentences:
        pieces = len(segment(sentence.text))
        total += pieces
        if sentence.evidence_ids:
            cited += pieces
    return (cited / total if total else 0.0), cited, total


def gate_coverage(cov: float, tau: float) -> GateDecision:
    """Fail when ``cov < tau``; the caller then withholds the whole answer (no trimming)."""
    passed = cov >= tau  # False for NaN on either side: fail closed
    return GateDecision(gate=COVERAGE, passed=passed, threshold=tau, observed=cov,
                        detail=f"coverage {cov:.4f} {'>=' if passed else 'below'} tau {tau}")


def gate_relevance(best_calibrated_score: float | None, theta: float, *,
                   stale: str | None = None) -> GateDecision:
    """Fail when nothing was retrieved or the best calibrated score is below ``theta``,
    and always when the thresholds are ``stale`` (fitted on another reranker's scores
    than the serving one's; the text says which): a stale calibration never gates."""
    if stale is not None:
        return GateDecision(gate=RELEVANCE, passed=False, threshold=theta, observed=None,
                            detail=stale)
    if best_calibrated_score is None:
        return GateDecision(gate=RELEVANCE, passed=False, threshold=theta, observed=None,
                            detail="nothing was retrieved")
    passed = best_calibrated_score >= theta
    return GateDecision(gate=RELEVANCE, passed=passed, threshold=theta,
                        observed=best_calibrated_score,
                        detail=f"best calibrated score {'>=' if passed else 'below'} theta")


def gate_generation(failure: str | None, detail: str = "") -> GateDecision:
    """Record whether the generator produced a usable draft (``failure`` = its reason)."""
    return GateDecision(gate=GENERATION, passed=failure is None, threshold=None,
                        observed=None, detail=detail or (failure or "draft received"))


def resolve(draft: Draft, evidence_by_id: Mapping[str, Evidence]) -> list[AnsweredSentence]:
    """Answer sentences with citations copied from evidence, in marker order, deduplicated.

    Raises UnknownEvidence for a marker outside ``evidence_by_id``: resolution never drops
    a marker silently, so skipping the integrity gate cannot yield a cleaned-up answer.
    """
    out = []
    for sentence in draft.sentences:
        citations: list[Citation] = []
        for eid in dict.fromkeys(sentence.evidence_ids):
            ev = evidence_by_id.get(eid)
            if ev is None:
                raise UnknownEvidence(f"marker {eid[:_MARKER_SHOWN]!r} is not evidence of "
                                      "this run")
            citations.append(ev.citation())
        out.append(AnsweredSentence(text=sentence.text, citations=citations))
    return out


# --- contradictions ---------------------------------------------------------------------


def _quantity_key(ev: Evidence) -> frozenset[str]:
    """What a sentence is about: its content words plus those of its nearest heading."""
    words = content_words(ev.quote) + content_words(ev.heading_path[-1] if ev.heading_path
                                                   else "")
    return frozenset(fold(w) for w in words if len(w) >= 4)


@dataclass(frozen=True, kw_only=True, slots=True)
class Conflict:
    """Two cited sentences of different documents stating different values for one topic."""

    first: Evidence
    second: Evidence
    shared_terms: tuple[str, ...]
    first_values: tuple[str, ...]
    second_values: tuple[str, ...]


def detect_conflicts(cited: Sequence[Evidence], *,
                     extract: Callable[[str], set[str]] = numbers_in) -> list[Conflict]:
    """All pairs of cited sentences from different documents that contradict each other.

    Deliberately simple and conservative: two sentences conflict when their topic keys
    (content words of sentence and nearest heading, length >= 4, case/umlaut-folded)
    share at least half of the smaller key, and both state values (``extract``) that
    differ as sets. It may see a conflict where a person would not (then a declared rule
    or an abstention follows); it misses conflicts stated without numbers.
    """
    out = []
    for i, a in enumerate(cited):
        for b in cited[i + 1:]:
            if a.document == b.document:
                continue
            ka, kb = _quantity_key(a), _quantity_key(b)
            shared = ka & kb
            if not shared or 2 * len(shared) < min(len(ka), len(kb)):
                continue
            va, vb = extract(a.quote), extract(b.quote)
            if va and vb and va != vb:
                out.append(Conflict(first=a, second=b, shared_terms=tuple(sorted(shared)),
                                    first_values=tuple(sorted(va)),
                                    second_values=tuple(sorted(vb))))
    return out


def detect_conflict(cited: Sequence[Evidence], *,
                    extract: Callable[[str], set[str]] = numbers_in) -> Conflict | None:
    """The first conflict among ``cited`` (see detect_conflicts), or None."""
    found = detect_conflicts(cited, extract=extract)
    return found[0] if found else None


@dataclass(frozen=True, kw_only=True, slots=True)
class Resolution:
    """How a conflict was settled: ``rule`` names the declared rule, or None (abstain)."""

    conflict: Conflict
    rule: str | None
    winner: Evidence | None
    loser: Evidence | None

    @property
    def citations(self) -> tuple[Citation, Citation]:
        """Both sides, for the ``contradictory_sources`` abstention or a superseded note."""
        return self.conflict.first.citation(), self.conflict.second.citation()


def resolve_conflict(conflict: Conflict, *,
                     class_rank: Mapping[str, int] = DOC_CLASS_RANK) -> Resolution:
    """Apply the declared rules in order: later valid_from wins, then higher doc class."""
    a, b = conflict.first, conflict.second
    ta, tb = instant(a.valid_from, "valid_from"), instant(b.valid_from, "valid_from")
    if ta != tb:
        win, lose = (a, b) if ta > tb else (b, a)
        return Resolution(conflict=conflict, rule=LATER_VALID_FROM, winner=win, loser=lose)
    lowest = min(class_rank.values(), default=0)
    ra, rb = class_rank.get(a.doc_class, lowest), class_rank.get(b.doc_class, lowest)
    if ra != rb:
        win, lose = (a, b) if ra > rb else (b, a)
        return Resolution(conflict=conflict, rule=HIGHER_DOC_CLASS, winner=win, loser=lose)
    return Resolution(conflict=conflict, rule=None, winner=None, loser=None)


def gate_conflict(resolutions: Iterable[Resolution]) -> GateDecision:
    """Pass when every conflict was settled by a declared rule; detail says which rule."""
    settled, open_ = [], []
    for r in resolutions:
        a, b = r.conflict.first, r.conflict.second
        if r.rule is None or r.winner is None or r.loser is None:
            open_.append(f"{a.eid} ({a.document}) vs {b.eid} ({b.document}): no rule decides")
        else:
            settled.append(f"{r.winner.eid} ({r.winner.document}) supersedes {r.loser.eid} "
                           f"({r.loser.document}) by {r.rule}")
    return GateDecision(gate=CONFLICT, passed=not open_, threshold=0.0,
                        observed=float(len(open_)),
                        detail="; ".join(open_ + settled) or "no conflicting evidence")


def without_superseded(draft: Draft, resolutions: Iterable[Resolution]) -> Draft:
    """The draft minus evidence a declared rule superseded.

    A sentence citing only superseded evidence states the losing value and is dropped;
    other sentences lose just the superseded markers. Coverage is measured afterwards.
    """
    losers = {r.loser.eid for r in resolutions if r.rule is not None and r.loser is not None}
    if not losers:
        return draft
    kept = []
    for s in draft.sentences:
        ids = [e for e in s.evidence_ids if e not in losers]
        if ids or not s.evidence_ids:
            kept.append(DraftSentence(text=s.text, evidence_ids=ids))
    return Draft(sentences=kept, gaps=list(draft.gaps))


def status_for(gates: Sequence[GateDecision], *, coverage: float,
               gaps: Sequence[str]) -> Outcome:
    """answered, partial or abstained from the gate decisions in the order they ran.

    The first failed gate decides the reason. With every gate passed the answer is
    ``answered`` only if coverage is exactly 1 and nothing is uncovered, else ``partial``.
    Raises ValueError if a required gate was never decided (fail closed).
    """
    for g in gates:
        if not g.passed:
            reason = GATE_REASONS.get(g.gate, INTEGRITY_ERROR)
            return Outcome(status=ABSTAINED, reason=reason, next_step=NEXT_STEPS[reason],
                           failed=g)
    missing = [name for name in REQUIRED_GATES if name not in {g.gate for g in gates}]
    if missing:
        raise ValueError(f"gates never decided: {', '.join(missing)}")
    if math.isnan(coverage):
        raise ValueError("coverage is NaN")
    status = ANSWERED if coverage == 1.0 and not gaps else PARTIAL
    return Outcome(status=status, reason=None, next_step=None, failed=None)

