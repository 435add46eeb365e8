"""Thin controllers for documents and versions: Struct in, one service call, Struct out."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, get, post
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter

from app.api import convert
from app.api.deps import Svc, Who, as_of, optional_time
from app.api.schemas import (
    CorrectBody,
    DocumentResponse,
    HistoryResponse,
    IngestBody,
    IngestResponse,
    RetractBody,
    VersionResponse,
    WriteResponse,
)
from app.domain.records import WriteResult
from app.domain.timeutil import parse_time
from app.services.documents import IngestRequest


def _write(result: WriteResult) -> WriteResponse:
    return WriteResponse(tx_time=convert.iso(result.tx_time), closed=list(result.closed),
                         opened=list(result.opened))


class DocumentController(Controller):
    """Bitemporal documents."""

    path = "/v1/documents"
    tags = ("documents",)

    @post("/{key:str}/versions", operation_id="ingestVersion", status_code=201, sync_to_thread=True)
    def ingest(self, key: FromPath[str], data: JSONBody[IngestBody], svc: Svc,
               who: Who) -> Response[IngestResponse]:
        """Ingest a version of document ``key`` for its valid range (idempotent)."""
        request = IngestRequest(
            text=convert.body_text(data.text, data.text_base64), media_type=data.media_type,
            valid_from=optional_time(who, data.valid_from, field="valid_from"),
            valid_to=optional_time(who, data.valid_to, field="valid_to"),
            title=data.title, doc_class=data.doc_class, confidentiality=data.confidentiality,
            tx_time=optional_time(who, data.tx_time, field="tx_time"),
            source=data.source,
            text_field="text" if data.text is not None else "text_base64")
        result = svc.documents.ingest(who, key, request)
        body = IngestResponse(
            version_id=result.version_id, created=result.created,
            asserted=result.write.asserted is not None, tx_time=convert.iso(result.write.tx_time),
            assertion=convert.assertion(result.assertion) if result.assertion else None,
            closed=list(result.write.closed), opened=list(result.write.opened))
        return Response(body, status_code=201 if body.asserted else 200)

    @get("/{key:str}", operation_id="getDocumentAsOf", sync_to_thread=True)
    def get_as_of(
        self, key: FromPath[str], svc: Svc, who: Who, *,
        valid_at: Annotated[str | None, QueryParameter(
            description="RFC 3339 or YYYY-MM-DD; default now")] = None,
        known_at: Annotated[str | None, QueryParameter(
            description="RFC 3339 or YYYY-MM-DD; default now")] = None,
        include_sentences: FromQuery[bool] = False,
    ) -> DocumentResponse:
        """The version in force at ``valid_at`` as known at ``known_at``."""
        at = as_of(svc, who, valid_at, known_at)
        row, content = svc.documents.get(who, key, valid_at=at.valid_at, known_at=at.known_at)
        return DocumentResponse(
            document=key, version_id=row.version_id, as_of=convert.as_of(at),
            assertion=convert.assertion(row), media_type=content.version.media_type,
            segmenter_id=content.version.segmenter_id, text=content.text,
            sentences=([convert.sentence(s) for s in content.sentences] if include_sentences
                       else None))

    @get("/{key:str}/history", operation_id="getDocumentHistory", sync_to_thread=True)
    def history(self, key: FromPath[str], svc: Svc, who: Who) -> HistoryResponse:
        """Every assertion of the document on both time axes, with provenance."""
        rows = svc.documents.history(who, key)
        return HistoryResponse(document=key, assertions=[convert.assertion(r) for r in rows])

    @post("/{key:str}/retract", operation_id="retractDocument", status_code=200,
          sync_to_thread=True)
    def retract(self, key: FromPath[str], data: JSONBody[RetractBody], svc: Svc,
                who: Who) -> WriteResponse:
        """End the document's validity from ``valid_from`` on."""
        result = svc.documents.retract(
            who, key, valid_from=parse_time(data.valid_from, field="valid_from",
                                            tz=who.time_zone),
            reason=data.reason, tx_time=optional_time(who, data.tx_time, field="tx_time"))
        return _write(result)

    @post("/{key:str}/corrections", operation_id="correctAssertion", status_code=200,
          sync_to_thread=True)
    def correct(self, key: FromPath[str], data: JSONBody[CorrectBody], svc: Svc,
                who: Who) -> WriteResponse:
        """Declare an assertion never true (its transaction time ends, no successor)."""
        return _write(svc.documents.correct(who, key, assertion_id=data.assertion_id,
                                            reason=data.reason))


class VersionController(Controller):
    """Immutable, content-addressed versions."""

    path = "/v1/versions"
    tags = ("documents",)

    @get("/{version_id:str}", operation_id="getVersion", sync_to_thread=True)
    def get_version(self, version_id: FromPath[str], svc: Svc, who: Who) -> VersionResponse:
        """A version by its ``b3:`` content address, with its sentences."""
        content = svc.documents.version(who, version_id)
        v = content.version
        return VersionResponse(
            version_id=v.version_id, media_type=v.media_type, segmenter_id=v.segmenter_id,
            length=v.len_cp, utf16_length=v.len_u16, text=content.text,
            sentences=[convert.sentence(s) for s in content.sentences])
