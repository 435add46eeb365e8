"""Public shapes of what the run log holds: run records, log leaves and export lines.

The use cases write records as plain dicts (``services/answer_record.py``,
``services/search.py``, ``services/review.py``) because the log hashes exactly what is
stored; these Structs describe those dicts for clients and auditors' tools, and
``schemas/run-record.schema.json``, ``log-leaf`` and ``export-line`` are generated from
them (``app/stichtag/api/published.py``). They are checked against real records: every run and
every export line the integration suite fetches is validated against its schema
(``tests/conftest.py``). Records stay open (unknown keys allowed): a record gains keys
over time, and an old log must still validate against a newer schema, so only the keys
every record of a kind has always carried are required.
"""

from __future__ import annotations

from typing import Any

import msgspec


class RecordAsOf(msgspec.Struct):
    """The as-of pair the run used (RFC 3339, UTC)."""

    valid_at: str
    known_at: str


class RecordIndex(msgspec.Struct):
    """Whether the derived indexes held everything visible at the run's as-of pair
    (docs/api.md, "Index status"); absent in records written before it was kept."""

    complete: bool
    pending: int
    lexical_pending: int


class AnswerRecord(msgspec.Struct, tag_field="kind", tag="answer"):
    """The record of an answer: request, as-of pair, models, thresholds, every candidate
    with all its scores, the evidence, the gate decisions, the generator's exchanges and
    the result (docs/audit.md, "What is recorded")."""

    run_id: str
    tenant: str
    key_id: str
    clearance: int
    request: dict[str, Any]
    as_of: RecordAsOf
    candidates: list[dict[str, Any]]
    evidence: list[dict[str, Any]]
    gates: list[dict[str, Any]]
    result: dict[str, Any]
    segmenter_id: str | None = None
    lexical_seq: int | None = None
    models: dict[str, Any] | None = None
    thresholds: dict[str, Any] | None = None
    salience: dict[str, Any] | None = None
    relevance: dict[str, Any] | None = None
    sentence_scores: dict[str, Any] | None = None
    """How the evidence sentences were scored: rule id, model hash, cosines (absent in
    runs recorded before; docs/evaluation.md, "Choosing the answer sentence")."""
    generator: dict[str, Any] | None = None
    timings_ms: dict[str, Any] | None = None
    index: RecordIndex | None = None


class SearchRecord(msgspec.Struct, tag_field="kind", tag="search"):
    """The record of a search: request, as-of pair and every hit with its scores."""

    run_id: str
    tenant: str
    key_id: str
    clearance: int
    request: dict[str, Any]
    as_of: RecordAsOf
    candidates: list[dict[str, Any]]
    segmenter_id: str | None = None
    analyzer_id: str | None = None
    rrf_k: int | None = None
    lexical_seq: int | None = None
    embedding_model: str | None = None
    timings_ms: dict[str, Any] | None = None
    index: RecordIndex | None = None


class ReviewSampleRecord(msgspec.Struct, tag_field="kind", tag="review_sample"):
    """A drawn review sample: its spec, population and the SHA-256 of its item keys
    (the items themselves are rows beside the log, fixed by this hash)."""

    run_id: str
    tenant: str
    key_id: str
    clearance: int
    seed: int
    strata: list[str]
    n_per_stratum: int
    filters: dict[str, str | None]
    population: dict[str, int]
    items: int
    items_sha256: str


class ReviewedPair(msgspec.Struct):
    """The answer sentence and citation a verdict judges."""

    run_id: str
    sentence: int
    citation: int
    document: str
    version_id: str
    start: int
    end: int


class ReviewVerdictRecord(msgspec.Struct, tag_field="kind", tag="review_verdict"):
    """A reviewer's verdict on one sample item, and the pair it judged."""

    run_id: str
    tenant: str
    key_id: str
    clearance: int
    sample_id: str
    item: int
    verdict: str
    note: str | None
    reviewer: str
    supersedes: str | None
    reviewed: ReviewedPair


