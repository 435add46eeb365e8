"""Gated answering with pinned citations (docs/architecture.md, "Answering").

retrieve -> rerank -> GATE 1 relevance -> generate -> INTEGRITY -> conflicts -> GATE 2
coverage -> answer. The generator only formulates from this run's evidence sentences;
citations are cut from the stored versions, never taken from generator text. Every run
is recorded with everything needed to replay it.
"""

from __future__ import annotations

import bisect
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from app.domain import answer as gates
from app.domain.answer import (
    ABSTAINED,
    AnsweredSentence,
    Draft,
    Evidence,
    GateDecision,
    Resolution,
)
from app.domain.errors import Invalid
from app.domain.generation import Exchange, Generation, GeneratorError
from app.domain.passages import embed_text, section_of
from app.domain.records import VersionContent
from app.domain.retrieval import Hit
from app.domain.segment import SEGMENTER_ID
from app.domain.timeutil import format_time
from app.ports import Generator, PassageStore, Reranker, Transactions, VectorReranker
from app.services.access import Principal
from app.services.citations import VersionCache
from app.services.runlog import RunLog
from app.services.search import SearchService
from app.services.sources import SourceService
from app.services.thresholds import Thresholds, ThresholdService

PASSAGES = 8  # fused passages that are reranked; their sentences are this run's evidence
MAX_QUESTION_CHARS = 2000


class AnswerObserver(Protocol):
    """Counts answers (the Prometheus metrics in the server)."""

    def observe_answer(self, result: AnswerResult, texts: dict[str, str]) -> None:
        """One recorded answer run and the texts of the versions it cites."""
        ...


@dataclass(frozen=True, kw_only=True)
class AnswerResult:
    """Everything the API returns for one answer run."""

    run_id: uuid.UUID
    valid_at: datetime
    known_at: datetime
    status: str
    reason: str | None
    next_step: str | None
    failed: GateDecision | None
    gates: list[GateDecision]
    sentences: list[AnsweredSentence]
    coverage: float | None
    gaps: list[str]
    evidence: list[Evidence]
    cited: set[str]
    consulted: set[str]
    resolutions: list[Resolution]
    generator: str
    thresholds: Thresholds
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Decided:
    """The result of the pipeline after retrieval, with what the run record needs."""

    result: AnswerResult
    raw: list[float]
    calibrated: list[float]
    generation: Generation | None
    error: GeneratorError | None
    contents: dict[str, VersionContent]
    """The versions the evidence was cut from (read once per run)."""


