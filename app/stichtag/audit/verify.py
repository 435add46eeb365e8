"""The offline verifier of a run-log export (the format: :mod:`stichtag.audit.export`).

The verifier recomputes everything it can instead of trusting it: each leaf is
``leaf_hash(canonicalize(record))``, the leaf index is the record's position (``seq`` must
agree and run 0, 1, 2, ... without gaps), the size is the count of records and the root
is recomputed and compared with the signed checkpoint. An older checkpoint (kept by an
auditor from an earlier export) must describe a prefix of this log, which catches a
rewritten history even when the current checkpoint was re-signed with a stolen key.

A line that is not in canonical form but commits to the same record is reported as a
notice, not as a problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from stichtag.audit.export import (
    CHECKPOINT_KEYS,
    EXPORT_FORMAT,
    HEADER_KEYS,
    ExportLineError,
    decode_line,
    load_object,
    parse_record_line,
)
from stichtag.audit.signing import verify_checkpoint
from stichtag.domain.canonical_json import CanonicalJSONError, canonicalize
from stichtag.domain.checkpoint import Checkpoint, CheckpointError
from stichtag.domain.merkle import (
    EMPTY_ROOT,
    CompactRange,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)
from stichtag.domain.sealing import check_openings, inline_texts, placeholders


@dataclass(frozen=True, kw_only=True)
class Problem:
    """Something that makes the export fail verification (or, as a notice, worth a look)."""

    line: int | None
    """1-based line number in the export; None for a problem with the arguments."""
    message: str


@dataclass(frozen=True, kw_only=True)
class VerifyReport:
    """Outcome of ``verify_export``: ``ok`` only when ``problems`` is empty."""

    problems: tuple[Problem, ...]
    notices: tuple[Problem, ...]
    tenant: str | None
    """From the header; bound to the signed origin by the ``<prefix>/<tenant>`` rule."""
    origin: str | None
    """The signed checkpoint's origin (the header's when no checkpoint verified)."""
    record_count: int
    """Lines in record position, readable or not."""
    root: bytes
    """Root recomputed from the readable records."""
    checkpoint: Checkpoint | None = field(default=None)
    """The checkpoint, only when its signature verified."""
    sealed_texts: int = 0
    """Sealed texts the records hold (docs/audit.md, "Sealed texts")."""
    opened_texts: int = 0
    """Of them, those the export opens (salt and text given, checked); the rest were
    erased."""
    inline_text_records: int = 0
    """Records that hold version text inside their leaf (written before sealing): an
    erasure cannot remove that text from the log."""

    @property
    def ok(self) -> bool:
        """True iff no problem was found."""
        return not self.problems


class _Verifier:
    """State of one pass over an export; see ``verify_export``."""

    def __init__(self, public_key: Ed25519PublicKey, older: Checkpoint | None) -> None:
        self.public_key = public_key
        self.older = older
        self.problems: list[Problem] = []
        self.notices: list[Problem] = []
        self.tenant: str | None = None
        self.header_origin: str | None = None
        self.checkpoint: Checkpoint | None = None
        self.checkpoint_line: int | None = None
        self.tree = CompactRange()
        self.prefix_root: bytes | None = (
            EMPTY_ROOT if older is not None and older.size == 0 else None
        )
        self.record_lines = 0
        self.unreadable = 0
        self.sealed = self.opened = self.inline = 0
        self.expected_seq = 0

    def problem(self, line: int | None, message: str) -> None:
        self.problems.append(Problem(line=line, message=message))

    def notice(self, line: int, message: str) -> None:
        self.notices.append(Problem(line=line, message=message))

    def header(self, n: int, obj: Mapping[str, object], text: str) -> None:
        if set(obj) != HEADER_KEYS:
            self.problem(n, f"header must have exactly {sorted(HEADER_KEYS)}, got {sorted(obj)}")
            return
        if obj["format"] != EXPORT_FORMAT:
            self.problem(n, f"unknown export format {obj['format']!r}, expected {EXPORT_FORMAT!r}")
        tenant, origin = obj["tenant"], obj["origin"]
        if not isinstance(tenant, str) or not tenant or not isinstance(origin, str) or not origin:
            self.problem(n, "header tenant and origin must be non-empty strings")
            return
        self.tenant, self.header_origin = tenant, origin
        self._note_canonical(n, obj, text)

    def record(self, n: int, text: str) -> None:
        self.record_lines += 1
        if self.checkpoint_line is not None:
            self.problem(n, "record after the checkpoint line")
        try:
            rec = parse_record_line(text)
        except ExportLineError as exc:
            self.problem(n, f"unreadable record line: {exc}")
            self.unreadable += 1
            self.expected_seq += 1  # assume it held the next position, to avoid a cascade
            return
        if rec.seq != self.expected_seq:
            self.problem(
                n, f"seq {rec.seq} where {self.expected_seq} was expected (gap, reorder or insert)"
            )
        self.expected_seq = rec.seq + 1
        if not rec.canonical_line:
            self.notice(n, "line is not in canonical form; the record content is unchanged")
        self._texts(n, rec.record, rec.texts)
        self.tree.append(rec.leaf)
        if self.older is not None and self.tree.size == self.older.size:
            self.prefix_root = self.tree.root()

    def _texts(self, n: int, record: dict[str, object], texts: Mapping[str, object]) -> None:
        """Each opening must give its commitment; a missing one is an erased text (not a
        problem: the leaf commits to the commitment, not to the text)."""
        for message in check_openings(record, texts):
            self.problem(n, message)
        self.sealed += len(placeholders(record))
        self.opened += len(texts)
        self.inline += inline_texts(dict(record)) > 0

    def checkpoint_entry(self, n: int, obj: Mapping[str, object], text: str) -> None:
        if self.checkpoint_line is not None:
            self.problem(n, f"second checkpoint line (first on line {self.checkpoint_line})")
            return
        self.checkpoint_line = n
        note = obj["checkpoint"]
        if not isinstance(note, str):
            self.problem(n, "checkpoint is not a string")
            return
        self._note_canonical(n, obj, text)
        try:
            self.checkpoint = verify_checkpoint(note, self.public_key)
        except CheckpointError as exc:
            self.problem(n, f"checkpoint rejected: {exc}")

    def _note_canonical(self, n: int, obj: Mapping[str, object], text: str) -> None:
        try:
            canonical = canonicalize(dict(obj))
        except CanonicalJSONError as exc:
            self.problem(n, f"line has no canonical form: {exc}")
            return
        if canonical != text.encode("utf-8", "surrogatepass"):
            self.notice(n, "line is not in canonical form; its content is unchanged")

    def line(self, n: int, raw: str | bytes) -> None:
        try:
            text = decode_line(raw)
        except ExportLineError as exc:
            self.problem(n, str(exc))
            if n > 1:
                self.record_lines += 1
                self.unreadable += 1
                self.expected_seq += 1
            return
        if not text.strip():
            self.notice(n, "blank line")
            return
        if n > 1 and text.startswith('{"record":'):
            self.record(n, text)  # fast path: the cache answers for already-seen lines
            return
        try:
            obj = load_object(text)
            if n == 1:
                self.header(n, obj, text)
            elif set(obj) == CHECKPOINT_KEYS:
                self.checkpoint_entry(n, obj, text)
            else:
                self.record(n, text)
        except ExportLineError as exc:
            if n == 1:
                self.problem(n, f"unreadable header: {exc}")
            else:
                self.record(n, text)  # reports the error once, as a record position


def verify_export(
    lines: Iterable[str | bytes],
    public_key: Ed25519PublicKey,
    *,
    older_checkpoint: str | None = None,
    older_proof: Sequence[bytes] | None = None,
    expected_origin: str | None = None,
    older_public_key: Ed25519PublicKey | None = None,
) -> VerifyReport:
    """Verify an export offline and list every problem with its line number.

    ``older_checkpoint`` is a signed checkpoint kept from earlier; its tree must be a
    prefix of this export (recomputed), and ``older_proof``, when given, must be a valid
    consistency proof from it to the export's signed checkpoint. ``expected_origin``
    pins the log when one key signs the logs of several tenants. ``older_public_key``
    verifies the older checkpoint when the signing key was rotated in between.
    """
    if isinstance(lines, str | bytes):
        # Iterating a whole text would verify it character by character.
        raise TypeError("pass an iterable of lines (e.g. an open file), not one string")
    older: Checkpoint | None = None
    problems_before: list[Problem] = []
    if older_checkpoint is not None:
        try:
            older = verify_checkpoint(older_checkpoint, older_public_key or public_key)
        except CheckpointError as exc:
            problems_before.append(Problem(line=None, message=f"older checkpoint rejected: {exc}"))
    v = _Verifier(public_key, older)
    v.problems.extend(problems_before)
    n = 0
    for n, raw in enumerate(lines, start=1):
        v.line(n, raw)
    if n == 0:
        v.problem(None, "export is empty")
    _final_checks(v, older, older_proof, expected_origin)
    return VerifyReport(
        problems=tuple(v.problems),
        notices=tuple(v.notices),
        tenant=v.tenant,
        origin=v.checkpoint.origin if v.checkpoint else v.header_origin,
        record_count=v.record_lines,
        root=v.tree.root(),
        checkpoint=v.checkpoint,
        sealed_texts=v.sealed,
        opened_texts=v.opened,
        inline_text_records=v.inline,
    )


def _final_checks(
    v: _Verifier,
    older: Checkpoint | None,
    older_proof: Sequence[bytes] | None,
    expected_origin: str | None,
) -> None:
    _check_checkpoint(v, expected_origin)
    if older is not None:
        _check_older(v, older, older_proof)
    elif older_proof is not None:
        v.problem(None, "consistency proof given without a valid older checkpoint")


def _check_checkpoint(v: _Verifier, expected_origin: str | None) -> None:
    cp = v.checkpoint
    if v.checkpoint_line is None:
        v.problem(None, "no checkpoint line: nothing vouches for this export")
    if cp is not None:
        if cp.size != v.record_lines:
            v.problem(
                v.checkpoint_line,
                f"checkpoint is for {cp.size} records, the export has {v.record_lines}",
            )
        elif v.unreadable:
            v.problem(v.checkpoint_line, f"root not recomputable: {v.unreadable} unreadable lines")
        elif cp.root != v.tree.root():
            v.problem(v.checkpoint_line, "recomputed root differs from the signed root")
        if v.header_origin is not None and v.header_origin != cp.origin:
            v.problem(1, f"header origin {v.header_origin!r} is not the signed {cp.origin!r}")
        if v.tenant is not None and not cp.origin.endswith("/" + v.tenant):
            v.problem(1, f"tenant {v.tenant!r} does not match the signed origin {cp.origin!r}")
        if expected_origin is not None and cp.origin != expected_origin:
            v.problem(
                v.checkpoint_line, f"log {cp.origin!r} is not the expected {expected_origin!r}"
            )


def _check_older(v: _Verifier, older: Checkpoint, older_proof: Sequence[bytes] | None) -> None:
    cp = v.checkpoint
    if cp is not None and older.origin != cp.origin:
        v.problem(None, f"older checkpoint is for log {older.origin!r}, not {cp.origin!r}")
    if cp is not None and older.timestamp and cp.timestamp and older.timestamp > cp.timestamp:
        v.problem(None, "older checkpoint is dated after the current one (rollback?)")
    if older.size > v.tree.size:
        v.problem(None, f"older checkpoint has {older.size} records, the export only {v.tree.size}")
    elif v.prefix_root != older.root:
        v.problem(None, f"the first {older.size} records do not match the older checkpoint")
    if older_proof is not None:
        if cp is None:
            v.problem(None, "consistency proof cannot be checked without a valid checkpoint")
        elif not (older.size == 0 and not older_proof) and not verify_consistency(
            older.size, cp.size, older.root, cp.root, older_proof
        ):
            v.problem(None, "consistency proof from the older checkpoint does not verify")


def verify_record_inclusion(
    record: Mapping[str, object],
    index: int,
    proof: Sequence[bytes],
    checkpoint_text: str,
    public_key: Ed25519PublicKey,
) -> Checkpoint:
    """Check that ``record`` is leaf ``index`` of the log signed by ``checkpoint_text``.

    Returns the verified checkpoint; raises ``CheckpointError`` for a bad checkpoint and
    ``ValueError`` when the record is not included as claimed.
    """
    checkpoint = verify_checkpoint(checkpoint_text, public_key)
    leaf = leaf_hash(canonicalize(dict(record)))
    if not verify_inclusion(leaf, index, checkpoint.size, proof, checkpoint.root):
        raise ValueError(f"record is not leaf {index} of the checkpointed tree")
    return checkpoint
