"""msgspec Structs of the public API (request and response bodies)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

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


class KeyBody(msgspec.Struct, forbid_unknown_fields=True):
    """A new API key for the caller's tenant."""

    scopes: list[str]
    clearance: str = "internal"
    label: str = ""
    expires_at: str | None = None


class KeyInfo(msgspec.Struct):
    """A key without its secret."""

    key_id: str
    scopes: list[str]
    clearance: str
    label: str
    created_at: str
    expires_at: str | None
    revoked_at: str | None
    rotated_from: str | None


class KeyCreated(msgspec.Struct):
    """A new key; ``key`` is shown this once and never stored."""

    key: str
    info: KeyInfo


class KeyList(msgspec.Struct):
    """The tenant's keys."""

    keys: list[KeyInfo]


class Health(msgspec.Struct):
    """Liveness/readiness."""

    status: Literal["ok", "unavailable"]
    checks: dict[str, str] = msgspec.field(default_factory=dict)


class SearchBody(msgspec.Struct, forbid_unknown_fields=True):
    """A search as of a Stichtag (defaults: both now)."""

    query: str
    valid_at: str | None = None
    known_at: str | None = None
    k: int = 10


class Scores(msgspec.Struct):
    """Every score a hit carried through retrieval (null = not in that list)."""

    bm25: float | None
    vector: float | None
    fused: float
    bm25_rank: int | None
    vector_rank: int | None


class SearchHit(msgspec.Struct):
    """A passage of an exact version, with offsets into that version's text."""

    document: str
    version_id: str
    assertion_id: int
    start: int
    end: int
    utf16_start: int
    utf16_end: int
    heading_path: list[str]
    text: str
    valid_from: str
    valid_to: str | None
    scores: Scores


class SearchResponse(msgspec.Struct):
    """Hits at the as-of pair used, with the run id that recorded them."""

    run_id: str
    as_of: AsOf
    hits: list[SearchHit]
    lexical_seq: int


class AnswerBody(msgspec.Struct, forbid_unknown_fields=True):
    """A question as of a Stichtag; ``generator``: extractive (default) or openai-compatible."""

    question: str
    valid_at: str | None = None
    known_at: str | None = None
    generator: str = "extractive"


class CitationBox(msgspec.Struct):
    """One line of a quote on a PDF page: PDF points, origin at the bottom-left corner of
    the page (its visible box, unrotated), y growing upwards; ``page_width`` and
    ``page_height`` are the page's size in points, to scale the box onto a page image
    (``GET /v1/versions/{id}/pages/{page}`` renders the same frame)."""

    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    page_width: float
    page_height: float


class TextQuoteSelector(msgspec.Struct, tag_field="type", tag="TextQuoteSelector"):
    """W3C Web Annotation TextQuoteSelector: the quote and up to 32 code points of text
    before and after it (fewer at the text's ends)."""

    exact: str
    prefix: str = ""
    suffix: str = ""


class TextPositionSelector(msgspec.Struct, tag_field="type", tag="TextPositionSelector"):
    """W3C Web Annotation TextPositionSelector: ``[start, end)`` in code points of the
    version's normalized text, as the W3C model counts characters. JavaScript strings
    index UTF-16 code units: use the citation's ``utf16_start``/``utf16_end`` there (each
    character above U+FFFF before a position adds one unit)."""

    start: int
    end: int


Selector = TextQuoteSelector | TextPositionSelector


class CitationOut(msgspec.Struct, omit_defaults=True):
    """A Fundstelle: ``quote == text[start:end]`` of that exact version, always.

    ``source`` (the version's content address) and ``selector`` make the citation a W3C
    Web Annotation target (a SpecificResource): a TextQuoteSelector, which finds the quote
    again when offsets drift (``POST /v1/citations/anchor``), and a TextPositionSelector.
    For a version extracted from a PDF, ``page`` (1-based, where the quote starts) and
    ``boxes`` (one per line, reading order; a quote may run onto the next page) say
    where it stands in the original; both are absent for other versions.
    """

    document: str
    version_id: str
    start: int
    end: int
    utf16_start: int
    utf16_end: int
    quote: str
    heading_path: list[str]
    valid_from: str
    valid_to: str | None
    source: str
    selector: list[Selector]
    page: int | None = None
    boxes: list[CitationBox] | None = None


class AnswerSentenceOut(msgspec.Struct):
    """One answer sentence with the citations that support it (empty = uncited)."""

    text: str
    citations: list[CitationOut]


