"""Controllers for answers, citations, runs, replay, gaps and thresholds: one service call
each; the public shapes are built in app/stichtag/api/convert.py."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.params import FromPath, FromQuery, JSONBody

from stichtag.api import convert
from stichtag.api.deps import Svc, Who, as_of, optional_time
from stichtag.api.schemas import (
    AnchorBody,
    AnchorResponse,
    AnswerBody,
    AnswerResponse,
    GapsOut,
    ImpactOut,
    LeverageOut,
    ResolveResponse,
    RunResponse,
    ThresholdBody,
    ThresholdOut,
    VerdictOut,
)
from stichtag.domain.errors import Invalid


class AnswerController(Controller):
    """Gated answers with pinned citations."""

    path = "/v1/answer"
    tags = ("answers",)

    @post("/", operation_id="answer", status_code=200, sync_to_thread=True)
    def answer(self, data: JSONBody[AnswerBody], svc: Svc, who: Who) -> AnswerResponse:
        """Answer as of (valid_at, known_at), or abstain with reason, values and next step."""
        if svc.answers is None:
            raise Invalid("generator", "answering needs the ONNX models (stichtag models build)")
        at = as_of(svc, who, data.valid_at, data.known_at)
        result = svc.answers.answer(who, data.question, valid_at=at.valid_at,
                                    known_at=at.known_at, generator=data.generator,
                                    wait_for_index=data.wait_for_index)
        return convert.answer(result, at)


class CitationController(Controller):
    """Citation resolution across versions."""

    path = "/v1/citations"
    tags = ("answers",)

    @get("/resolve", operation_id="resolveCitation", sync_to_thread=True)
    def resolve(self, svc: Svc, who: Who, version_id: FromQuery[str], start: FromQuery[int],
                end: FromQuery[int]) -> ResolveResponse:
        """The quote with context, and its status in the document's current version."""
        return convert.resolution(
            svc.citations.resolve(who, version_id=version_id, start=start, end=end))

    @post("/anchor", operation_id="anchorQuote", status_code=200, sync_to_thread=True)
    def anchor(self, data: JSONBody[AnchorBody], svc: Svc, who: Who) -> AnchorResponse:
        """Find a TextQuoteSelector in the document's current version (no offsets needed):
        exact, then by prefix and suffix, then fuzzy; ``matched`` says which."""
        quote, near = convert.selector_quote(data.selector)
        return convert.quote_anchor(svc.citations.anchor(
            who, quote=quote, source=data.source, document=data.document, near=near),
            data.source)


class RunController(Controller):
    """Recorded runs (scope audit, or the key that made them)."""

    path = "/v1/runs"
    tags = ("audit",)

    @get("/{run_id:str}", operation_id="getRun", sync_to_thread=True)
    def get_run(self, run_id: FromPath[str], svc: Svc, who: Who) -> RunResponse:
        """A run record of this tenant."""
        row, erased = svc.runs.read(who, run_id)
        return RunResponse(run_id=str(row.run_id), kind=row.kind, key_id=row.key_id,
                           created_at=convert.iso(row.created_at), record=row.record,
                           erased=[convert.erasure(e) for e in erased])


class ReplayController(Controller):
    """Replay and retroactive impact (scope audit)."""

    path = "/v1"
    tags = ("audit",)

    @post("/runs/{run_id:str}/replay", operation_id="replayRun", status_code=200,
          sync_to_thread=True)
    def replay(self, run_id: FromPath[str], svc: Svc, who: Who) -> VerdictOut:
        """Recompute a run at its recorded as-of pair; the verdict names every difference."""
        if svc.replay is None:
            raise Invalid("run_id", "replay needs the ONNX models (stichtag models build)")
        v = svc.replay.replay(who, run_id)
        return VerdictOut(run_id=v.run_id, kind=v.kind, reproduced=v.reproduced,
                          differences=v.differences, notes=v.notes, status=v.status,
                          erased=v.erased)

    @get("/impact", operation_id="retroactiveImpact", sync_to_thread=True)
    def impact(self, svc: Svc, who: Who,
               since: FromQuery[str | None] = None) -> ImpactOut:
        """Recorded answers whose answer would now differ at their Stichtag."""
        if svc.replay is None:
            raise Invalid("since", "impact needs the ONNX models (stichtag models build)")
        return ImpactOut(runs=svc.replay.impact(
            who, since=optional_time(who, since, field="since")))


class GapController(Controller):
    """Documentation gaps (scope audit)."""

    path = "/v1/gaps"
    tags = ("audit",)

    @get("/", operation_id="documentationGaps", sync_to_thread=True)
    def gaps(self, svc: Svc, who: Who, since: FromQuery[str | None] = None) -> GapsOut:
        """Recent questions that abstained for lack of evidence, grouped by similarity."""
        if svc.gaps is None:
            raise Invalid("since", "the gap report needs the ONNX models")
        return GapsOut(groups=svc.gaps.report(
            who, since=optional_time(who, since, field="since")))


class ThresholdController(Controller):
    """Per-tenant gate thresholds with their audit trail."""

    path = "/v1/thresholds"
    tags = ("answers",)

    @get("/", operation_id="listThresholds", sync_to_thread=True)
    def history(self, svc: Svc, who: Who) -> list[ThresholdOut]:
        """Every threshold version, oldest first (scope audit)."""
        return [convert.thresholds(t) for t in svc.thresholds.history(who)]

    @get("/leverage", operation_id="getLeverage", sync_to_thread=True)
    def leverage(self, svc: Svc, who: Who) -> LeverageOut:
        """The leverage of τ measured on the tenant's recorded answers (scope admin)."""
        if svc.leverage is None:
            raise Invalid("leverage", "the leverage report is not built on this node")
        return convert.leverage(svc.leverage.report(who))

    @post("/", operation_id="setThresholds", status_code=201, sync_to_thread=True)
    def set(self, data: JSONBody[ThresholdBody], svc: Svc, who: Who) -> ThresholdOut:
        """Record a new threshold version with its rationale (scope admin)."""
        return convert.thresholds(svc.thresholds.set(
            who, theta_rel=data.theta_rel, tau=data.tau, calibration=None,
            rationale=data.rationale, theta_scope=data.theta_scope))
