"""POST /v1/answer/compare: one question answered at two as-of pairs, the changes in the
cited facts and their causes from the bitemporal history (docs/api.md, "Compare")."""

from __future__ import annotations

from typing import Any

from litestar import Controller, post
from litestar.params import JSONBody

from stichtag.api import convert
from stichtag.api.changes import sentence_diff
from stichtag.api.deps import Svc, Who, as_of
from stichtag.api.schemas.compare import (
    AssertionChangeOut,
    CompareBody,
    CompareChangeOut,
    CompareResponse,
    LawChangeOut,
    ValidityOut,
)
from stichtag.domain.compare import Change
from stichtag.domain.errors import Invalid
from stichtag.domain.sentence_diff import SentenceDiff
from stichtag.services.compare import Compared


def _validity(v: dict[str, Any] | None) -> ValidityOut | None:
    return None if v is None else ValidityOut(**v)


def change(c: Change, diff: SentenceDiff | None) -> CompareChangeOut:
    """The public shape of one document's change."""
    return CompareChangeOut(
        document=c.document, kind=c.kind, cause=c.cause, from_version=c.from_version,
        to_version=c.to_version, explanation=c.explanation,
        law=LawChangeOut(from_=_validity(c.law["from"]), to=_validity(c.law["to"]))
        if c.law else None,
        knowledge=[AssertionChangeOut(**k) for k in c.knowledge],
        diff=sentence_diff(diff) if diff is not None else None)


class CompareController(Controller):
    """Answers compared across two Stichtage."""

    path = "/v1/answer/compare"
    tags = ("answers",)

    @post("/", operation_id="compareAnswers", status_code=200, sync_to_thread=True)
    def compare(self, data: JSONBody[CompareBody], svc: Svc, who: Who) -> CompareResponse:
        """Answer at ``from`` and at ``to`` (both recorded), and name for each cited
        document whether the law changed, the knowledge changed, or both."""
        if svc.compare is None:
            raise Invalid("question", "comparing needs the ONNX models (stichtag models build)")
        first = as_of(svc, who, data.from_.valid_at, data.from_.known_at)
        second = as_of(svc, who, data.to.valid_at, data.to.known_at)
        done: Compared = svc.compare.compare(who, data.question, first=first, second=second,
                                             generator=data.generator)
        return CompareResponse(
            run_id=str(done.run_id), from_=convert.answer(done.first, first),
            to=convert.answer(done.second, second),
            changes=[change(c, done.diffs.get(c.document)) for c in done.changes],
            summary=done.summary)
