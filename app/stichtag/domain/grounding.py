"""Holding an answer written elsewhere to the gates of docs/architecture.md §7.

An outside formulator (an assistant's own model) writes the answer; this module decides,
without I/O, whether it may stand: every reference must resolve to a Fundstelle the
system cut (a marker ``[n]`` to the evidence of an earlier evidence run, or a quote to
its exact place in the version in force), one unresolved reference rejects the whole
answer, and the share of cited sentences is held against τ. The answer is split with the
versioned segmenter (``SEGMENTER_ID``), exactly as a generated answer is re-split.

What the caller resolves (the run's evidence, the versions in force) it passes in as
:class:`Reference` outcomes; the order of the gates and the reasons live here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from stichtag.domain.answer import ABSTAINED, ANSWERED, PARTIAL, GateDecision
from stichtag.domain.fundstelle import Citation
from stichtag.domain.segment import segment_block

# Why a checked answer is rejected: the vocabulary of the check (docs/assistants.md,
# "What the check guarantees").
INVENTED_CITATION = "invented_citation"
QUOTE_NOT_IN_SOURCE = "quote_not_in_source"
NOT_VISIBLE_AT_AS_OF = "not_visible_at_as_of"
BELOW_COVERAGE = "below_coverage"
CHECK_REASONS = (INVENTED_CITATION, QUOTE_NOT_IN_SOURCE, NOT_VISIBLE_AT_AS_OF, BELOW_COVERAGE)

CHECK_NEXT_STEPS: dict[str, str] = {
    INVENTED_CITATION: "A marker names no Fundstelle of the evidence run: cite only the "
    "numbers the evidence lists, or fetch evidence again for this question.",
    QUOTE_NOT_IN_SOURCE: "A quote was not found in the version in force: copy the quote "
    "character for character from the evidence or the document as of the Stichtag.",
    NOT_VISIBLE_AT_AS_OF: "A quote names a version that is not in force at this as-of "
    "pair: cite the version in force (get_document with valid_at and known_at).",
    BELOW_COVERAGE: "Too few sentences carry a Fundstelle: cite a source for every "
    "statement, or remove the statements no evidence carries.",
}

CITATIONS, COVERAGE = "citations", "coverage"
"""The two gates of a check, in their order."""

MARKER = re.compile(r"\[(\d{1,4})\]")
_ONLY_MARKERS = re.compile(r"^[\s.,;:!?()]*(?:\[\d{1,4}\][\s.,;:!?()]*)*$")
_LEADING_MARKERS = re.compile(r"\s*(?:\[\d{1,4}\][\s.,;:]*)+")
MAX_ANSWER_CHARS = 20_000
MAX_CITATIONS = 200
_SHOWN = 5


@dataclass(frozen=True, kw_only=True, slots=True)
class AnswerSentence:
    """One sentence of the checked answer: its span in the answer text and, in marker
    mode, the markers it carries (in the order written)."""

    text: str
    start: int
    end: int
    markers: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Reference:
    """One reference of the answer after resolution: ``label`` as the caller wrote it
    (``[2]``, ``citation 3``), the sentence it belongs to, and either the resolved
    citation or the reason it failed (one of :data:`CHECK_REASONS`, never both)."""

    label: str
    sentence: int
    citation: Citation | None
    failure: str | None = None
    detail: str = ""
    reanchored: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckOutcome:
    """The verdict on one answer: status, reason and the gates in their order."""

    status: str
    reason: str | None
    next_step: str | None
    failed: GateDecision | None
    gates: list[GateDecision]
    coverage: float | None
    gaps: list[str]


def split_answer(answer: str) -> list[AnswerSentence]:
    """The answer's sentences by the versioned segmenter. A piece that holds nothing but
    markers (``… 0,25 %. [2]``) is not a sentence: its markers belong to the one before."""
    out: list[AnswerSentence] = []
    for begin, end in segment_block(answer, "text/plain"):
        start = begin
        lead = _LEADING_MARKERS.match(answer, start, end)
        if out and lead is not None:  # "… Prozent. [1] Er gilt …": [1] closes the one before
            cut = lead.end()
            prev = out[-1]
            moved = tuple(int(m) for m in MARKER.findall(answer, start, cut))
            stop = len(answer[:cut].rstrip())
            out[-1] = AnswerSentence(text=answer[prev.start:stop], start=prev.start, end=stop,
                                     markers=prev.markers + moved)
            if _ONLY_MARKERS.match(answer[cut:end]) or not answer[cut:end].strip():
                continue
            start = cut
        text = answer[start:end]
        out.append(AnswerSentence(text=text, start=start, end=end,
                                  markers=tuple(int(m) for m in MARKER.findall(text))))
    return out


def sentence_for(sentences: Sequence[AnswerSentence], ref: int | str) -> int | None:
    """The index of the sentence a quote-mode citation names: an index (0-based), or the
    sentence's text (the first sentence that contains it, whitespace-trimmed)."""
    if isinstance(ref, int):
        return ref if 0 <= ref < len(sentences) else None
    wanted = " ".join(ref.split())
    if not wanted:
        return None
    for i, s in enumerate(sentences):
        if wanted in " ".join(s.text.split()):
            return i
    return None


