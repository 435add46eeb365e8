"""The run record of an answer: everything replay needs to recompute it, and an auditor
to check it (docs/audit.md, "What is recorded")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stichtag.domain.answer import Draft, GateDecision
from stichtag.domain.generation import Exchange, Generation, GeneratorError
from stichtag.domain.listing import NOTHING_LISTED
from stichtag.domain.retrieval import Hit
from stichtag.domain.segment import SEGMENTER_ID
from stichtag.domain.timeutil import format_time
from stichtag.ports import Reranker
from stichtag.services.access import Principal
from stichtag.services.answer_result import AnswerResult
from stichtag.services.sentence_scores import SentenceScoring


def answer_record(principal: Principal, question: str, result: AnswerResult, *,
                  hits: Sequence[Hit], raw: Sequence[float], calibrated: Sequence[float],
                  generation: Generation | None, error: GeneratorError | None,
                  lexical_seq: int, embedding: str | None,
                  reranker: Reranker,
                  sentence_scores: SentenceScoring | None = None,
                  cross: Reranker | None = None,
                  cross_scores: Sequence[float] | None = None) -> dict[str, Any]:
    """The record of one answer run; ``cross`` and ``cross_scores``: the cross-encoder the
    run read and its logit per candidate (absent from runs that read none)."""
    logits: Sequence[float | None] = (cross_scores if cross_scores is not None
                                      else [None] * len(hits))
    exchanges: list[Exchange] = list(generation.exchanges if generation else
                                     (error.exchanges if error else ()))
    tools = generation.tools if generation else (error.tools if error else [])
    assessment = result.assessment
    return {
        **_head(principal, question, result),
        "lexical_seq": lexical_seq,
        "models": {"embedding": embedding, "reranker": reranker.model_hash,
                   "reranker_label": reranker.label,
                   **({"cross_encoder": cross.model_hash, "cross_encoder_label": cross.label}
                      if cross is not None and cross_scores is not None else {})},
        "thresholds": result.thresholds.record(),
        "salience": assessment.record(),
        "relevance": {"id": result.thresholds.relevance.model_id,
                      "features": assessment.pooled,
                      "score": next((g.observed for g in result.gates
                                     if g.gate == "relevance"), None)},
        "candidates": [{"document": h.document, "version_id": h.version_id,
                        "assertion_id": h.assertion_id, "passage": h.passage_ordinal,
                        "start": h.start, "end": h.end, "bm25": h.bm25, "vector": h.vector,
                        "fused": h.fused, "rerank": r, "calibrated": c,
                        "coverage": f.coverage, "numbers": f.numbers,
                        **({"cross": x} if x is not None else {})}
                       for h, r, c, f, x in zip(hits, raw, calibrated, assessment.candidates,
                                                logits, strict=True)],
        "evidence": [{"eid": e.eid, "version_id": e.version_id, "start": e.start,
                      "end": e.end, "score": e.score} for e in result.evidence],
        # how the evidence sentences were scored: absent in runs recorded before the rule
        # was named (they used word overlap; replay uses it for them)
        **({"sentence_scores": sentence_scores.record()} if sentence_scores else {}),
        "gates": [_gate(g) for g in result.gates],
        "generator": {"name": result.generator,
                      "exchanges": [_exchange(x) for x in exchanges],
                      "draft": _draft(generation.draft) if generation else None,
                      # every tool call and what it returned (offsets into the versions);
                      # replay runs the calls again and compares
                      "tools": [t.record() for t in tools],
                      "error": ({"reason": error.reason, "detail": error.detail}
                                if error else None)},
        "result": {"status": result.status, "reason": result.reason,
                   "coverage": result.coverage, "gaps": result.gaps,
                   "sentences": [{"text": s.text, "citations": [
                       {"version_id": c.version_id, "start": c.start, "end": c.end}
                       for c in s.citations]} for s in result.sentences],
                   "conflicts": [{"rule": r.rule,
                                  "winner": r.winner.eid if r.winner else None,
                                  "loser": r.loser.eid if r.loser else None}
                                 for r in result.resolutions]},
        # Derived from the citations and what the generator opened, never self-reported;
        # replay recomputes and compares them (absent in runs recorded before provenance sets
        # existed; docs/architecture.md §7).
        "provenance": result.provenance.record(),
        "timings_ms": result.timings_ms,
    }


def _head(principal: Principal, question: str, result: AnswerResult) -> dict[str, Any]:
    """What every answer record opens with: the request, the as-of pair and who asked."""
    return {
        "kind": "answer", "run_id": str(result.run_id),
        "request": {"question": question, "generator": result.generator},
        "as_of": {"valid_at": format_time(result.valid_at),
                  "known_at": format_time(result.known_at)},
        "tenant": str(principal.tenant_id), "key_id": principal.key_id,
        "clearance": principal.clearance, "segmenter_id": SEGMENTER_ID,
    }


def listing_record(principal: Principal, question: str, result: AnswerResult) -> dict[str, Any]:
    """The record of a list answer: the as-of pair, the clearance and the listing, which
    replay recomputes from the catalogue; no candidates, evidence or draft (none exist)."""
    assert result.listing is not None
    listing = result.listing.record()
    return {
        **_head(principal, question, result),
        "thresholds": result.thresholds.record(), "candidates": [], "evidence": [],
        "listing": listing, "gates": [_gate(g) for g in result.gates],
        "generator": {"name": result.generator, "exchanges": [], "draft": None,
                      "error": None},
        # ``gap`` feeds GET /v1/gaps: a list that names nothing says what to write.
        "result": {"status": result.status, "reason": result.reason, "coverage": None,
                   "gaps": [], "sentences": [], "conflicts": [],
                   "gap": None if listing["items"] else NOTHING_LISTED},
        "provenance": result.provenance.record(),
        "timings_ms": result.timings_ms,
    }


def _gate(g: GateDecision) -> dict[str, Any]:
    return {"gate": g.gate, "passed": g.passed, "threshold": g.threshold, "observed": g.observed,
            "detail": g.detail}


def _exchange(x: Exchange) -> dict[str, Any]:
    return {"request": {"url": x.request.url, "body": x.request.body, "attempt": x.request.attempt},
            "response": {"status": x.response.status, "body": x.response.body,
                         "error": x.response.error}}


def _draft(d: Draft) -> dict[str, Any]:
    return {"sentences": [{"text": s.text, "evidence": s.evidence_ids} for s in d.sentences],
            "gaps": d.gaps}