class GateOut(msgspec.Struct):
    """A gate decision with its threshold and the observed value."""

    gate: str
    passed: bool
    threshold: float | None
    observed: float | None
    detail: str


class SourceOut(msgspec.Struct):
    """A found evidence sentence (retrieved for this run: the allow-list of citations).

    ``consulted`` is derived from what the generator did, never from its own account: an
    excerpt counts only where the answer cites it; every sentence of a document the
    generator opened in full counts. A client that does not know the flag treats it as
    true; the source line is ``AnswerResponse.source_line``."""

    id: str
    citation: CitationOut
    cited: bool
    consulted: Annotated[bool, msgspec.Meta(description=(
        "The generator read this sentence: the answer cites it, or it belongs to a "
        "document opened in full. Absent = true."))]
    score: float


class DocumentSourceOut(msgspec.Struct):
    """A document the answer links or read, in the version in force at the as-of pair.

    Only ``consulted`` documents belong in a source line: the generator read their text
    (an excerpt the answer cites, or the whole document opened through a tool). A cited
    document that was not consulted (seen only as a title, such as a list answer's
    items) keeps its clickable link in the text but gets no source chip. A client that
    does not know the flag treats it as true."""

    document: str
    version_id: str
    cited: bool
    consulted: Annotated[bool, msgspec.Meta(description=(
        "The generator read this document's text; only consulted documents form the "
        "source line. Absent = true."))] = True
    opened: bool = False
    title: str | None = None


class ListedOut(msgspec.Struct):
    """One item of a list answer: a document or one of its versions, with its valid
    range ``[valid_from, valid_to)`` (null end = open) as known at the run's known_at."""

    document: str
    version_id: str
    assertion_id: int
    title: str
    valid_from: str
    valid_to: str | None


class ListingOut(msgspec.Struct):
    """A list answer to a question about the collection itself, from the catalogue and
    the bitemporal history, not from text: ``kind`` is ``documents`` (on a topic, in
    force at valid_at) or ``versions`` (of one document, in force in ``window``)."""

    kind: str
    subject: str
    items: list[ListedOut]
    window: list[str | None] | None = None


class ConflictOut(msgspec.Struct):
    """Conflicting evidence and the declared rule that resolved it (null: none did)."""

    rule: str | None
    winner: str | None
    loser: str | None
    citations: list[CitationOut]


class AnswerResponse(msgspec.Struct):
    """An answer or a reasoned abstention.

    Sources are three sets (docs/architecture.md §7): ``sources`` holds what was found,
    ``cited`` marks what the answer links, ``consulted`` what the generator read.
    ``source_line`` lists consulted documents only; ``documents`` keeps every cited or
    consulted document with its ``consulted`` flag. A list answer (``listing``) links its
    items without consulting them: status answered, no sentence citations, empty
    source line."""

    run_id: str
    status: str
    reason: str | None
    next_step: str | None
    threshold: float | None
    observed: float | None
    sentences: list[AnswerSentenceOut]
    coverage: float | None
    gates: list[GateOut]
    gaps: list[str]
    sources: list[SourceOut]
    conflicts: list[ConflictOut]
    as_of: AsOf
    generator: str
    thresholds_version: int
    source_line: Annotated[list[str], msgspec.Meta(description=(
        "The documents this answer came from: the consulted ones only (cited excerpts, "
        "documents opened in full), best first. Empty for an abstention and for a list "
        "answer, whose items are listed, not read."))] = []
    documents: list[DocumentSourceOut] = []
    listing: ListingOut | None = None


class ResolveResponse(msgspec.Struct):
    """A citation, its context, and where it stands in the document's current version."""

    citation: CitationOut
    context_before: str
    context_after: str
    current_version_id: str | None
    status: str
    similarity: float
    current: CitationOut | None


class AnchorBody(msgspec.Struct, forbid_unknown_fields=True):
    """A W3C selector to find in the document's current version: ``source`` is the
    version it was taken from (or name the ``document``). The list needs a
    TextQuoteSelector; a TextPositionSelector only breaks ties between equal matches."""

    selector: list[Selector]
    source: str | None = None
    document: str | None = None


class AnchorResponse(msgspec.Struct):
    """Where a TextQuoteSelector stands in the document's current version.

    ``matched``: ``exact`` (its only occurrence), ``context`` (of several occurrences, the
    one its prefix and suffix surround best), ``fuzzy`` (the most similar sentence, with
    ``similarity``) or ``none`` (``current`` is then null).
    """

    document: str
    source: str | None
    current_version_id: str | None
    matched: Literal["exact", "context", "fuzzy", "none"]
    similarity: float
    occurrences: int
    current: CitationOut | None


