"""Evidence for an outside formulator: the first half of the answer pipeline
(docs/architecture.md §7) — retrieve, rerank, the scope and relevance gates, the evidence
sentences cut from the versions — handed to an assistant that writes the answer with its
own model, and recorded as an ``evidence`` run. The check (``services/grounding.py``)
takes its run id and holds the written answer's markers ``[n]`` to exactly this evidence.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from stichtag.domain import answer as gates
from stichtag.domain.answer import ABSTAINED, Evidence, GateDecision
from stichtag.domain.errors import Invalid
from stichtag.domain.provenance import NONE, Provenance, derive
from stichtag.domain.retrieval import Hit
from stichtag.domain.scope import gate_scope
from stichtag.domain.segment import SEGMENTER_ID
from stichtag.domain.selectors import CONTEXT
from stichtag.domain.timeutil import format_time
from stichtag.domain.txclock import cap_known_at
from stichtag.services.access import Principal
from stichtag.services.answer import MAX_QUESTION_CHARS, PASSAGES, AnswerService
from stichtag.services.answer_draft import evidence_of
from stichtag.services.assess import Assessment
from stichtag.services.thresholds import Thresholds

READY = "ready"
"""The status of evidence that passed the gates (a refusal is ``abstained``)."""


@dataclass(frozen=True, kw_only=True)
class Gated:
    """Evidence after the gates, with what the run record needs."""

    status: str
    reason: str | None
    next_step: str | None
    failed: GateDecision | None
    gates: list[GateDecision]
    evidence: list[Evidence]
    """Numbered from 1 in this order: marker ``[n]`` names ``evidence[n - 1]``."""
    raw: list[float]
    calibrated: list[float]
    assessment: Assessment
    cross: list[float] | None = None
    """The cross-encoder's logit per candidate; None when the run read none."""


@dataclass(frozen=True, kw_only=True)
class EvidenceResult:
    """What ``POST /v1/answer/evidence`` returns."""

    run_id: uuid.UUID
    valid_at: datetime
    known_at: datetime
    gated: Gated
    thresholds: Thresholds
    timings_ms: dict[str, float] = field(default_factory=dict)


class EvidenceService:
    """Gated evidence for one principal at one as-of pair, recorded as a run."""

    def __init__(self, answers: AnswerService) -> None:
        self.answers = answers

    def evidence(self, principal: Principal, question: str, *, valid_at: datetime,
                 known_at: datetime) -> EvidenceResult:
        """Retrieve, gate and cut the evidence for ``question``; record the run."""
        principal.require("read")
        if not question.strip():
            raise Invalid("question", "must not be empty")
        if len(question) > MAX_QUESTION_CHARS:
            raise Invalid("question", f"at most {MAX_QUESTION_CHARS} characters")
        a = self.answers
        known_at = cap_known_at(known_at, a.runlog.clock.now())  # §3.7
        with a.units.unit(principal.tenant_id) as uow:
            a.runlog.observe(uow, known_at)
        run_id = uuid.uuid4()
        started = time.perf_counter()
        thresholds = a.thresholds.current(principal.tenant_id)
        hits, timings, lexical_seq = a.search.retrieve(
            principal, question, valid_at=valid_at, known_at=known_at, k=PASSAGES)
        gated = self.gate(principal, question, hits, thresholds=thresholds, run_id=run_id,
                          valid_at=valid_at, known_at=known_at)
        result = EvidenceResult(run_id=run_id, valid_at=valid_at, known_at=known_at,
                                gated=gated, thresholds=thresholds,
                                timings_ms={f"retrieve_{k}": v for k, v in timings.items()})
        result.timings_ms["total"] = round((time.perf_counter() - started) * 1000, 3)
        record = evidence_record(principal, question, result, hits=hits,
                                 lexical_seq=lexical_seq, answers=a)
        with a.units.unit(principal.tenant_id) as uow:
            a.runlog.append(uow, principal.tenant_id, run_id=run_id, kind="evidence",
                            key_id=principal.key_id, record=record)
        return result

    def gate(self, principal: Principal, question: str, hits: Sequence[Hit], *,
             thresholds: Thresholds, run_id: uuid.UUID, valid_at: datetime,
             known_at: datetime) -> Gated:
        """Rerank, the scope and relevance gates, and the evidence sentences (what replay
        recomputes from the recorded candidates)."""
        a = self.answers
        judged = a.scorer.judge(principal, question, hits, thresholds=thresholds,
                                valid_at=valid_at, known_at=known_at)
        raw, assessment, calibrated = judged.raw, judged.assessment, judged.calibrated
        decisions = [gate_scope(assessment.aspects, assessment.in_force,
                                thresholds.theta_scope, valid_at=format_time(valid_at) or ""),
                     gates.gate_relevance(judged.best, thresholds.theta_rel,
                                          stale=judged.stale)]
        failed = next((d for d in decisions if not d.passed), None)
        evidence: list[Evidence] = []
        if failed is None:  # a refusal hands out nothing to formulate from
            order = sorted(range(len(hits)), key=lambda i: (-calibrated[i], i))
            contents = a.versions.excerpts(principal, [
                (h.version_id, h.start - CONTEXT, h.end + CONTEXT) for h in hits])
            # word overlap orders the sentences here: the outside model chooses among
            # them, and the record (and its replay) needs no sentence scores
            evidence, _ = evidence_of(question, [hits[i] for i in order],
                                      [calibrated[i] for i in order], run_id, contents)
            if a.sources is not None:
                evidence = a.sources.place(principal, evidence)
        reason = gates.GATE_REASONS[failed.gate] if failed is not None else None
        return Gated(status=ABSTAINED if failed is not None else READY, reason=reason,
                     next_step=gates.NEXT_STEPS[reason] if reason else None, failed=failed,
                     gates=decisions, evidence=evidence, raw=raw, calibrated=calibrated,
                     assessment=assessment, cross=judged.cross)