class AnswerService:
    """Answers for one principal at one as-of pair."""

    def __init__(self, search: SearchService, thresholds: ThresholdService,
                 versions: VersionCache, reranker: Reranker, generators: dict[str, Generator],
                 passages: PassageStore, runlog: RunLog, units: Transactions,
                 metrics: AnswerObserver | None = None,
                 sources: SourceService | None = None) -> None:
        self.search = search
        self.thresholds = thresholds
        self.versions = versions
        self.reranker = reranker
        self.generators = generators
        self.passages = passages
        self.runlog = runlog
        self.units = units
        self.metrics = metrics
        # Places PDF-sourced citations on their page (issue #20); None: text only.
        self.sources = sources

    def answer(self, principal: Principal, question: str, *, valid_at: datetime,
               known_at: datetime, generator: str = "extractive",
               record: bool = True) -> AnswerResult:
        """Run the gated pipeline and record the run (``record=False``: impact analysis)."""
        principal.require("read")
        if not question.strip():
            raise Invalid("question", "must not be empty")
        if len(question) > MAX_QUESTION_CHARS:
            raise Invalid("question", f"at most {MAX_QUESTION_CHARS} characters")
        gen = self.generators.get(generator)
        if gen is None:
            raise Invalid("generator", f"one of {', '.join(sorted(self.generators))}")
        run_id = uuid.uuid4()
        started = time.perf_counter()
        thresholds = self.thresholds.current(principal.tenant_id)
        hits, search_timings, lexical_seq = self.search.retrieve(
            principal, question, valid_at=valid_at, known_at=known_at, k=PASSAGES)
        run = self.decide(principal, question, hits, thresholds=thresholds, generator=gen,
                          run_id=run_id, valid_at=valid_at, known_at=known_at)
        run.result.timings_ms.update({f"retrieve_{k}": v for k, v in search_timings.items()})
        run.result.timings_ms["total"] = _ms(started)
        if record:
            self._record(principal, question, run.result, hits, run.raw, run.calibrated,
                         run.generation, run.error, lexical_seq)
            if self.metrics is not None:
                cited = {c.version_id for s in run.result.sentences for c in s.citations}
                self.metrics.observe_answer(run.result, {
                    v: run.contents[v].text for v in cited})
        return run.result

    def decide(self, principal: Principal, question: str, hits: Sequence[Hit], *,
               thresholds: Thresholds, generator: Generator, run_id: uuid.UUID,
               valid_at: datetime, known_at: datetime,
               recorded_draft: Draft | None = None) -> Decided:
        """Everything after retrieval: rerank, gates, generation (or, for a replay of an
        LLM run, the recorded draft: verified, not regenerated), citations."""
        timings: dict[str, float] = {}
        t = time.perf_counter()
        raw = self._rerank(principal, question, hits)
        calibrated = [thresholds.calibration.apply(s) for s in raw]
        timings["rerank"] = _ms(t)
        order = sorted(range(len(hits)), key=lambda i: (-calibrated[i], i))
        contents = self.versions.get_many(principal, [h.version_id for h in hits])
        evidence = self._evidence(question, [hits[i] for i in order],
                                  [calibrated[i] for i in order], run_id, contents)
        if self.sources is not None:  # page and boxes for evidence from PDF originals
            evidence = self.sources.place(principal, evidence)
        by_id = {ev.eid: ev for ev in evidence}
        best = max(calibrated) if calibrated else None
        decisions = [gates.gate_relevance(best, thresholds.theta_rel)]
        generation: Generation | None = None
        error: GeneratorError | None = None
        draft: Draft | None = None
        cov: float | None = None
        resolutions: list[Resolution] = []
        t = time.perf_counter()
        if decisions[-1].passed:  # gate 1 holds before any generator runs
            try:
                generation = (Generation(draft=recorded_draft) if recorded_draft is not None
                              else generator.run(question, evidence))
                decisions.append(gates.gate_generation(None))
            except GeneratorError as exc:
                error = exc
                decisions.append(gates.gate_generation(exc.reason, f"{exc.reason}: {exc.detail}"))
        timings["generate"] = _ms(t)
        if decisions[-1].passed and generation is not None:
            draft = generation.draft
            decisions.append(gates.check_integrity(draft, by_id))
        if decisions[-1].passed and draft is not None:
            cited_ev = [by_id[e] for s in draft.sentences for e in dict.fromkeys(s.evidence_ids)]
            resolutions = [gates.resolve_conflict(c) for c in gates.detect_conflicts(cited_ev)]
            decisions.append(gates.gate_conflict(resolutions))
            draft = gates.without_superseded(draft, resolutions)
        if decisions[-1].passed and draft is not None:
            cov, _, _ = gates.coverage(draft.sentences, gates.sentence_splitter())
            decisions.append(gates.gate_coverage(cov, thresholds.tau))
        outcome = gates.status_for(decisions, coverage=cov if cov is not None else 0.0,
                                   gaps=draft.gaps if draft else [])
        sentences = gates.resolve(draft, by_id) if outcome.status != ABSTAINED and draft else []
        cited = {c_eid for s in (draft.sentences if draft and sentences else [])
                 for c_eid in s.evidence_ids}
        consulted = set(draft.consulted) if draft else set()
        result = AnswerResult(
            run_id=run_id, valid_at=valid_at, known_at=known_at, status=outcome.status,
            reason=outcome.reason, next_step=outcome.next_step, failed=outcome.failed,
            gates=decisions, sentences=sentences, coverage=cov,
            gaps=list(draft.gaps) if draft and sentences else [], evidence=evidence, cited=cited,
            consulted=consulted, resolutions=resolutions, generator=generator.name,
            thresholds=thresholds, timings_ms=timings)
        return Decided(result=result, raw=raw, calibrated=calibrated, generation=generation,
                       error=error, contents=contents)

    def relevance(self, principal: Principal, question: str, *, valid_at: datetime,
                  known_at: datetime) -> tuple[float | None, list[Hit]]:
        """The best raw rerank score and the hits, without generating or recording
        (what calibration fits on, and what gate 1 compares after calibration)."""
        hits, _, _ = self.search.retrieve(principal, question, valid_at=valid_at,
                                          known_at=known_at, k=PASSAGES)
        raw = self._rerank(principal, question, hits)
        return (max(raw) if raw else None), hits

    def _rerank(self, principal: Principal, question: str, hits: Sequence[Hit]) -> list[float]:
        """Raw rerank scores: a real cross-encoder reads the texts; the default cosine
        comes from stored passage vectors (the pair graph's score equals it)."""
        if not hits:
            return []
        if isinstance(self.reranker, VectorReranker):
            vectors = self._vectors(principal, hits)
            qvec = self.search.query_vector(question)  # embedded once, shared with retrieval
            return [float(s) for s in self.reranker.score_vectors(qvec, vectors)]
        return [float(s) for s in self.reranker.score(question, [h.text for h in hits])]

    def _vectors(self, principal: Principal, hits: Sequence[Hit]) -> Any:
        """The hits' stored vectors; a passage found lexically but not embedded yet is
        embedded now, exactly as the indexer would, and stored (first writer wins) — the
        run and its replay then see the same vector even if the indexer raced us
        (int8 vectors depend on their batch-mates, so a recomputed one could differ)."""
        embedder = self.search.embedder
        assert embedder is not None
        model = embedder.model_hash
        ids = [h.passage_id for h in hits]
        stored = self.passages.vectors(principal.tenant_id, ids, model_hash=model)
        missing = [h for h in hits if h.passage_id not in stored]
        if missing:
            texts = [embed_text(section_of(h.heading_path), h.text) for h in missing]
            missing_ids = [h.passage_id for h in missing]
            self.passages.store_vectors(principal.tenant_id, missing_ids,
                                        embedder.embed_passages(texts), model)
            stored.update(self.passages.vectors(principal.tenant_id, missing_ids,
                                                model_hash=model))
        return np.stack([np.asarray(stored[pid], dtype=np.float32) for pid in ids])

    def _evidence(self, question: str, hits: Sequence[Hit], scores: Sequence[float],
                  run_id: uuid.UUID, contents: dict[str, VersionContent]) -> list[Evidence]:
        """The sentences of the reranked passages, with run-scoped ids (E1-ab12, ...)."""
        tag = run_id.hex[:4]
        terms = set(gates.content_words(question))
        out: list[Evidence] = []
        for hit, score in zip(hits, scores, strict=True):
            content = contents[hit.version_id]
            first = bisect.bisect_left(content.sentences, hit.start, key=lambda x: x.start)
            for s in content.sentences[first:]:
                if s.start >= hit.end:
                    break
                if s.end > hit.end:
                    continue
                quote = content.text[s.start:s.end]
                if s.heading_path and quote == s.heading_path[-1]:
                    continue  # a heading is context (it is in the path), not a statement
                words = set(gates.content_words(quote)) | set(
                    gates.content_words(" ".join(s.heading_path)))
                overlap = len(terms & words) / len(terms) if terms else 0.0
                out.append(Evidence(
                    eid=f"E{len(out) + 1}-{tag}", document=hit.document,
                    version_id=hit.version_id, start=s.start, end=s.end,
                    utf16_start=s.utf16_start, utf16_end=s.utf16_end, quote=quote,
                    heading_path=tuple(s.heading_path),
                    valid_from=format_time(hit.valid_from) or "",
                    valid_to=format_time(hit.valid_to), doc_class=hit.doc_class,
                    # passage relevance, sharpened by how many question terms it carries
                    score=round(score * (0.5 + 0.5 * overlap), 6)))
        return out

    def _record(self, principal: Principal, question: str, result: AnswerResult,
                hits: Sequence[Hit], raw: Sequence[float], calibrated: Sequence[float],
                generation: Generation | None, error: GeneratorError | None,
                lexical_seq: int) -> None:
        exchanges: list[Exchange] = list(generation.exchanges if generation else
                                         (error.exchanges if error else ()))
        record = {
            "kind": "answer", "run_id": str(result.run_id), "request": {"question": question, "generator": result.generator},
            "as_of": {"valid_at": format_time(result.valid_at),
                      "known_at": format_time(result.known_at)},
            "tenant": str(principal.tenant_id), "key_id": principal.key_id,
            "clearance": principal.clearance, "segmenter_id": SEGMENTER_ID,
            "lexical_seq": lexical_seq,
            "models": {"embedding": self.search.embedder.model_hash
                       if self.search.embedder else None,
                       "reranker": self.reranker.model_hash, "reranker_label": self.reranker.label},
            "thresholds": result.thresholds.record(),
            "candidates": [{"document": h.document, "version_id": h.version_id,
                            "assertion_id": h.assertion_id, "passage": h.passage_ordinal,
                            "start": h.start, "end": h.end, "bm25": h.bm25, "vector": h.vector,
                            "fused": h.fused, "rerank": r, "calibrated": c}
                           for h, r, c in zip(hits, raw, calibrated, strict=True)],
            "evidence": [{"eid": e.eid, "version_id": e.version_id, "start": e.start,
                          "end": e.end, "score": e.score} for e in result.evidence],
            "gates": [_gate(g) for g in result.gates],
            "generator": {"name": result.generator,
                          "exchanges": [_exchange(x) for x in exchanges],
                          "draft": _draft(generation.draft) if generation else None,
                          "error": {"reason": error.reason, "detail": error.detail} if error else None},
            "result": {"status": result.status, "reason": result.reason,
                       "coverage": result.coverage, "gaps": result.gaps,
                       "sentences": [{"text": s.text, "citations": [
                           {"version_id": c.version_id, "start": c.start, "end": c.end}
                           for c in s.citations]} for s in result.sentences],
                       "conflicts": [{"rule": r.rule, "winner": r.winner.eid if r.winner else None,
                                      "loser": r.loser.eid if r.loser else None}
                                     for r in result.resolutions]},
            "timings_ms": result.timings_ms,
        }
        if self.sources is not None:  # extractor and libraries of PDF/HTML/DOCX sources
            record.update(self.sources.run_record(
                principal, [e.version_id for e in result.evidence]))
        with self.units.unit(principal.tenant_id) as uow:
            self.runlog.append(uow, principal.tenant_id, run_id=result.run_id,
                               kind="answer", key_id=principal.key_id, record=record)


def _gate(g: GateDecision) -> dict[str, Any]:
    return {"gate": g.gate, "passed": g.passed, "threshold": g.threshold, "observed": g.observed,
            "detail": g.detail}


def _exchange(x: Exchange) -> dict[str, Any]:
    return {"request": {"url": x.request.url, "body": x.request.body, "attempt": x.request.attempt},
            "response": {"status": x.response.status, "body": x.response.body,
                         "error": x.response.error}}


def _draft(d: Draft) -> dict[str, Any]:
    return {"sentences": [{"text": s.text, "evidence": s.evidence_ids} for s in d.sentences],
            "gaps": d.gaps, "consulted": d.consulted}


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
