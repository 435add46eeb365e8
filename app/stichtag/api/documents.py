"""Thin controllers for documents and versions: Struct in, one service call, Struct out."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody, QueryParameter, RawBody

from stichtag.api import convert
from stichtag.api.deps import Svc, Who, as_of, optional_time
from stichtag.api.schemas import (
    CorrectBody,
    DocumentResponse,
    EraseBody,
    ErasureOut,
    HistoryResponse,
    IngestResponse,
    RetractBody,
    VersionResponse,
    WriteResponse,
)
from stichtag.api.uploads import PASSWORD_HEADER, UploadFields, ingest_request
from stichtag.domain.records import OriginalFile, WriteResult
from stichtag.domain.timeutil import parse_time
from stichtag.services.sources import DEFAULT_PIXELS

_RAW = "raw upload only: "
RawField = Annotated[str | None, QueryParameter(description=_RAW + "the field of the same "
                                                "name in the JSON body")]
RawTime = Annotated[str | None, QueryParameter(description=_RAW + "RFC 3339 or YYYY-MM-DD "
                                               "(tenant zone)")]
Bulk = Annotated[bool, QueryParameter(description=(
    "Part of a bulk load (any body form): searches and answers do not wait for the index "
    "to apply this write; they answer from what is applied and record that position. A "
    "reader that must see it sends this response's Stichtag-Consistency header back. "
    "Default false: every reader waits for the write (read-your-writes)."))]
# Files from tenants: never rendered as a page of this origin (an HTML original could
# script the console), always downloaded, never sniffed into another type.
_FILE_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "private, no-cache",
                 "Content-Security-Policy": "sandbox; default-src 'none'"}
_EXTENSIONS = {"application/pdf": "pdf", "text/html": "html",
               "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx"}


def _write(result: WriteResult) -> WriteResponse:
    return WriteResponse(tx_time=convert.iso(result.tx_time), closed=list(result.closed),
                         opened=list(result.opened))


class DocumentController(Controller):
    """Bitemporal documents."""

    path = "/v1/documents"
    tags = ("documents",)

    @post("/{key:str}/versions", operation_id="ingestVersion", status_code=201, sync_to_thread=True)
    def ingest(self, *, key: FromPath[str], request: Request[Any, Any, Any], body: RawBody,
               svc: Svc, who: Who, valid_from: RawTime = None, valid_to: RawTime = None,
               title: RawField = None, doc_class: RawField = None,
               confidentiality: RawField = None, tx_time: RawTime = None,
               source: RawField = None, bulk: Bulk = False,
               password: Annotated[str | None, HeaderParameter(
                   name=PASSWORD_HEADER, description="Opens an encrypted PDF (raw upload; "
                   "the JSON form has the field password); never stored")] = None,
               ) -> Response[IngestResponse]:
        """Ingest a version of document ``key`` for its valid range (idempotent).

        The body is either an IngestBody (JSON) or the file itself (PDF, HTML, DOCX,
        markdown, plain text) with its Content-Type and the fields as query parameters.
        """
        request_ = ingest_request(who, body, request.headers.get("content-type"), UploadFields(
            valid_from=valid_from, valid_to=valid_to, title=title, doc_class=doc_class,
            confidentiality=confidentiality, tx_time=tx_time, source=source,
            password=password))
        result = svc.documents.ingest(who, key, replace(request_, bulk=bulk))
        out = IngestResponse(
            version_id=result.version_id, created=result.created,
            asserted=result.write.asserted is not None, tx_time=convert.iso(result.write.tx_time),
            assertion=convert.assertion(result.assertion) if result.assertion else None,
            closed=list(result.write.closed), opened=list(result.write.opened))
        return Response(out, status_code=201 if out.asserted else 200)

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
                who: Who, bulk: Bulk = False) -> WriteResponse:
        """End the document's validity from ``valid_from`` on."""
        result = svc.documents.retract(
            who, key, valid_from=parse_time(data.valid_from, field="valid_from",
                                            tz=who.time_zone),
            reason=data.reason, tx_time=optional_time(who, data.tx_time, field="tx_time"),
            bulk=bulk)
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
        src = svc.sources.describe(who, [version_id]).get(version_id)
        return VersionResponse(
            version_id=v.version_id, media_type=v.media_type, segmenter_id=v.segmenter_id,
            length=v.len_cp, utf16_length=v.len_u16, text=content.text,
            sentences=[convert.sentence(s) for s in content.sentences],
            source=convert.version_source(src) if src is not None else None)

    @post("/{version_id:str}/erase", operation_id="eraseVersion", status_code=201,
          sync_to_thread=True)
    def erase(self, version_id: FromPath[str], data: JSONBody[EraseBody], svc: Svc,
              who: Who) -> Response[ErasureOut]:
        """Erase the version's text, sentences, passages, vectors, index entries and
        original files (GDPR Art. 17; scope admin). Its id, hashes, assertions and run
        records stay, and the erasure is appended to the run log, so proofs and replays
        stay verifiable; reads of it answer 410 with this record. 200 with the first
        erasure when it was erased before."""
        result = svc.erasures.erase(who, version_id, reason=data.reason)
        out = ErasureOut(erasure=convert.erasure(result.erasure), erased=result.created,
                         documents=list(result.documents),
                         assertion_ids=list(result.assertion_ids), blanked=result.blanked)
        return Response(out, status_code=201 if result.created else 200)

    @get("/{version_id:str}/original", operation_id="getVersionOriginal", sync_to_thread=True,
         media_type="application/octet-stream")
    def original(self, version_id: FromPath[str], svc: Svc, who: Who,
                 original_id: Annotated[str | None, QueryParameter(
                     description="one of the version's originals (an assertion's provenance "
                     "names its own); default: the first stored")] = None) -> Response[bytes]:
        """The file the version was extracted from, byte for byte as uploaded (a download:
        same clearance and tenancy as the version's text; 404 for text versions)."""
        return _file(svc.sources.original(who, version_id, original_id=original_id))

    @get("/{version_id:str}/pages/{page:int}", operation_id="getVersionPage",
         sync_to_thread=True, media_type="image/png")
    def page(self, version_id: FromPath[str], page: FromPath[int], svc: Svc, who: Who,
             pixels: Annotated[int, QueryParameter(
                 description="longer side of the image in pixels (200-2400)")] = DEFAULT_PIXELS,
             ) -> Response[bytes]:
        """Page ``page`` (1-based) of a PDF original as a PNG, unrotated: the frame of the
        citations' boxes (PDF points from the page's bottom-left corner)."""
        png = svc.sources.page_png(who, version_id, page, max_pixels=pixels)
        return Response(png, media_type="image/png", headers={
            "X-Content-Type-Options": "nosniff", "Cache-Control": "private, max-age=3600"})


def _file(original: OriginalFile) -> Response[bytes]:
    name = original.original_id.removeprefix("b3:")[:16]
    ext = _EXTENSIONS.get(original.media_type, "bin")
    return Response(original.data, media_type=original.media_type, headers={
        **_FILE_HEADERS, "Content-Disposition": f'attachment; filename="{name}.{ext}"',
        "ETag": f'"{original.original_id}"'})
