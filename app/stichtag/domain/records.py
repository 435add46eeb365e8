"""What the store returns: frozen, keyword-only dataclasses at the store boundary.

The store adapters build them from rows; the use cases and the API read them. They carry
no behaviour and import nothing but the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID


@dataclass(frozen=True, kw_only=True, slots=True)
class TenantRow:
    tenant_id: UUID
    name: str
    time_zone: str
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class KeyRow:
    key_id: str
    tenant_id: UUID
    secret_hash: bytes
    scopes: list[str]
    clearance: int
    label: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    rotated_from: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class KeyRate:
    """A per-key rate limit as the store charges it: one request per ``interval`` seconds,
    ``burst`` of them at once (a token bucket of ``burst`` tokens refilled at 1/interval)."""

    interval: float
    burst: int

    @property
    def tolerance(self) -> float:
        """How far ahead of now a key's next slot may lie and still be admitted (seconds)."""
        return (self.burst - 1) * self.interval


@dataclass(frozen=True, kw_only=True, slots=True)
class KeyCheck:
    """A presented key id as authentication found it: the row, its tenant's time zone,
    whether the caller's check admitted it, and the seconds to wait under its rate
    (0.0 = admitted; only an admitted key is charged)."""

    row: KeyRow
    time_zone: str
    admitted: bool
    wait: float = 0.0


@dataclass(frozen=True, kw_only=True, slots=True)
class AssertionRow:
    assertion_id: int
    document: str
    version_id: str
    valid_from: datetime
    valid_to: datetime | None
    tx_from: datetime
    tx_to: datetime | None
    title: str | None
    doc_class: str
    confidentiality: int
    provenance: dict[str, Any]
    ended: str | None
    ended_reason: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class VersionRow:
    version_id: str
    media_type: str
    segmenter_id: str
    len_cp: int
    len_u16: int
    n_sentences: int
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class SentenceRow:
    """One sentence of a version with absolute offsets, hash and heading path."""

    ordinal: int
    start: int
    end: int
    utf16_start: int
    utf16_end: int
    hash: bytes
    heading_path: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class VersionContent:
    """A version's text reassembled from its blocks, with all sentences."""

    version: VersionRow
    text: str
    sentences: tuple[SentenceRow, ...]

    @property
    def version_id(self) -> str:
        """The content address."""
        return self.version.version_id

    def slice(self, start: int, end: int) -> str:
        """The text between two code-point offsets, clamped to [0, length] as
        ``VersionExcerpt.slice``: a context window before the first sentence starts at 0
        (a negative index must never wrap around to the end of the text)."""
        return self.text[max(0, start):max(0, end)]


@dataclass(frozen=True, kw_only=True, slots=True)
class VersionExcerpt:
    """The blocks of a version around some windows: their text and sentences only.

    What an answer's evidence needs of a version (the sentences of its passages and 32
    code points around each), read without assembling the whole version. Offsets are the
    version's own (absolute), so whatever is cut from an excerpt equals the same cut from
    the full ``VersionContent``; a cut outside the blocks read is an error, never a guess.
    """

    version_id: str
    length: int
    """The whole version's length in code points (a cut past it ends there, as str's)."""
    pieces: tuple[tuple[int, str], ...]
    """(absolute start, text) of each run of consecutive blocks read, in order."""
    sentences: tuple[SentenceRow, ...]
    """The sentences of the blocks read, in order."""

    def slice(self, start: int, end: int) -> str:
        """The version's text between two code-point offsets, clamped to [0, length]."""
        start, end = max(0, start), min(end, self.length)
        if start >= end:
            return ""
        out: list[str] = []
        at = start
        for p_start, text in self.pieces:
            p_end = p_start + len(text)
            if p_end <= at:
                continue
            if p_start > at:
                break
            out.append(text[at - p_start:min(end, p_end) - p_start])
            at = min(end, p_end)
            if at >= end:
                return "".join(out)
        raise ValueError(f"excerpt of {self.version_id} does not cover [{at}, {end})")


VersionText = VersionContent | VersionExcerpt
"""A version's text as the answer pipeline reads it: all of it, or the blocks it needs."""