def locate(text: str, quote: str, start: int | None, end: int | None) -> tuple[int, int,
                                                                               bool] | None:
    """Where ``quote`` stands in ``text``: the given offsets when ``text[start:end]`` is
    the quote exactly, else the occurrence nearest to ``start`` (re-anchored, third
    value True); None when the quote occurs nowhere, character for character. Quotes are
    never matched fuzzily: a quote that differs by one character is not in the source."""
    if not quote:
        return None
    if start is not None and end is not None and 0 <= start < end <= len(text) \
            and text[start:end] == quote:
        return start, end, False
    found: list[int] = []
    at = text.find(quote)
    while at >= 0:
        found.append(at)
        at = text.find(quote, at + 1)
    if not found:
        return None
    near = start if start is not None else 0
    best = min(found, key=lambda i: (abs(i - near), i))
    return best, best + len(quote), True


def decide(sentences: Sequence[AnswerSentence], references: Sequence[Reference], *,
           tau: float) -> CheckOutcome:
    """The gates in order: every reference resolved (one failure rejects the whole
    answer, the first failure in answer order names the reason), then coverage (cited
    sentences / all sentences) against τ. Fails closed on NaN and on an empty answer."""
    bad = [r for r in references if r.citation is None or r.failure is not None]
    shown = "; ".join(f"{r.label}: {r.detail or r.failure}" for r in bad[:_SHOWN])
    more = f" and {len(bad) - _SHOWN} more" if len(bad) > _SHOWN else ""
    gates = [GateDecision(gate=CITATIONS, passed=not bad, threshold=0.0,
                          observed=float(len(bad)),
                          detail=(shown + more) if bad else
                          "every reference resolves to a Fundstelle")]
    if bad:
        reason = bad[0].failure or QUOTE_NOT_IN_SOURCE
        return CheckOutcome(status=ABSTAINED, reason=reason, next_step=CHECK_NEXT_STEPS[reason],
                            failed=gates[0], gates=gates, coverage=None, gaps=[])
    cited = {r.sentence for r in references}
    total = len(sentences)
    cov = sum(1 for i in range(total) if i in cited) / total if total else 0.0
    passed = total > 0 and not math.isnan(tau) and cov >= tau
    gates.append(GateDecision(gate=COVERAGE, passed=passed, threshold=tau, observed=cov,
                              detail=(f"{len(cited & set(range(total)))} of {total} sentences "
                                      f"cited: coverage {cov:.4f} "
                                      f"{'>=' if passed else 'below'} tau {tau}")))
    if not passed:
        return CheckOutcome(status=ABSTAINED, reason=BELOW_COVERAGE,
                            next_step=CHECK_NEXT_STEPS[BELOW_COVERAGE], failed=gates[-1],
                            gates=gates, coverage=cov, gaps=[])
    gaps = [s.text.strip() for i, s in enumerate(sentences) if i not in cited]
    return CheckOutcome(status=ANSWERED if not gaps else PARTIAL, reason=None, next_step=None,
                        failed=None, gates=gates, coverage=cov, gaps=gaps)
