"""Gated answering with pinned citations (docs/architecture.md §7).

retrieve -> rerank -> GATE 1 relevance -> generate -> INTEGRITY -> conflicts -> GATE 2
coverage -> answer. The generator only formulates from this run's evidence sentences;
citations are cut from the stored versions, never taken from generator text. Every run
is recorded with everything needed to replay it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from stichtag.domain import answer as gates
from stichtag.domain.answer import (
    ABSTAINED,
    Draft,
    Evidence,
    GateDecision,
)
from stichtag.domain.asof import AsOf
from stichtag.domain.errors import Invalid
from stichtag.domain.generation import (
    Generation,
    GeneratorError,
    ToolResult,
    opened_documents,
    titled_documents,
    tool_evidence,
)
from stichtag.domain.listing import ListQuestion
from stichtag.domain.provenance import cited_ids
from stichtag.domain.question_terms import content_gaps
from stichtag.domain.records import VersionText
from stichtag.domain.retrieval import Hit
from stichtag.domain.scope import gap_surfaces, gate_scope
from stichtag.domain.selectors import CONTEXT
from stichtag.domain.sentence_rule import DEFAULT_RULE, MEANING_RULE, OVERLAP_RULE
from stichtag.domain.sentence_rule import rule as rule_named
from stichtag.domain.timeutil import format_time
from stichtag.domain.txclock import cap_known_at
from stichtag.ports import (
    Generator,
    PassageStore,
    Reranker,
    ToolGenerator,
    Transactions,
)
from stichtag.services.access import Principal
from stichtag.services.answer_draft import Reads, check_draft, evidence_of
from stichtag.services.answer_record import answer_record, listing_record
from stichtag.services.answer_result import AnswerResult, Decided
from stichtag.services.assess import Assessment, assess
from stichtag.services.citations import VersionCache
from stichtag.services.crosslang import decide_across, other_language_hits
from stichtag.services.library import RunLibrary
from stichtag.services.listing import ListingService, list_answer
from stichtag.services.runlog import RunLog
from stichtag.services.scoring import Scorer
from stichtag.services.search import SearchService
from stichtag.services.sentence_scores import SentenceScoring
from stichtag.services.sources import SourceService
from stichtag.services.thresholds import Thresholds, ThresholdService

PASSAGES = 8  # fused passages that are reranked; their sentences are this run's evidence
MAX_QUESTION_CHARS = 2000


class AnswerObserver(Protocol):
    """Counts answers (the Prometheus metrics in the server)."""

    def observe_answer(self, result: AnswerResult, texts: Mapping[str, VersionText]) -> None:
        """One recorded answer run and what its citations were cut from."""
        ...


class AnswerService:
    """Answers for one principal at one as-of pair."""

    def __init__(self, search: SearchService, thresholds: ThresholdService,
                 versions: VersionCache, reranker: Reranker, generators: dict[str, Generator],
                 passages: PassageStore, runlog: RunLog, units: Transactions,
                 metrics: AnswerObserver | None = None,
                 sources: SourceService | None = None,
                 listings: ListingService | None = None,
                 cross: Reranker | None = None) -> None:
        self.search = search
        self.thresholds = thresholds
        self.versions = versions
        # rerank, cross-encoder and calibration of the candidates (services/scoring.py)
        self.scorer = Scorer(search, reranker, passages, cross)
        self.generators = generators
        self.passages = passages
        self.runlog = runlog
        self.units = units
        self.metrics = metrics
        # Places PDF-sourced citations on their page (docs/extraction.md, "How the server uses
        # it"); None: text only.
        self.sources = sources
        # Answers questions about the collection from the catalogue (docs/architecture.md §7); None:
        # every question is a content question.
        self.listings = listings
        # How evidence sentences are scored (stichtag.domain.sentence_rule); a replay
        # passes the rule its run recorded instead.
        self.sentence_rule = DEFAULT_RULE

    def answer(self, principal: Principal, question: str, *, valid_at: datetime,
               known_at: datetime, generator: str = "extractive",
               record: bool = True, wait_for_index: bool = False) -> AnswerResult:
        """Run the gated pipeline and record the run (``record=False``: impact analysis);
        ``wait_for_index`` waits (bounded) for the index backlog at the pair first."""
        principal.require("read")
        if not question.strip():
            raise Invalid("question", "must not be empty")
        if len(question) > MAX_QUESTION_CHARS:
            raise Invalid("question", f"at most {MAX_QUESTION_CHARS} characters")
        gen = self.generators.get(generator)
        if gen is None:
            raise Invalid("generator", f"one of {', '.join(sorted(self.generators))}")
        # No run, recorded or not, claims a future state of knowledge (§3.7).
        known_at = cap_known_at(known_at, self.runlog.clock.now())
        if record:
            with self.units.unit(principal.tenant_id) as uow:
                self.runlog.observe(uow, known_at)
        run_id = uuid.uuid4()
        started = time.perf_counter()
        thresholds = self.thresholds.current(principal.tenant_id)
        asked = (self.listings.recognise(principal, question, valid_at=valid_at,
                                         known_at=known_at) if self.listings else None)
        if asked is not None:
            return self._list(principal, question, asked, thresholds=thresholds, generator=gen,
                              run_id=run_id, valid_at=valid_at, known_at=known_at,
                              started=started, record=record)
        if wait_for_index:
            self.search.wait_for_index(principal, valid_at=valid_at, known_at=known_at)
        hits, search_timings, lexical_seq = self.search.retrieve(
            principal, question, valid_at=valid_at, known_at=known_at, k=PASSAGES)
        index = self.search.index_state(principal, valid_at=valid_at, known_at=known_at,
                                        lexical_seq=lexical_seq)
        run = self.decide(principal, question, hits, thresholds=thresholds, generator=gen,
                          run_id=run_id, valid_at=valid_at, known_at=known_at)
        more = other_language_hits(self.search, principal, question, hits, run.result,
                                   valid_at=valid_at, known_at=known_at)
        if more:  # judged again with candidates in another language (docs/salience.md)
            hits = [*hits, *more]
            run = self.decide(principal, question, hits, thresholds=thresholds, generator=gen,
                              run_id=run_id, valid_at=valid_at, known_at=known_at)
        run = replace(run, result=replace(run.result, index=index))
        run.result.timings_ms.update({f"retrieve_{k}": v for k, v in search_timings.items()})
        run.result.timings_ms["total"] = _ms(started)
        if record:
            record_ = answer_record(
                principal, question, run.result, hits=hits, raw=run.raw,
                calibrated=run.calibrated, generation=run.generation, error=run.error,
                lexical_seq=lexical_seq,
                embedding=self.search.embedder.model_hash if self.search.embedder else None,
                reranker=self.reranker, sentence_scores=run.sentence_scores,
                cross=self.scorer.cross, cross_scores=run.cross)
            record_["index"] = index.record()
            if self.sources is not None:  # extractor and libraries of PDF/HTML/DOCX sources
                record_.update(self.sources.run_record(
                    principal, [e.version_id for e in run.result.evidence]))
            with self.units.unit(principal.tenant_id) as uow:
                self.runlog.append(uow, principal.tenant_id, run_id=run.result.run_id,
                                   kind="answer", key_id=principal.key_id, record=record_)
            if self.metrics is not None:
                cited = {c.version_id for s in run.result.sentences for c in s.citations}
                # a version read only through a tool is not among the retrieved contents
                self.metrics.observe_answer(run.result, {
                    v: (run.contents[v] if v in run.contents
                        else self.versions.get(principal, v)) for v in cited})
        return run.result

    def listed(self, principal: Principal, asked: ListQuestion, *, thresholds: Thresholds,
               generator: Generator, run_id: uuid.UUID, valid_at: datetime,
               known_at: datetime) -> AnswerResult:
        """A list answer (app/stichtag/services/listing.py ``list_answer``), not recorded."""
        assert self.listings is not None
        return list_answer(self.listings, principal, asked, thresholds=thresholds,
                           generator=generator.name, run_id=run_id, valid_at=valid_at,
                           known_at=known_at)

    def _list(self, principal: Principal, question: str, asked: ListQuestion, *,
              thresholds: Thresholds, generator: Generator, run_id: uuid.UUID,
              valid_at: datetime, known_at: datetime, started: float,
              record: bool) -> AnswerResult:
        result = self.listed(principal, asked, thresholds=thresholds, generator=generator,
                             run_id=run_id, valid_at=valid_at, known_at=known_at)
        result.timings_ms["total"] = _ms(started)
        if record:
            with self.units.unit(principal.tenant_id) as uow:
                self.runlog.append(uow, principal.tenant_id, run_id=run_id, kind="answer",
                                   key_id=principal.key_id,
                                   record=listing_record(principal, question, result))
            if self.metrics is not None:  # counted by status; it cites no text
                self.metrics.observe_answer(result, {})
        return result

    def decide(self, principal: Principal, question: str, hits: Sequence[Hit], *,
               thresholds: Thresholds, generator: Generator, run_id: uuid.UUID,
               valid_at: datetime, known_at: datetime,
               recorded_draft: Draft | None = None,
               recorded_tools: Sequence[ToolResult] = (), languages: bool = True,
               sentence_rule: str | None = None, cross: bool = True) -> Decided:
        """Everything after retrieval: rerank, gates, generation (or, for a replay of an
        LLM run, the recorded draft and tool results: verified, not regenerated),
        citations. ``sentence_rule`` scores the evidence sentences (a replay passes the
        recorded one; None: this service's rule); ``cross`` False reads no cross-encoder
        (a replay of a run recorded without one)."""
        timings: dict[str, float] = {}
        judged = self.scorer.judge(principal, question, hits, thresholds=thresholds,
                                   valid_at=valid_at, known_at=known_at, languages=languages,
                                   cross=cross, timings=timings)
        raw, assessment, calibrated = judged.raw, judged.assessment, judged.calibrated
        order = sorted(range(len(hits)), key=lambda i: (-calibrated[i], i))
        # only the blocks the evidence is cut from (its sentences and their context), not
        # whole versions: a version assembled on a cache miss was the answer's p95 tail
        contents = self.versions.excerpts(principal, [
            (h.version_id, h.start - CONTEXT, h.end + CONTEXT) for h in hits])
        decisions = [gate_scope(assessment.aspects, assessment.in_force,
                                thresholds.theta_scope,
                                valid_at=format_time(valid_at) or ""),
                     gates.gate_relevance(judged.best, thresholds.theta_rel,
                                          stale=judged.stale)]
        decisions, chosen, scores, answering = self._across(
            hits, raw, assessment, decisions,
            ([hits[i] for i in order], [calibrated[i] for i in order]), thresholds=thresholds)
        evidence, sentence_scores = self._evidence(
            question, chosen, scores, run_id, contents, sentence_rule or self.sentence_rule,
            timings, read=all(d.passed for d in decisions))  # a refused run cites nothing
        if self.sources is not None:  # page and boxes for evidence from PDF originals
            evidence = self.sources.place(principal, evidence)
        by_id = {ev.eid: ev for ev in evidence}
        generation: Generation | None = None
        error: GeneratorError | None = None
        t = time.perf_counter()
        if all(d.passed for d in decisions):  # scope and relevance hold before generation
            try:
                generation = self._generate(principal, question, evidence, answering,
                                            generator, run_id=run_id, valid_at=valid_at,
                                            known_at=known_at, recorded_draft=recorded_draft,
                                            recorded_tools=recorded_tools)
                decisions.append(gates.gate_generation(None))
            except GeneratorError as exc:
                error = exc
                decisions.append(gates.gate_generation(exc.reason, f"{exc.reason}: {exc.detail}"))
        timings["generate"] = _ms(t)
        tools = generation.tools if generation else (error.tools if error else [])
        if tools:  # what the generator read through tools is found, and citable
            more = tool_evidence(tools)
            evidence = evidence + (self.sources.place(principal, more)
                                   if self.sources is not None else more)
            by_id = {ev.eid: ev for ev in evidence}
        reads = Reads(opened=opened_documents(tools), read=[e.eid for e in tool_evidence(tools)],
                       titles=titled_documents(tools))
        checked = None
        if decisions[-1].passed and generation is not None:
            checked = check_draft(generation.draft, by_id, answering, thresholds.tau, reads)
            decisions.extend(checked.decisions)
        draft = checked.draft if checked else None
        cov = checked.coverage if checked else None
        resolutions = checked.resolutions if checked else []
        uncovered = checked.uncovered if checked else ()
        gaps = gap_surfaces(content_gaps(uncovered) if languages else uncovered)
        outcome = gates.status_for(decisions, coverage=cov if cov is not None else 0.0,
                                   gaps=gaps)
        sentences = gates.resolve(draft, by_id) if outcome.status != ABSTAINED and draft else []
        delivered = cited_ids(draft) if sentences else []
        cited = set(delivered)
        result = AnswerResult(
            run_id=run_id, valid_at=valid_at, known_at=known_at, status=outcome.status,
            reason=outcome.reason, next_step=outcome.next_step, failed=outcome.failed,
            gates=decisions, sentences=sentences, coverage=cov,
            gaps=gaps if sentences else [], evidence=evidence, cited=cited,
            provenance=reads.provenance(evidence, delivered), resolutions=resolutions,
            generator=generator.name, thresholds=thresholds, assessment=assessment,
            timings_ms=timings)
        return Decided(result=result, raw=raw, calibrated=calibrated, generation=generation,
                       error=error, contents=contents, sentence_scores=sentence_scores,
                       cross=judged.cross)

    def _evidence(self, question: str, hits: Sequence[Hit], scores: Sequence[float],
                  run_id: uuid.UUID, contents: dict[str, VersionText],
                  rule_id: str, timings: dict[str, float], *, read: bool,
                  ) -> tuple[list[Evidence], SentenceScoring]:
        """The evidence sentences scored by the named rule; a rule that reads meaning
        needs the embedder (without one the run falls back to word overlap, and records
        that). ``read`` False (the gates refused before generation): no sentence is
        embedded, since none will be cited."""
        t = time.perf_counter()
        rule = rule_named(rule_id)
        embedder = self.search.embedder
        if rule.reads_meaning and embedder is None:
            rule = rule_named(OVERLAP_RULE)
        if rule.reads_cross and self.scorer.cross is None:
            rule = rule_named(MEANING_RULE)  # recorded as such: replay uses the same
        qvec = (self.search.query_vector(question) if rule.reads_meaning and hits and read
                else None)
        scored = evidence_of(question, hits, scores, run_id, contents, rule=rule,
                             embedder=embedder, query_vector=qvec,
                             model=embedder.model_hash if embedder is not None else None,
                             cross=self.scorer.cross if rule.reads_cross else None)
        timings["sentences"] = _ms(t)
        return scored

    def _across(self, hits: Sequence[Hit], raw: Sequence[float], assessment: Assessment,
                decisions: list[GateDecision],
                lexical: tuple[list[Hit], list[float]], *, thresholds: Thresholds
                ) -> tuple[list[GateDecision], list[Hit], list[float], Assessment]:
        """Scope and relevance across languages (``stichtag.services.crosslang``): when
        words fail and some candidates are in another language, the gates decide on their
        meaning; when those hold, the answer draws on those candidates, best cosine first,
        without the question's words as aspects (they are not compared across languages).
        Returns the decisions, the hits and scores the evidence is cut from, and the
        assessment the answer is judged by."""
        across = decide_across(assessment, raw, decisions, theta_rel=thresholds.theta_rel,
                               stale=self.scorer.stale(thresholds),
                               cross_encoder=(self.scorer.cross.model_hash
                                              if self.scorer.cross is not None else None))
        if across is None:
            return decisions, *lexical, assessment
        if not across.passed:
            return across.decisions, *lexical, assessment
        return (across.decisions, [hits[i] for i in across.order],
                [raw[i] for i in across.order], replace(assessment, aspects=[]))

    def _generate(self, principal: Principal, question: str, evidence: list[Evidence],
                  assessment: Assessment, generator: Generator, *, run_id: uuid.UUID,
                  valid_at: datetime, known_at: datetime, recorded_draft: Draft | None,
                  recorded_tools: Sequence[ToolResult]) -> Generation:
        """The draft: recorded (replay of an LLM run), with tools (a tool-calling
        generator gets this run's library), or plain."""
        if recorded_draft is not None:
            return Generation(draft=recorded_draft, tools=list(recorded_tools))
        if isinstance(generator, ToolGenerator):
            return generator.run_with_tools(question, evidence, assessment.aspects,
                                            self.library(principal, run_id, valid_at=valid_at,
                                                         known_at=known_at,
                                                         first=len(evidence) + 1))
        return generator.run(question, evidence, assessment.aspects)

    def library(self, principal: Principal, run_id: uuid.UUID, *, valid_at: datetime,
                known_at: datetime, first: int) -> RunLibrary:
        """The tools of one run: what is in force at its as-of pair, within its tenant and
        clearance; evidence ids continue the run's numbering from ``first``."""
        return RunLibrary(principal, valid_at=valid_at, known_at=known_at,
                          tag=run_id.hex[:4], first=first, documents=self.versions.store,
                          versions=self.versions, listings=self.listings)

    def relevance(self, principal: Principal, question: str, *, valid_at: datetime,
                  known_at: datetime) -> tuple[Assessment, list[Hit]]:
        """What gates scope and relevance see, without generating or recording (what
        calibration fits on)."""
        hits, _, _ = self.search.retrieve(principal, question, valid_at=valid_at,
                                          known_at=known_at, k=PASSAGES)
        raw = self.scorer.rerank(principal, question, hits)
        return assess(self.search.lexical, principal, question, hits, raw,
                      as_of=AsOf(valid_at=valid_at, known_at=known_at),
                      cross=self.scorer.cross_scores(question, hits)), hits

    def rerank(self, principal: Principal, question: str, hits: Sequence[Hit]) -> list[float]:
        """Raw rerank scores of ``hits`` (the evidence use case, services/evidence.py)."""
        return self.scorer.rerank(principal, question, hits)

    def stale(self, thresholds: Thresholds) -> str | None:
        """Why ``thresholds`` cannot gate this node's scores, or None (services/scoring.py)."""
        return self.scorer.stale(thresholds)

    @property
    def reranker(self) -> Reranker:
        """The reranker that orders the candidates (the scorer's)."""
        return self.scorer.reranker

    @reranker.setter
    def reranker(self, model: Reranker) -> None:
        self.scorer.reranker = model

    @property
    def cross(self) -> Reranker | None:
        """The cross-encoder every answer reads, or None."""
        return self.scorer.cross


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