class ErasureRecord(msgspec.Struct, tag_field="kind", tag="erasure"):
    """A GDPR erasure of a version (docs/operations.md, "GDPR erasure"): what was erased,
    by which key, when and why, and what stays (its id is the content hash). ``reapplies``
    names the recorded erasure a restore re-applied."""

    run_id: str
    tenant: str
    key_id: str
    version_id: str
    content_hash: str
    documents: list[str]
    assertion_ids: list[int]
    reason: str
    erased_at: str
    kept: list[str]
    reapplies: dict[str, Any] | None = None


class CompareSide(msgspec.Struct):
    """One side of a compare record: the answer run it made, at which pair, its outcome
    and what it cited per document (version and ``[start, end)`` spans, no text)."""

    run_id: str
    as_of: RecordAsOf
    status: str
    reason: str | None
    cited: list[dict[str, Any]]


class CompareRecord(msgspec.Struct, tag_field="kind", tag="compare", kw_only=True):
    """A compared answer (docs/audit.md, "Compared answers"): the two answer runs it
    references, the per-document changes with their causes, and the summary line."""

    run_id: str
    tenant: str
    key_id: str
    clearance: int
    request: dict[str, Any]
    from_: CompareSide = msgspec.field(name="from")
    to: CompareSide
    changes: list[dict[str, Any]]
    summary: str | None = None
    segmenter_id: str | None = None


class EvidenceRecord(msgspec.Struct, tag_field="kind", tag="evidence"):
    """The record of an evidence run (``POST /v1/answer/evidence``): request, as-of pair,
    models, thresholds, candidates with their scores, the numbered evidence (places, no
    text), the gate decisions and the status (docs/assistants.md)."""

    run_id: str
    tenant: str
    key_id: str
    clearance: int
    request: dict[str, Any]
    as_of: RecordAsOf
    candidates: list[dict[str, Any]]
    evidence: list[dict[str, Any]]
    gates: list[dict[str, Any]]
    result: dict[str, Any]
    segmenter_id: str | None = None
    lexical_seq: int | None = None
    models: dict[str, Any] | None = None
    thresholds: dict[str, Any] | None = None
    provenance: dict[str, Any] | None = None
    timings_ms: dict[str, Any] | None = None


class CheckRecord(msgspec.Struct, tag_field="kind", tag="check"):
    """The record of a grounding check (``POST /v1/answer/check``): the request as sent,
    the evidence run it cites (marker mode), every reference as resolved, the gates and
    the verdict; replay checks the request again (docs/assistants.md)."""

    run_id: str
    tenant: str
    key_id: str
    clearance: int
    request: dict[str, Any]
    as_of: RecordAsOf
    references: list[dict[str, Any]]
    gates: list[dict[str, Any]]
    result: dict[str, Any]
    evidence_run: str | None = None
    segmenter_id: str | None = None
    thresholds: dict[str, Any] | None = None
    provenance: dict[str, Any] | None = None
    timings_ms: dict[str, Any] | None = None


RunRecord = (AnswerRecord | SearchRecord | ReviewSampleRecord | ReviewVerdictRecord
             | ErasureRecord | EvidenceRecord | CheckRecord | CompareRecord)
"""A run record, told apart by ``kind``."""


class LogLeaf(msgspec.Struct, forbid_unknown_fields=True):
    """One leaf of a tenant's log: its sequence number and the record. The leaf hash is
    SHA-256(0x00 || RFC 8785 canonical JSON of ``record``) (RFC 9162); ``texts`` lie
    outside it."""

    seq: int
    record: RunRecord
    texts: dict[str, dict[str, str]] = {}
    """In an export: commitment hex -> ``{"salt": hex, "text"}``, opening the record's
    sealed texts still held; an erased one is absent (docs/audit.md, "Sealed texts")."""


class ExportHeader(msgspec.Struct, forbid_unknown_fields=True):
    """The first line of an export: format, tenant and the log's origin line."""

    format: str
    tenant: str
    origin: str


class ExportCheckpoint(msgspec.Struct, forbid_unknown_fields=True):
    """The last line of an export: the signed checkpoint of exactly the exported leaves."""

    checkpoint: str
