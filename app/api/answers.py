"""Controllers for answers, citations, runs and thresholds."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from litestar import Controller, get, post
from litestar.params import FromPath, FromQuery, JSONBody

from app.api import convert
from app.api.deps import Svc, Who, tenant_zone
from app.api.schemas import (
    AnswerBody,
    AnswerResponse,
    AnswerSentenceOut,
    AsOf,
    CitationOut,
    ConflictOut,
    GateOut,
    GapsOut,
    ImpactOut,
    ResolveResponse,
    RunResponse,
    SourceOut,
    ThresholdBody,
    ThresholdOut,
    VerdictOut,
)
from app.domain.answer import Citation, Evidence
from app.domain.errors import Invalid, NotFound
from app.domain.timeutil import parse_time
from app.services.thresholds import Thresholds


def citation_out(c: Citation | Evidence) -> CitationOut:
    """A public citation from a citation or an evidence sentence."""
    return CitationOut(document=c.document, version_id=c.version_id, start=c.start, end=c.end,
                       utf16_start=c.utf16_start, utf16_end=c.utf16_end, quote=c.quote,
                       heading_path=list(c.heading_path), valid_from=c.valid_from,
                       valid_to=c.valid_to)


def threshold_out(t: Thresholds) -> ThresholdOut:
    """A public threshold version."""
    return ThresholdOut(version=t.version, theta_rel=t.theta_rel, tau=t.tau,
                        calibration=t.calibration.to_dict(), rationale=t.rationale,
                        set_by=t.set_by,
                        recorded_at=convert.iso(t.recorded_at) if t.recorded_at else None)


class AnswerController(Controller):
    """Gated answers with pinned citations."""

    path = "/v1/answer"
    tags = ["answers"]

    @post("/", operation_id="answer", status_code=200, sync_to_thread=True)
    def answer(self, data: JSONBody[AnswerBody], svc: Svc, who: Who) -> AnswerResponse:
        """Answer as of (valid_at, known_at), or abstain with reason, values and next step."""
        if svc.answers is None:
            raise Invalid("generator", "answering needs the ONNX models (stichtag models build)")
        tz = tenant_zone(svc, who)
        now = datetime.now(UTC)
        valid_at = parse_time(data.valid_at, field="valid_at", tz=tz) if data.valid_at else now
        known_at = parse_time(data.known_at, field="known_at", tz=tz) if data.known_at else now
        r = svc.answers.answer(who, data.question, valid_at=valid_at, known_at=known_at,
                               generator=data.generator)
        return AnswerResponse(
            run_id=str(r.run_id), status=r.status, reason=r.reason, next_step=r.next_step,
            threshold=r.failed.threshold if r.failed else None,
            observed=r.failed.observed if r.failed else None,
            sentences=[AnswerSentenceOut(text=s.text,
                                         citations=[citation_out(c) for c in s.citations])
                       for s in r.sentences],
            coverage=r.coverage,
            gates=[GateOut(gate=g.gate, passed=g.passed, threshold=g.threshold,
                           observed=g.observed, detail=g.detail) for g in r.gates],
            gaps=r.gaps,
            sources=[SourceOut(id=e.eid, citation=citation_out(e), cited=e.eid in r.cited,
                               consulted=e.eid in r.consulted, score=e.score) for e in r.evidence],
            conflicts=[ConflictOut(
                rule=res.rule, winner=res.winner.eid if res.winner else None,
                loser=res.loser.eid if res.loser else None,
                citations=[citation_out(res.conflict.first), citation_out(res.conflict.second)])
                for res in r.resolutions],
            as_of=AsOf(valid_at=convert.iso(valid_at), known_at=convert.iso(known_at)),
            generator=r.generator, thresholds_version=r.thresholds.version)


class CitationController(Controller):
    """Citation resolution across versions."""

    path = "/v1/citations"
    tags = ["answers"]

    @get("/resolve", operation_id="resolveCitation", sync_to_thread=True)
    def resolve(self, svc: Svc, who: Who, version_id: FromQuery[str], start: FromQuery[int],
                end: FromQuery[int]) -> ResolveResponse:
        """The quote with context, and its status in the document's current version."""
        res = svc.citations.resolve(who, version_id=version_id, start=start, end=end)
        history = svc.documents.history(who, res.document)
        vf = next((a for a in history if a.version_id == version_id), None)

        def cit(version: str, s: int, e: int, u16: tuple[int, int], text: str,
                path: list[str]) -> CitationOut:
            row = next((a for a in history if a.version_id == version), vf)
            return CitationOut(document=res.document, version_id=version, start=s, end=e,
                               utf16_start=u16[0], utf16_end=u16[1], quote=text,
                               heading_path=path,
                               valid_from=convert.iso(row.valid_from) if row else "",
                               valid_to=convert.iso(row.valid_to) if row and row.valid_to else None)

        current = None
        if res.anchor.target is not None and res.current_version_id and res.current_utf16:
            now = svc.citations.versions.get(who, res.current_version_id)
            sent = next(s for s in now.sentences if s.start == res.anchor.target.start)
            current = cit(res.current_version_id, sent.start, sent.end, res.current_utf16,
                          res.anchor.target.text, list(sent.heading_path))

        return ResolveResponse(
            citation=cit(version_id, res.start, res.end, (res.utf16_start, res.utf16_end),
                         res.quote, res.heading_path),
            context_before=res.context_before, context_after=res.context_after,
            current_version_id=res.current_version_id, status=res.anchor.status,
            similarity=res.anchor.similarity, current=current)


