"""Request and response bodies of documents, versions and their history."""

from __future__ import annotations

from typing import Any

import msgspec


class IngestBody(msgspec.Struct, forbid_unknown_fields=True):
    """A version to ingest. Times: RFC 3339 with offset, or YYYY-MM-DD (tenant zone).

    ``media_type`` ``application/pdf``, ``text/html`` or DOCX with the file in
    ``text_base64`` is extracted (``password`` opens an encrypted PDF and is never
    stored); the version is the extracted text, the file is kept as its original.
    """

    text: str | None = None
    text_base64: str | None = None
    media_type: str = "text/markdown"
    valid_from: str | None = None
    valid_to: str | None = None
    title: str | None = None
    doc_class: str = "document"
    confidentiality: str = "internal"
    tx_time: str | None = None
    source: str | None = None
    password: str | None = None


class RetractBody(msgspec.Struct, forbid_unknown_fields=True):
    """End validity from ``valid_from`` on, with a reason."""

    valid_from: str
    reason: str
    tx_time: str | None = None


class CorrectBody(msgspec.Struct, forbid_unknown_fields=True):
    """Declare an assertion never true."""

    assertion_id: int
    reason: str


class Assertion(msgspec.Struct):
    """One bitemporal row: both ranges (null end = open) and provenance."""

    assertion_id: int
    document: str
    version_id: str
    valid_from: str
    valid_to: str | None
    tx_from: str
    tx_to: str | None
    title: str | None
    doc_class: str
    confidentiality: str
    provenance: dict[str, Any]
    ended: str | None
    ended_reason: str | None


class IngestResponse(msgspec.Struct):
    """Result of an ingest: the content address and the assertion in force for the range."""

    version_id: str
    created: bool
    asserted: bool
    tx_time: str
    assertion: Assertion | None
    closed: list[int]
    opened: list[int]


class WriteResponse(msgspec.Struct):
    """Result of a retraction or correction."""

    tx_time: str
    closed: list[int]
    opened: list[int]


class AsOf(msgspec.Struct):
    """The as-of pair a read used; every read answers with it."""

    valid_at: str
    known_at: str
    known_at_requested: str | None = None
    """Set when the request asked for a ``known_at`` after the server's now: that is what
    it asked for, and ``known_at`` is the now it was read as (no answer claims a future
    state of knowledge)."""


class Sentence(msgspec.Struct):
    """A sentence of a version: code-point and UTF-16 offsets, hash, heading path."""

    start: int
    end: int
    utf16_start: int
    utf16_end: int
    hash: str
    heading_path: list[str]


class DocumentResponse(msgspec.Struct):
    """The version of a document in force at the as-of pair."""

    document: str
    version_id: str
    as_of: AsOf
    assertion: Assertion
    media_type: str
    segmenter_id: str
    text: str
    sentences: list[Sentence] | None = None


class HistoryResponse(msgspec.Struct):
    """Every assertion of a document (within clearance)."""

    document: str
    assertions: list[Assertion]


class VersionSourceOut(msgspec.Struct):
    """The file a version was extracted from (``GET /v1/versions/{id}/original``)."""

    original_id: str
    media_type: str
    size: int
    extractor_id: str
    pages: int | None
    empty_pages: list[int]
    provenance: dict[str, Any]


class VersionResponse(msgspec.Struct, omit_defaults=True):
    """An immutable version by content address; ``source`` only for a version extracted
    from a PDF, HTML page or DOCX."""

    version_id: str
    media_type: str
    segmenter_id: str
    length: int
    utf16_length: int
    text: str
    sentences: list[Sentence]
    source: VersionSourceOut | None = None


class EraseBody(msgspec.Struct, forbid_unknown_fields=True):
    """Erase a version (GDPR Art. 17); the reason is kept in the run log verbatim, so it
    names the request (a ticket number), never the person."""

    reason: str


class ErasureRecordOut(msgspec.Struct):
    """An erasure: who (the key), when, why, and the log leaf that records it. The
    version id is the blake3 content hash of the erased text, kept for proofs."""

    version_id: str
    content_hash: str
    erased_at: str
    erased_by: str
    reason: str
    log_seq: int
    run_id: str


class ErasureOut(msgspec.Struct):
    """The result of an erasure: ``erased`` is false when it had been erased before (the
    first erasure is returned, nothing changed). ``blanked`` counts the stored blocks,
    heading paths, passages and originals blanked now (content other versions still use
    is kept with them) and ``run_texts``, the quotes deleted from recorded runs."""

    erasure: ErasureRecordOut
    erased: bool
    documents: list[str]
    assertion_ids: list[int]
    blanked: dict[str, int]
