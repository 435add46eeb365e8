"""The run-log export format: writing its lines, and reading one line back.

An export is JSON Lines, each line RFC 8785 canonical JSON::

    {"format":"stichtag-log-export/1","origin":"stichtag/acme","tenant":"acme"}
    {"record":{...run record...},"seq":0}
    {"record":{...},"seq":1,"texts":{"<commitment hex>":{"salt":"<hex>","text":"..."}}}
    ...
    {"checkpoint":"stichtag/acme\\n1000\\n...\\n\\n— stichtag/acme ...\\n"}

A line whose bytes differ from the canonical encoding of its content (e.g. whitespace
between tokens, ``1E+22`` for ``1e+22``) commits to the same record: ``RecordLine``
says so (``canonical_line``) rather than rejecting it, because the signed content is
unchanged.

``texts`` (only on records that seal texts still held) opens the record's sealed texts:
each must give its commitment, SHA-256(salt || UTF-8(text)) (docs/audit.md, "Sealed
texts"). They lie outside the leaf, so an erasure removes them from later exports and
the leaves, proofs and checkpoints stay the same.

Separate from the verifier (:mod:`stichtag.audit.verify`) because the server writes exports
(``stichtag.services.runlog``) and never verifies them, while the verifier and the tamper tests
read lines with the very parser defined here; the format is the contract between them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from stichtag.domain.canonical_json import CanonicalJSONError, canonicalize, parse_json
from stichtag.domain.merkle import leaf_hash

EXPORT_FORMAT = "stichtag-log-export/1"
"""Value of the header's ``format`` field."""

HEADER_KEYS = frozenset({"format", "tenant", "origin"})
RECORD_KEYS = frozenset({"seq", "record"})
OPTIONAL_RECORD_KEYS = frozenset({"texts"})
CHECKPOINT_KEYS = frozenset({"checkpoint"})


class ExportLineError(ValueError):
    """One line of an export cannot be read."""


@dataclass(frozen=True, kw_only=True)
class RecordLine:
    """A record line, parsed and re-derived."""

    seq: int
    leaf: bytes
    canonical: bytes
    """RFC 8785 bytes of the record: what the leaf hash commits to."""
    canonical_line: bool
    """Whether the line was byte-for-byte the canonical encoding."""
    record: dict[str, object]
    texts: dict[str, object]
    """The openings of the record's sealed texts the export holds (may be empty)."""


def decode_line(line: str | bytes) -> str:
    """One line as text without its newline; raises ``ExportLineError`` if not UTF-8."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ExportLineError(f"not valid UTF-8: {exc.reason}") from exc
    return line[:-1] if line.endswith("\n") else line


def load_object(text: str) -> dict[str, object]:
    """The JSON object on one line, read by ``parse_json`` (I-JSON numbers, no duplicate
    member names); raises ``ExportLineError``."""
    try:
        value = parse_json(text)
    except json.JSONDecodeError as exc:
        raise ExportLineError(f"not JSON: {exc.msg} at column {exc.colno}") from exc
    except CanonicalJSONError as exc:
        raise ExportLineError(str(exc)) from exc
    except RecursionError as exc:
        raise ExportLineError("JSON nested too deeply") from exc
    if not isinstance(value, dict):
        raise ExportLineError("line is not a JSON object")
    return value


def _record_from_object(obj: Mapping[str, object], text: str) -> RecordLine:
    if not RECORD_KEYS <= set(obj) <= RECORD_KEYS | OPTIONAL_RECORD_KEYS:
        raise ExportLineError(
            f"record line must have 'seq', 'record' and optionally 'texts', got {sorted(obj)}"
        )
    seq, record, texts = obj["seq"], obj["record"], obj.get("texts", {})
    if not isinstance(texts, dict):
        raise ExportLineError("texts is not a JSON object")
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise ExportLineError(f"seq {seq!r} is not a non-negative integer")
    if not isinstance(record, dict):
        raise ExportLineError("record is not a JSON object")
    try:
        canonical = canonicalize(record)
    except CanonicalJSONError as exc:
        raise ExportLineError(f"record has no canonical form: {exc}") from exc
    # The canonical line, built rather than re-serialized: "record" sorts before "seq".
    line_bytes = b'{"record":' + canonical + b',"seq":' + str(seq).encode()
    if "texts" in obj:
        try:
            line_bytes += b',"texts":' + canonicalize(texts)
        except CanonicalJSONError as exc:
            raise ExportLineError(f"texts have no canonical form: {exc}") from exc
    return RecordLine(
        seq=seq,
        leaf=leaf_hash(canonical),
        canonical=canonical,
        canonical_line=line_bytes + b"}" == text.encode("utf-8", "surrogatepass"),
        record=record,
        texts=texts,
    )


@functools.lru_cache(maxsize=8192)
def _cached_line(text: str) -> RecordLine | str:
    # A pure function of the line's text, memoized because auditors re-verify exports
    # that share most lines (successive exports of a growing log); errors come back as
    # strings because lru_cache does not cache exceptions.
    try:
        return _record_from_object(load_object(text), text)
    except ExportLineError as exc:
        return str(exc)


def parse_record_line(line: str | bytes) -> RecordLine:
    """Parse one record line and recompute its leaf; raises ``ExportLineError``."""
    result = _cached_line(decode_line(line))
    if isinstance(result, str):
        raise ExportLineError(result)
    return result


def export_lines(
    tenant: str, origin: str, records: Iterable[Mapping[str, object]], checkpoint: str,
    *, texts: Sequence[Mapping[str, object]] = (),
) -> Iterator[str]:
    """Yield the lines (without newlines) of an export; records in log order from seq 0,
    each with the openings of its sealed texts (``texts[seq]``) when it has any.

    The checkpoint must be the signed note for exactly these records.
    """
    yield canonicalize({"format": EXPORT_FORMAT, "tenant": tenant, "origin": origin}).decode()
    for seq, record in enumerate(records):
        line: dict[str, object] = {"seq": seq, "record": dict(record)}
        if seq < len(texts) and texts[seq]:
            line["texts"] = dict(texts[seq])
        yield canonicalize(line).decode()
    yield canonicalize({"checkpoint": checkpoint}).decode()