class RunController(Controller):
    """Recorded runs (scope audit, or the key that made them)."""

    path = "/v1/runs"
    tags = ["audit"]

    @get("/{run_id:str}", operation_id="getRun", sync_to_thread=True)
    def get_run(self, run_id: FromPath[str], svc: Svc, who: Who) -> RunResponse:
        """A run record of this tenant."""
        try:
            rid = uuid.UUID(run_id)
        except ValueError:
            raise NotFound("run") from None
        row = svc.store.run(who.tenant_id, rid)
        if row is None or ("audit" not in who.scopes and "admin" not in who.scopes
                           and row["key_id"] != who.key_id):
            raise NotFound("run")
        if row["record"].get("clearance", 0) > who.clearance:
            raise NotFound("run")
        return RunResponse(run_id=str(row["run_id"]), kind=row["kind"], key_id=row["key_id"],
                           created_at=convert.iso(row["created_at"]), record=row["record"])


class ReplayController(Controller):
    """Replay and retroactive impact (scope audit)."""

    path = "/v1"
    tags = ["audit"]

    @post("/runs/{run_id:str}/replay", operation_id="replayRun", status_code=200,
          sync_to_thread=True)
    def replay(self, run_id: FromPath[str], svc: Svc, who: Who) -> VerdictOut:
        """Recompute a run at its recorded as-of pair; the verdict names every difference."""
        if svc.replay is None:
            raise Invalid("run_id", "replay needs the ONNX models (stichtag models build)")
        v = svc.replay.replay(who, run_id)
        return VerdictOut(run_id=v.run_id, kind=v.kind, reproduced=v.reproduced,
                          differences=v.differences, notes=v.notes)

    @get("/impact", operation_id="retroactiveImpact", sync_to_thread=True)
    def impact(self, svc: Svc, who: Who,
               since: FromQuery[str | None] = None) -> ImpactOut:
        """Recorded answers whose answer would now differ at their Stichtag."""
        if svc.replay is None:
            raise Invalid("since", "impact needs the ONNX models (stichtag models build)")
        start = parse_time(since, field="since", tz=tenant_zone(svc, who)) if since else None
        return ImpactOut(runs=svc.replay.impact(who, since=start))


class GapController(Controller):
    """Documentation gaps (scope audit)."""

    path = "/v1/gaps"
    tags = ["audit"]

    @get("/", operation_id="documentationGaps", sync_to_thread=True)
    def gaps(self, svc: Svc, who: Who, since: FromQuery[str | None] = None) -> GapsOut:
        """Recent questions that abstained for lack of evidence, grouped by similarity."""
        from app.services.gaps import gap_report

        embedder = svc.indexer.embedder
        if embedder is None:
            raise Invalid("since", "the gap report needs the ONNX models")
        start = parse_time(since, field="since", tz=tenant_zone(svc, who)) if since else None
        return GapsOut(groups=gap_report(svc.store, embedder, who, since=start))


class ThresholdController(Controller):
    """Per-tenant gate thresholds with their audit trail."""

    path = "/v1/thresholds"
    tags = ["answers"]

    @get("/", operation_id="listThresholds", sync_to_thread=True)
    def history(self, svc: Svc, who: Who) -> list[ThresholdOut]:
        """Every threshold version, oldest first (scope audit)."""
        return [threshold_out(t) for t in svc.thresholds.history(who)]

    @post("/", operation_id="setThresholds", status_code=201, sync_to_thread=True)
    def set(self, data: JSONBody[ThresholdBody], svc: Svc, who: Who) -> ThresholdOut:
        """Record a new threshold version with its rationale (scope admin)."""
        return threshold_out(svc.thresholds.set(who, theta_rel=data.theta_rel, tau=data.tau,
                                                calibration=None, rationale=data.rationale))