@dataclass(frozen=True, kw_only=True, slots=True)
class WriteResult:
    """What a write did: the new asserted row (if any), closed ids and the tx time."""

    tx_time: datetime
    created_version: bool
    opened: tuple[int, ...]
    closed: tuple[int, ...]
    asserted: AssertionRow | None


@dataclass(frozen=True, kw_only=True, slots=True)
class RunRow:
    """A recorded run (search, answer, review record) of the tenant's log.

    ``record`` is what readers use: the logged record with its sealed texts put back
    (an erased one as the marker of ``domain.sealing``). ``sealed`` is the record exactly
    as the leaf hashes it (None: the same as ``record``) and ``openings`` the salts and
    texts still held for it (docs/audit.md, "Sealed texts")."""

    run_id: UUID
    kind: str
    key_id: str
    created_at: datetime
    record: dict[str, Any]
    sealed: dict[str, Any] | None = None
    openings: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class LogHead:
    """The head of a tenant's Merkle log: size, root, compact-range frontier, checkpoint."""

    size: int
    root: bytes
    frontier: list[bytes]
    checkpoint: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ThresholdRow:
    """A stored threshold version (the calibration as stored JSON)."""

    version: int
    theta_rel: float
    tau: float
    calibration: dict[str, Any]
    rationale: str
    set_by: str
    recorded_at: datetime
    theta_scope: float | None = None
    relevance: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexStatus:
    """How far a tenant's derived indexes are behind PostgreSQL."""

    outbox_seq: int
    lexical_seq: int
    pending_embeddings: int


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexBacklog:
    """What the derived indexes still lack for one read at one as-of pair: the tenant's
    outbox head (the lexical index may not have applied it yet) and how many passages
    visible at the pair have no vector yet (docs/architecture.md, "The two data flows")."""

    outbox_head: int
    unembedded: int


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexState:
    """``index`` of a search or answer: ``complete`` when every passage visible at its
    as-of pair was embedded and the lexical index had applied the outbox head; ``pending``
    passages visible but not embedded, ``lexical_pending`` outbox rows not applied."""

    complete: bool
    pending: int
    lexical_pending: int

    @classmethod
    def of(cls, backlog: IndexBacklog, *, lexical_seq: int) -> IndexState:
        """The state of a read whose lexical index stood at ``lexical_seq``."""
        lexical = max(0, backlog.outbox_head - lexical_seq)
        return cls(complete=backlog.unembedded == 0 and lexical == 0,
                   pending=backlog.unembedded, lexical_pending=lexical)

    def record(self) -> dict[str, int | bool]:
        """The run record's ``index`` (and the response's)."""
        return {"complete": self.complete, "pending": self.pending,
                "lexical_pending": self.lexical_pending}


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceUpload:
    """An original document to keep beside the version extracted from it (one write).

    ``original_id`` is ``b3:`` + blake3 of ``data`` (the bytes exactly as uploaded);
    ``provenance`` is the extraction's (extractor id, libraries, pages, empty pages, …),
    JSON-ready; ``layout`` is the serialized layout map (``Layout.dumps()``).
    """

    original_id: str
    data: bytes
    media_type: str
    extractor_id: str
    provenance: dict[str, Any]
    layout: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class VersionSource:
    """Which original a version was extracted from, by which extractor (no bytes).

    A version whose text came from several originals (the same text typeset twice) has
    one row per original; reads use the first stored (``created_at``, then id).
    """

    version_id: str
    original_id: str
    media_type: str
    size: int
    extractor_id: str
    provenance: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class OriginalFile:
    """The bytes of an original document exactly as uploaded, with its media type."""

    original_id: str
    media_type: str
    data: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class Erasure:
    """A version's erasure (GDPR Art. 17): who, when, why, and its run-log leaf. The
    version id is the content hash of the erased text, kept so proofs stay verifiable."""

    version_id: str
    run_id: UUID
    seq: int
    key_id: str
    reason: str
    erased_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class ErasureTarget:
    """What an erasure touches: the version's assertions (kept) and their documents."""

    version_id: str
    assertion_ids: tuple[int, ...]
    documents: tuple[str, ...]
    erased: bool