class RunResponse(msgspec.Struct):
    """A recorded run."""

    run_id: str
    kind: str
    key_id: str
    created_at: str
    record: dict[str, Any]


class ThresholdBody(msgspec.Struct, forbid_unknown_fields=True):
    """A new threshold version; the rationale is mandatory. ``theta_scope`` absent: the
    current scope threshold is kept (the relevance model is kept too; `stichtag calibrate`
    fits a new one)."""

    theta_rel: float
    tau: float
    rationale: str
    theta_scope: float | None = None


class ThresholdOut(msgspec.Struct):
    """One threshold version (0 = built-in defaults)."""

    version: int
    theta_rel: float
    tau: float
    calibration: dict[str, Any]
    rationale: str
    set_by: str
    recorded_at: str | None
    theta_scope: float | None = None
    relevance: dict[str, Any] | None = None


class VerdictOut(msgspec.Struct):
    """A replay verdict: ``reproduced`` only when ``differences`` is empty."""

    run_id: str
    kind: str
    reproduced: bool
    differences: list[dict[str, Any]]
    notes: list[str]


class ImpactOut(msgspec.Struct):
    """Recorded answers that would now differ at their Stichtag."""

    runs: list[dict[str, Any]]


class GapsOut(msgspec.Struct):
    """Groups of similar questions that abstained with insufficient_evidence."""

    groups: list[dict[str, Any]]


class ChangeWindow(msgspec.Struct):
    """The transaction-time window of a knowledge diff: ``(known_from, known_to]``."""

    known_from: str
    known_to: str
    rule: str = "known_from < t <= known_to"


class ValidRange(msgspec.Struct):
    """A valid-time range ``[valid_from, valid_to)``; null end = open."""

    valid_from: str
    valid_to: str | None


class DiffSentenceOut(msgspec.Struct):
    """A sentence of one side of a diff, with offsets into that version's text."""

    start: int
    end: int
    utf16_start: int
    utf16_end: int
    text: str
    heading_path: list[str]


class SentenceChangeOut(msgspec.Struct):
    """``added`` (only ``new``), ``removed`` (only ``old``) or ``changed`` (both)."""

    op: str
    old: DiffSentenceOut | None
    new: DiffSentenceOut | None
    similarity: float | None


class SentenceDiffOut(msgspec.Struct):
    """Complete sentence counts and the first ``max_sentences`` changes."""

    added: int
    removed: int
    changed: int
    unchanged: int
    sentences: list[SentenceChangeOut]
    truncated: bool


class VersionPairOut(msgspec.Struct):
    """Content that changed for the listed valid ranges; a null version = nothing in force
    (``from_state``/``to_state``: ``version``, ``new_document`` or ``not_in_force``)."""

    from_version: str | None
    to_version: str | None
    from_state: str
    to_state: str
    ranges: list[ValidRange]
    assertion_ids: list[int]
    diff: SentenceDiffOut | None


class DocumentChangesOut(msgspec.Struct):
    """One document's assertions that appeared, ended or were corrected in the window."""

    document: str
    new_document: bool
    appeared: list[Assertion]
    ended: list[Assertion]
    corrected: list[Assertion]
    pairs: list[VersionPairOut]
    truncated: bool


class ChangesResponse(msgspec.Struct):
    """The knowledge diff between two transaction times (counts are never truncated)."""

    window: ChangeWindow
    document: str | None
    documents: list[DocumentChangesOut]
    counts: dict[str, int]
    truncated: bool
    limits: dict[str, Any]


class VersionDiffResponse(msgspec.Struct):
    """The sentence diff of two versions (``from_version`` → ``to_version``)."""

    from_version: str
    to_version: str
    diff: SentenceDiffOut


class FieldError(msgspec.Struct):
    """One offending input: the field (a body field, parameter or header) and why."""

    field: str
    reason: str


class Problem(msgspec.Struct, omit_defaults=True):
    """RFC 9457 problem details, the body of every error (``application/problem+json``).

    ``errors`` names each offending field (400, 409, 413, 422); ``limit`` and
    ``retry_after`` say which back-pressure limit refused the request (429, 503), next to
    the ``Retry-After`` header.
    """

    type: str
    title: str
    status: int
    detail: str
    errors: list[FieldError] | None = None
    limit: str | None = None
    retry_after: int | None = None