def provenance(evidence: Sequence[Evidence]) -> Provenance:
    """Found: the documents handed out; nothing is cited or consulted until an answer
    cites it (the check run records that, docs/architecture.md §7)."""
    return derive(evidence, []) if evidence else NONE


def evidence_record(principal: Principal, question: str, result: EvidenceResult, *,
                    hits: Sequence[Hit], lexical_seq: int,
                    answers: AnswerService) -> dict[str, Any]:
    """The record of one evidence run: everything replay needs to recompute the gates
    and the evidence, and the check needs to resolve markers."""
    g = result.gated
    embedder = answers.search.embedder
    return {
        "kind": "evidence", "run_id": str(result.run_id),
        "request": {"question": question},
        "as_of": {"valid_at": format_time(result.valid_at),
                  "known_at": format_time(result.known_at)},
        "tenant": str(principal.tenant_id), "key_id": principal.key_id,
        "clearance": principal.clearance, "segmenter_id": SEGMENTER_ID,
        "lexical_seq": lexical_seq,
        "models": {"embedding": embedder.model_hash if embedder else None,
                   "reranker": answers.reranker.model_hash,
                   "reranker_label": answers.reranker.label,
                   **({"cross_encoder": answers.cross.model_hash,
                       "cross_encoder_label": answers.cross.label}
                      if answers.cross is not None and g.cross is not None else {})},
        "thresholds": result.thresholds.record(),
        "salience": g.assessment.record(),
        "relevance": {"id": result.thresholds.relevance.model_id,
                      "features": g.assessment.pooled,
                      "score": next((d.observed for d in g.gates if d.gate == "relevance"),
                                    None)},
        "candidates": [{"document": h.document, "version_id": h.version_id,
                        "assertion_id": h.assertion_id, "passage": h.passage_ordinal,
                        "start": h.start, "end": h.end, "bm25": h.bm25, "vector": h.vector,
                        "fused": h.fused, "rerank": r, "calibrated": c,
                        **({"cross": g.cross[i]} if g.cross is not None else {})}
                       for i, (h, r, c) in enumerate(zip(hits, g.raw, g.calibrated,
                                                         strict=True))],
        "evidence": [evidence_entry(n, e) for n, e in enumerate(g.evidence, start=1)],
        "gates": [{"gate": d.gate, "passed": d.passed, "threshold": d.threshold,
                   "observed": d.observed, "detail": d.detail} for d in g.gates],
        "result": {"status": g.status, "reason": g.reason},
        "provenance": provenance(g.evidence).record(),
        "timings_ms": result.timings_ms,
    }


def evidence_entry(n: int, e: Evidence) -> dict[str, Any]:
    """One numbered evidence sentence as recorded: its place, never its text (the text
    is cut again from the immutable version when a check resolves ``[n]``)."""
    return {"n": n, "eid": e.eid, "document": e.document, "version_id": e.version_id,
            "start": e.start, "end": e.end, "valid_from": e.valid_from,
            "valid_to": e.valid_to, "score": e.score}
