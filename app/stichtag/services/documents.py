"""Use cases on documents: ingest, retract, correct, read as of, history, versions."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from stichtag.domain.asof import AsOf
from stichtag.domain.bitemporal import (
    BitemporalError,
    Current,
    Meta,
    confidentiality_level,
    plan_correct,
    plan_ingest,
    plan_retract,
)
from stichtag.domain.errors import Invalid, NotFound
from stichtag.domain.extraction import (
    DOCX,
    PDF,
    SOURCE_TYPES,
    ExtractionRefused,
    base_media_type,
    json_safe,
    original_id,
)
from stichtag.domain.prepared import MEDIA_TYPES, PreparedVersion, prepare
from stichtag.domain.records import AssertionRow, SourceUpload, VersionContent, WriteResult
from stichtag.domain.text import normalize
from stichtag.ports import Clock, DocumentStore, Extractor
from stichtag.services.access import Principal
from stichtag.services.erasure import gone_or_missing

KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
DOC_CLASS_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
MAX_TITLE = 500


def check_key(key: str) -> str:
    """Document keys are stable, URL-safe names inside a tenant."""
    if not KEY_PATTERN.match(key):
        raise Invalid("key", "1-128 characters of letters, digits, '.', '_' or '-', "
                             "starting with a letter or digit")
    return key


@dataclass(frozen=True, kw_only=True, slots=True)
class IngestRequest:
    """A version to ingest; times already parsed to aware UTC."""

    text: str | bytes
    media_type: str | None = "text/markdown"
    """Markdown or plain text as today; ``application/pdf``, ``text/html`` or DOCX are
    extracted (parameters such as ``charset`` kept for HTML); None: from the bytes."""
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    title: str | None = None
    doc_class: str = "document"
    confidentiality: str = "internal"
    tx_time: datetime | None = None
    source: str | None = None
    text_field: str = "text"
    """The request field the text came from, so errors name it (``text_base64``)."""
    password: str | None = None
    """Opens an encrypted PDF for extraction; never stored (the original is kept as is)."""
    bulk: bool = False
    """Part of a bulk load (``stichtag ingest --manifest``): readers do not wait for the
    index to apply it, unless they send a consistency token that names it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Prepared:
    """A validated version ready to write, and the original it came from (if extracted)."""

    version: PreparedVersion
    meta: Meta
    source: SourceUpload | None


@dataclass(frozen=True, kw_only=True, slots=True)
class IngestResult:
    """The version id, the assertion now in force for the range, and whether it is new."""

    version_id: str
    created: bool
    write: WriteResult
    assertion: AssertionRow | None
    n_sentences: int


def _within_clearance(current: list[Current], principal: Principal) -> list[Current]:
    """Writes fail closed: a key never changes what it may not read.

    If any currently known assertion of the document lies above the key's clearance the
    write is refused as if the document did not exist.
    """
    if any(c.meta.confidentiality > principal.clearance for c in current):
        raise NotFound("document")
    return current


