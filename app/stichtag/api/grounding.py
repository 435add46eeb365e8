"""Controllers for outside formulators (docs/assistants.md): gated evidence for a question,
and the grounding check of an answer written elsewhere. One service call each."""

from __future__ import annotations

from litestar import Controller, post
from litestar.params import JSONBody

from stichtag.api import convert
from stichtag.api.deps import Svc, Who, as_of
from stichtag.api.schemas import CheckBody, CheckResponse, EvidenceResponse
from stichtag.api.schemas.answers import AnswerBody
from stichtag.domain.asof import AsOf
from stichtag.domain.errors import Invalid
from stichtag.services.grounding import QuoteRef


class GroundingController(Controller):
    """Evidence for an assistant's own model, and the check of what it wrote."""

    path = "/v1/answer"
    tags = ("answers",)

    @post("/evidence", operation_id="answerEvidence", status_code=200, sync_to_thread=True)
    def evidence(self, data: JSONBody[AnswerBody], svc: Svc, who: Who) -> EvidenceResponse:
        """The gated evidence for a question at an as-of pair (after the relevance gate,
        with its refusals), numbered ``[n]``, recorded as a run."""
        if svc.evidence is None:
            raise Invalid("question", "evidence needs the ONNX models (stichtag models build)")
        at = as_of(svc, who, data.valid_at, data.known_at)
        result = svc.evidence.evidence(who, data.question, valid_at=at.valid_at,
                                       known_at=at.known_at)
        return convert.evidence(result, AsOf(valid_at=result.valid_at,
                                             known_at=result.known_at,
                                             requested_known_at=at.requested_known_at))

    @post("/check", operation_id="checkAnswer", status_code=200, sync_to_thread=True)
    def check(self, data: JSONBody[CheckBody], svc: Svc, who: Who) -> CheckResponse:
        """Hold an answer written elsewhere to the gates: every reference resolved to a
        cut Fundstelle, coverage against τ; answered, partial or abstained."""
        assert svc.grounding is not None
        if (data.run_id is None) == (data.citations is None):
            raise Invalid("run_id", "give either run_id (markers [n]) or citations (quotes)")
        if data.run_id is not None:
            if data.valid_at is not None or data.known_at is not None:
                raise Invalid("valid_at", "a marker check uses its evidence run's as-of pair")
            result = svc.grounding.check_markers(who, run_id=data.run_id, answer=data.answer)
            return convert.check(result, AsOf(valid_at=result.valid_at,
                                              known_at=result.known_at))
        at = as_of(svc, who, data.valid_at, data.known_at)
        result = svc.grounding.check_quotes(
            who, answer=data.answer, valid_at=at.valid_at, known_at=at.known_at,
            citations=[QuoteRef(sentence=c.sentence, document=c.document, quote=c.quote,
                                version_id=c.version_id, start=c.start, end=c.end)
                       for c in data.citations or []])
        return convert.check(result, AsOf(valid_at=result.valid_at, known_at=result.known_at,
                                          requested_known_at=at.requested_known_at))
