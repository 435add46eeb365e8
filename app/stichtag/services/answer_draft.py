"""The answer's evidence and the gates that judge a draft (split out of answer.py).

``evidence_of`` turns the reranked passages into the numbered evidence sentences a
generator may cite; ``check_draft`` runs the gates on what it wrote — integrity,
contradictions, coverage, answer support and sources — each only when the one before it
passed, so the first failure decides the reason (docs/architecture.md §7).
"""

from __future__ import annotations

import bisect
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stichtag.domain import answer as gates
from stichtag.domain.answer import Draft, Evidence, GateDecision, Resolution
from stichtag.domain.provenance import Provenance, cited_ids, derive, gate_sources
from stichtag.domain.records import VersionText
from stichtag.domain.retrieval import Hit
from stichtag.domain.salience import Aspect
from stichtag.domain.scope import gate_answer_support, partial_gaps
from stichtag.domain.selectors import CONTEXT
from stichtag.domain.sentence_rule import OVERLAP_RULE, RULES, SentenceRule, overlap_share
from stichtag.domain.timeutil import format_time
from stichtag.ports import Embedder, Reranker
from stichtag.services.assess import Assessment
from stichtag.services.sentence_scores import Candidate, SentenceScoring, score_candidates

OVERLAP = RULES[OVERLAP_RULE]


def evidence_of(question: str, hits: Sequence[Hit], scores: Sequence[float],
                run_id: uuid.UUID, contents: dict[str, VersionText], *,
                rule: SentenceRule = OVERLAP, embedder: Embedder | None = None,
                model: str | None = None, query_vector: Any = None,
                cross: Reranker | None = None,
                ) -> tuple[list[Evidence], SentenceScoring]:
    """The sentences of the reranked passages, with run-scoped ids (E1-ab12, ...), each
    scored by its passage's relevance and the sentence rule (stichtag.domain.sentence_rule)."""
    tag = run_id.hex[:4]
    spans: list[tuple[Hit, VersionText, int, int, int, int]] = []
    candidates: list[Candidate] = []
    for n, hit in enumerate(hits):
        content = contents[hit.version_id]
        if not _readable(content, hit):
            continue  # erased after it was found: no longer evidence (docs/operations.md)
        first = bisect.bisect_left(content.sentences, hit.start, key=lambda x: x.start)
        for s in content.sentences[first:]:
            if s.start >= hit.end:
                break
            if s.end > hit.end:
                continue
            quote = content.slice(s.start, s.end)
            if s.heading_path and quote == s.heading_path[-1]:
                continue  # a heading is context (it is in the path), not a statement
            spans.append((hit, content, s.start, s.end, s.utf16_start, s.utf16_end))
            candidates.append(Candidate(passage=n, quote=quote,
                                        heading_path=tuple(s.heading_path),
                                        overlap=overlap_share(question, quote, s.heading_path)))
    scoring = score_candidates(rule, candidates, scores, embedder=embedder, model=model,
                               query_vector=query_vector, question=question, cross=cross)
    logits = scoring.logits or [None] * len(candidates)
    out: list[Evidence] = []
    for (hit, content, start, end, u16s, u16e), cand, cos, logit in zip(
            spans, candidates, scoring.cosines, logits, strict=True):
        out.append(Evidence(
            eid=f"E{len(out) + 1}-{tag}", document=hit.document,
            version_id=hit.version_id, start=start, end=end,
            utf16_start=u16s, utf16_end=u16e, quote=cand.quote,
            heading_path=cand.heading_path,
            # quote_context's cut, taken from whole text or excerpt alike
            prefix=content.slice(start - CONTEXT, start),
            suffix=content.slice(end, end + CONTEXT),
            valid_from=format_time(hit.valid_from) or "",
            valid_to=format_time(hit.valid_to), doc_class=hit.doc_class,
            score=round(scores[cand.passage] * rule.factor(cand.overlap, cos, logit), 6),
            answers=cos))
    return out, scoring


def _readable(content: VersionText, hit: Hit) -> bool:
    """Whether the hit's passage and its context can still be cut from ``content``. A
    version erased between retrieval and this read has blank blocks: the hit was visible
    when found and is gone now, like a version retracted a moment later."""
    try:
        content.slice(hit.start - CONTEXT, hit.end + CONTEXT)
    except ValueError:
        return False
    return content.slice(hit.start, hit.end) != "" or hit.start == hit.end


@dataclass(frozen=True, kw_only=True)
class Checked:
    """A draft after the gates that judge it, in their order."""

    decisions: list[GateDecision]
    draft: Draft
    coverage: float | None
    resolutions: list[Resolution]
    uncovered: tuple[Aspect, ...]


@dataclass(frozen=True, kw_only=True)
class Reads:
    """What a generator read through tools: documents in full, sentences, titles."""

    opened: list[str]
    read: list[str]
    titles: list[str]

    def provenance(self, evidence: Sequence[Evidence], cited: Sequence[str]) -> Provenance:
        """The three sets of a delivered answer citing ``cited`` (nothing delivered:
        nothing consulted, whatever was read — an abstention has no source line)."""
        if not cited:
            return derive(evidence, [], titles=self.titles)
        return derive(evidence, cited, opened=self.opened, read=self.read, titles=self.titles)


def check_draft(draft: Draft, by_id: dict[str, Evidence], assessment: Assessment,
                 tau: float, reads: Reads) -> Checked:
    """Integrity, contradictions, coverage, answer support and sources of a draft; each
    gate runs only when the one before it passed (the first failure decides the reason)."""
    decisions = [gates.check_integrity(draft, by_id)]
    cov: float | None = None
    resolutions: list[Resolution] = []
    uncovered: tuple[Aspect, ...] = ()
    if decisions[-1].passed:
        cited_ev = [by_id[e] for s in draft.sentences for e in dict.fromkeys(s.evidence_ids)]
        resolutions = [gates.resolve_conflict(c) for c in gates.detect_conflicts(cited_ev)]
        decisions.append(gates.gate_conflict(resolutions))
        draft = gates.without_superseded(draft, resolutions)
    if decisions[-1].passed:
        cov, _, _ = gates.coverage(draft.sentences, gates.sentence_splitter())
        decisions.append(gates.gate_coverage(cov, tau))
    if decisions[-1].passed:
        cited_texts = [" ".join((*by_id[e].heading_path, by_id[e].quote))
                       for s in draft.sentences for e in s.evidence_ids]
        covered, uncovered = partial_gaps(assessment.aspects, cited_texts)
        decisions.append(gate_answer_support(covered, uncovered))
    if decisions[-1].passed:  # last: nothing is delivered that no one read a source for
        decisions.append(gate_sources(reads.provenance(list(by_id.values()),
                                                       cited_ids(draft))))
    return Checked(decisions=decisions, draft=draft, coverage=cov, resolutions=resolutions,
                    uncovered=uncovered)