class DocumentService:
    """Bitemporal document use cases for one principal at a time."""

    def __init__(self, store: DocumentStore, clock: Clock, *,
                 on_write: Callable[[UUID], None] | None = None,
                 extractor: Extractor | None = None) -> None:
        self.store = store
        self.clock = clock
        # PDF, HTML and DOCX need the extraction room; without it only text is accepted.
        self.extractor = extractor
        # Derived indexes follow the outbox; this only wakes them up sooner.
        self.on_write = on_write

    def _written(self, principal: Principal, result: WriteResult) -> WriteResult:
        if self.on_write is not None and (result.opened or result.closed):
            self.on_write(principal.tenant_id)
        return result

    def prepare(self, request: IngestRequest) -> tuple[PreparedVersion, Meta]:
        """Validate and normalize outside any transaction (CPU work, no locks held)."""
        ready = self.ready(request)
        return ready.version, ready.meta

    def ready(self, request: IngestRequest) -> Prepared:
        """``prepare`` with the original: a PDF, HTML page or DOCX is extracted here, before
        any transaction (CPU-bound, blocking); its text becomes the version."""
        if request.title is not None and len(request.title) > MAX_TITLE:
            raise Invalid("title", f"at most {MAX_TITLE} characters")
        if not DOC_CLASS_PATTERN.match(request.doc_class):
            raise Invalid("doc_class", "lowercase letters, digits, '_' or '-', at most 32")
        level = confidentiality_level(request.confidentiality)
        if (request.valid_to is not None and request.valid_from is not None
                and request.valid_to <= request.valid_from):
            raise Invalid("valid_to", "must be later than valid_from")
        meta = Meta(title=request.title, doc_class=request.doc_class, confidentiality=level)
        if request.media_type in MEDIA_TYPES:
            self._not_a_file(request, request.media_type)
            text = normalize(request.text, field=request.text_field)
            return Prepared(version=prepare(text, request.media_type), meta=meta, source=None)
        if self.extractor is None:
            raise Invalid("media_type", f"must be one of {', '.join(MEDIA_TYPES)}")
        return self._extracted(request, meta)

    def _not_a_file(self, request: IngestRequest, declared: str) -> None:
        """Declared text whose bytes are a PDF or DOCX: say so (not "invalid UTF-8")."""
        if self.extractor is None or not isinstance(request.text, bytes):
            return
        found = self.extractor.sniff(request.text)
        if found in (PDF, DOCX):
            raise Invalid("media_type", f"declared {declared}, but the bytes are {found}: "
                          f"give media_type {found}")

    def _extracted(self, request: IngestRequest, meta: Meta) -> Prepared:
        assert self.extractor is not None
        data = request.text if isinstance(request.text, bytes) else request.text.encode()
        try:
            extracted = self.extractor.extract(data, request.media_type,
                                               password=request.password)
        except ExtractionRefused as exc:
            # The room names the upload "file"; the request calls it text, text_base64, body.
            field = request.text_field if exc.field == "file" else exc.field
            raise ExtractionRefused(field, exc.reason, limit=exc.limit) from None
        version = prepare(extracted.text, extracted.media_type)
        kind = base_media_type(extracted.source_media_type)
        if kind not in SOURCE_TYPES:  # text found by sniffing: the version is the original
            return Prepared(version=version, meta=meta, source=None)
        provenance = json_safe(extracted.provenance)
        return Prepared(version=version, meta=meta, source=SourceUpload(
            original_id=original_id(data), data=data, media_type=kind,
            extractor_id=str(provenance.get("extractor_id", "")), provenance=provenance,
            layout=extracted.layout.dumps()))

    def ingest(self, principal: Principal, key: str, request: IngestRequest) -> IngestResult:
        """Assert a version for ``[valid_from, E)``; idempotent for an identical repeat."""
        principal.require("write")
        check_key(key)
        if request.tx_time is not None:
            principal.require("admin")
        ready = self.ready(request)
        version, meta = ready.version, ready.meta
        if meta.confidentiality > principal.clearance:
            raise Invalid("confidentiality", "above the clearance of this key")
        valid_from = request.valid_from or request.tx_time or self.clock.now()
        if request.valid_to is not None and request.valid_to <= valid_from:
            raise Invalid("valid_to", "must be later than valid_from")
        provenance: dict[str, Any] = {
            "kind": "imported" if request.tx_time is not None else "asserted",
            "key_id": principal.key_id,
            "source": request.source,
        }
        if ready.source is not None:
            provenance.update(original_id=ready.source.original_id,
                              source_media_type=ready.source.media_type,
                              extraction=ready.source.provenance)
        result = self.store.write(
            principal.tenant_id, document_key=key, version=version, tx_time=request.tx_time,
            provenance=provenance, source=ready.source, bulk=request.bulk,
            planner=lambda current: plan_ingest(
                _within_clearance(current, principal), version_id=version.version_id,
                meta=meta, valid_from=valid_from, valid_to=request.valid_to),
        )
        self._written(principal, result)
        assertion = result.asserted
        if assertion is None:  # idempotent repeat: report the assertion that already holds
            assertion = next((a for a in self.store.history(
                principal.tenant_id, key=key, clearance=principal.clearance)
                if a.version_id == version.version_id and a.tx_to is None
                and a.valid_from == valid_from), None)
        return IngestResult(version_id=version.version_id, created=result.created_version,
                            write=result, assertion=assertion, n_sentences=version.n_sentences)

    def retract(self, principal: Principal, key: str, *, valid_from: datetime,
                reason: str, tx_time: datetime | None = None,
                bulk: bool = False) -> WriteResult:
        """End validity from ``valid_from`` on; earlier validity is kept (``bulk``: as
        ``IngestRequest.bulk``)."""
        principal.require("write")
        if tx_time is not None:
            principal.require("admin")
        self._visible_document(principal, key)
        if not reason.strip():
            raise Invalid("reason", "a retraction needs a reason")
        return self._written(principal, self.store.write(
            principal.tenant_id, document_key=key, version=None, tx_time=tx_time,
            provenance={"kind": "retraction", "key_id": principal.key_id}, reason=reason,
            create_document=False, bulk=bulk,
            planner=lambda current: plan_retract(
                _within_clearance(current, principal), valid_from=valid_from),
        ))

    def correct(self, principal: Principal, key: str, *, assertion_id: int,
                reason: str) -> WriteResult:
        """Mark an assertion as never true: its transaction time ends, no successor."""
        principal.require("write")
        self._visible_document(principal, key)
        if not reason.strip():
            raise Invalid("reason", "a correction needs a reason")

        def planner(current: list[Any]) -> Any:
            try:
                return plan_correct(_within_clearance(current, principal),
                                    assertion_id=assertion_id)
            except BitemporalError:
                raise NotFound("assertion") from None

        return self._written(principal, self.store.write(
            principal.tenant_id, document_key=key, version=None, tx_time=None,
            provenance={"kind": "correction", "key_id": principal.key_id}, reason=reason,
            create_document=False, planner=planner))

    def _visible_document(self, principal: Principal, key: str) -> list[AssertionRow]:
        check_key(key)
        rows = self.store.history(principal.tenant_id, key=key, clearance=principal.clearance)
        if not rows:
            raise NotFound("document")
        return rows

    def get(self, principal: Principal, key: str, *, valid_at: datetime,
            known_at: datetime) -> tuple[AssertionRow, VersionContent]:
        """The version in force at ``valid_at`` as known at ``known_at``."""
        principal.require("read")
        check_key(key)
        row = self.store.assertion_asof(
            principal.tenant_id, key=key, as_of=AsOf(valid_at=valid_at, known_at=known_at),
            clearance=principal.clearance)
        if row is None:
            raise NotFound("document")
        content = self.store.version_content(principal.tenant_id, version_id=row.version_id,
                                             clearance=principal.clearance)
        if content is None:  # erased: 410 with the erasure record
            raise gone_or_missing(self.store, principal, row.version_id, "document")
        return row, content

    def history(self, principal: Principal, key: str) -> list[AssertionRow]:
        """Every assertion of the document within clearance, both time axes."""
        principal.require("read")
        return self._visible_document(principal, key)

    def version(self, principal: Principal, version_id: str) -> VersionContent:
        """An immutable version by content address (Gone when it was erased)."""
        principal.require("read")
        content = self.store.version_content(principal.tenant_id, version_id=version_id,
                                             clearance=principal.clearance)
        if content is None:
            raise gone_or_missing(self.store, principal, version_id)
        return content
