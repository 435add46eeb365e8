"""Support review (scope audit): samples, verdicts, reports. Thin controllers over
``ReviewService``; the reviewer is always the calling key, never a body field."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.params import FromPath, JSONBody

from stichtag.api import convert
from stichtag.api.deps import Svc, Who, optional_time
from stichtag.api.schemas.review import (
    ReportOut,
    SampleBody,
    SampleListOut,
    SampleOut,
    SampleSummary,
    VerdictBody,
    VerdictOut,
)
from stichtag.services.review import Sample

__all__ = ["ReportOut", "ReviewController", "SampleBody", "SampleListOut", "SampleOut",
           "SampleSummary", "VerdictBody", "VerdictOut", "sample_out"]


def sample_out(s: Sample) -> SampleOut:
    """The public form of a sample."""
    return SampleOut(sample_id=s.sample_id, created_by=s.created_by,
                     created_at=convert.iso(s.created_at), seed=s.seed, strata=s.strata,
                     n_per_stratum=s.n_per_stratum, filters=s.filters,
                     population=s.population, items=s.items)


class ReviewController(Controller):
    """Sampled support review of answer sentences against their Fundstellen."""

    path = "/v1/review"
    tags = ("audit",)

    @post("/samples", operation_id="createReviewSample", status_code=201, sync_to_thread=True)
    def create(self, data: JSONBody[SampleBody], svc: Svc, who: Who) -> SampleOut:
        """Draw and store a reproducible stratified sample of sentence-citation pairs."""
        who.require("audit")
        return sample_out(svc.review.create_sample(
            who, seed=data.seed, strata=data.strata, n=data.n,
            run_from=optional_time(who, data.run_from, field="run_from"),
            run_to=optional_time(who, data.run_to, field="run_to")))

    @get("/samples", operation_id="listReviewSamples", sync_to_thread=True)
    def index(self, svc: Svc, who: Who) -> SampleListOut:
        """The tenant's samples within the key's clearance."""
        return SampleListOut(samples=[SampleSummary(
            sample_id=str(r["sample_id"]), created_by=r["created_by"],
            created_at=convert.iso(r["created_at"]), seed=r["seed"], strata=list(r["strata"]),
            n_per_stratum=r["n_per_stratum"], items=r["items"])
            for r in svc.review.samples(who)])

    @get("/samples/{sample_id:str}", operation_id="getReviewSample", sync_to_thread=True)
    def show(self, sample_id: FromPath[str], svc: Svc, who: Who) -> SampleOut:
        """A sample's items: sentence text, cited quote with offsets, current verdict."""
        return sample_out(svc.review.sample(who, sample_id))

    @get("/samples/{sample_id:str}/report", operation_id="getReviewReport", sync_to_thread=True)
    def report(self, sample_id: FromPath[str], svc: Svc, who: Who) -> ReportOut:
        """Support rates per stratum and overall, with the failed pairs and their runs."""
        r = svc.review.report(who, sample_id)
        return ReportOut(sample_id=r["sample_id"], overall=r["overall"], strata=r["strata"],
                         failures=r["failures"], rules=r["rules"])

    @post("/verdicts", operation_id="recordReviewVerdict", status_code=201, sync_to_thread=True)
    def verdict(self, data: JSONBody[VerdictBody], svc: Svc, who: Who) -> VerdictOut:
        """Append a verdict by the calling key; it enters the run log in the same transaction."""
        return VerdictOut(**svc.review.record_verdict(
            who, sample_id=data.sample_id, item=data.item, verdict=data.verdict,
            note=data.note, supersedes=data.supersedes))
