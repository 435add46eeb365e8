"""The offline verifier of an answer receipt (``GET /v1/runs/{run_id}/receipt``;
docs/audit.md, "Receipts").

A receipt is one JSON object (``schemas/receipt.schema.json``)::

    {"format": "stichtag-receipt/1", "run_id", "kind": "answer", "tenant",
     "answer": {"question", "as_of": {"valid_at", "known_at"}, "status", "reason",
                "sentences": [{"text", "citations": [{"document", "version_id", "start",
                               "end", "quote", "prefix", "suffix", "content_hash",
                               "selector": [TextQuoteSelector, TextPositionSelector]}]}]},
     "record": <the run record exactly as the log hashed it>,
     "texts": {"<commitment hex>": {"salt": "<hex>", "text"}, ...},
     "log": {"seq", "leaf_hash", "tree_size", "inclusion": [...], "checkpoint",
             "key_name", "key_id"}}

Checks, in this order, with nothing but the receipt, the tenant's public key and
(optionally) the cited versions' texts:

1. the checkpoint is signed by the public key, under ``key_name``/``key_id``, for the
   receipt's tenant (origin ``stichtag/<tenant>``);
2. ``leaf_hash`` is SHA-256(0x00 || RFC 8785 canonical JSON of ``record``) and the
   inclusion proof takes it at ``seq`` to the checkpoint's root (RFC 9162);
3. each of ``texts`` opens a sealed text of the record (SHA-256(salt || UTF-8(text)) is
   its commitment; docs/audit.md, "Sealed texts"), and the record, so opened, says
   exactly what ``answer`` shows: run, kind, tenant, question, as-of
   pair, status, reason, every sentence and every citation's version and offsets, in
   order; the document of each citation is the one the record names for its version
   (retrieval candidates, tool results);
4. each citation agrees with itself (``content_hash`` is the version id, the selectors
   repeat the quote, prefix, suffix and offsets);
5. given a version's text, its blake3 content address is recomputed and the quote,
   prefix and suffix must be the text at the offsets. Without it a quote is reported as
   not checked, never as verified.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from stichtag.audit.signing import verify_checkpoint
from stichtag.domain.canonical_json import CanonicalJSONError, canonicalize
from stichtag.domain.checkpoint import (
    Checkpoint,
    CheckpointError,
    origin_for_tenant,
    split_signed_note,
)
from stichtag.domain.merkle import leaf_hash, verify_inclusion
from stichtag.domain.sealing import check_openings, unseal
from stichtag.domain.selectors import quote_context
from stichtag.domain.text import normalize, version_id

RECEIPT_FORMAT = "stichtag-receipt/1"


@dataclass(frozen=True, kw_only=True)
class ReceiptReport:
    """What the verifier found: ``ok`` only without problems."""

    problems: tuple[str, ...]
    quotes_checked: int = 0
    quotes_unchecked: int = 0
    """Citations whose version text was not given: their quotes are not verified."""
    checkpoint: Checkpoint | None = field(default=None)

    @property
    def ok(self) -> bool:
        """True iff every check passed (unchecked quotes are not problems)."""
        return not self.problems


def _b64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"{what}: not a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what}: not base64") from None


def _signature(receipt: Mapping[str, Any], public_key: Ed25519PublicKey,
               problems: list[str]) -> Checkpoint | None:
    log = receipt.get("log") or {}
    note = log.get("checkpoint")
    if not isinstance(note, str):
        problems.append("log.checkpoint: missing")
        return None
    try:
        checkpoint = verify_checkpoint(note, public_key, key_name=log.get("key_name"))
        _, signatures = split_signed_note(note)
    except CheckpointError as exc:
        problems.append(f"log.checkpoint: {exc}")
        return None
    try:
        kid = _b64(log.get("key_id"), "log.key_id")
    except ValueError as exc:
        problems.append(str(exc))
        return checkpoint
    if not any(s.key_name == log.get("key_name") and s.key_id == kid for s in signatures):
        problems.append("log.key_id: not the key id of the checkpoint's signature")
    if checkpoint.origin != origin_for_tenant(str(receipt.get("tenant"))):
        problems.append(f"log.checkpoint: origin {checkpoint.origin!r} is not the "
                        "receipt's tenant")
    return checkpoint


def _inclusion(receipt: Mapping[str, Any], checkpoint: Checkpoint,
               problems: list[str]) -> None:
    log = receipt["log"]
    record = receipt.get("record")
    if not isinstance(record, dict):
        problems.append("record: missing")
        return
    try:
        leaf = leaf_hash(canonicalize(record))
    except CanonicalJSONError as exc:
        problems.append(f"record: not canonicalizable ({exc})")
        return
    try:
        if leaf != _b64(log.get("leaf_hash"), "log.leaf_hash"):
            problems.append("log.leaf_hash: not the hash of the record")
        proof = [_b64(p, "log.inclusion") for p in log.get("inclusion") or []]
    except ValueError as exc:
        problems.append(str(exc))
        return
    seq, size = log.get("seq"), log.get("tree_size")
    if size != checkpoint.size:
        problems.append(f"log.tree_size: {size} is not the checkpoint's size "
                        f"{checkpoint.size}")
    if not isinstance(seq, int) or isinstance(seq, bool) or not verify_inclusion(
            leaf, seq, checkpoint.size, proof, checkpoint.root):
        problems.append(f"log.inclusion: the record is not leaf {seq} of the checkpoint")


def record_documents(record: Mapping[str, Any]) -> dict[str, str]:
    """version id -> document, as the record names them: its retrieval candidates and
    the results of the generator's tools (every citation comes from one of the two)."""
    tools = (record.get("generator") or {}).get("tools") or []
    return {c["version_id"]: c["document"]
            for c in [*(record.get("candidates") or []), *tools]
            if isinstance(c, dict) and isinstance(c.get("version_id"), str)
            and isinstance(c.get("document"), str)}


def _binding(receipt: Mapping[str, Any], problems: list[str]) -> None:
    record, answer = receipt.get("record") or {}, receipt.get("answer") or {}
    texts = receipt.get("texts") or {}
    if not isinstance(record, dict) or not isinstance(texts, dict):
        problems.append("record or texts: not an object")
        return
    # Sealed texts are compared through their openings: each must give its commitment.
    problems.extend(f"texts: {p}" for p in check_openings(record, texts))
    record = unseal(record, texts)
    for key in ("run_id", "kind", "tenant"):
        if record.get(key) != receipt.get(key):
            problems.append(f"{key}: not the record's")
    result = record.get("result") or {}
    shown = {"answer.question": (answer.get("question"),
                                 (record.get("request") or {}).get("question")),
             "answer.as_of": (answer.get("as_of"), record.get("as_of")),
             "answer.status": (answer.get("status"), result.get("status")),
             "answer.reason": (answer.get("reason"), result.get("reason"))}
    problems.extend(f"{k}: not the record's" for k, (a, b) in shown.items() if a != b)
    sentences, recorded = answer.get("sentences") or [], result.get("sentences") or []
    if len(sentences) != len(recorded):
        problems.append("answer.sentences: not the record's")
        return
    documents = record_documents(record)
    for i, (s, r) in enumerate(zip(sentences, recorded, strict=True)):
        where = f"answer.sentences[{i}]"
        if s.get("text") != r.get("text"):
            problems.append(f"{where}.text: not the record's")
        cited, kept = s.get("citations") or [], r.get("citations") or []
        if [[c.get("version_id"), c.get("start"), c.get("end")] for c in cited] != [
                [c.get("version_id"), c.get("start"), c.get("end")] for c in kept]:
            problems.append(f"{where}.citations: not the record's versions and offsets")
        for j, c in enumerate(cited):
            if c.get("document") != documents.get(c.get("version_id")):
                problems.append(f"{where}.citations[{j}].document: not the record's")


def _selectors(c: Mapping[str, Any]) -> bool:
    """The citation agrees with itself: content hash, both selectors."""
    want = [{"type": "TextQuoteSelector", "exact": c.get("quote"), "prefix": c.get("prefix"),
             "suffix": c.get("suffix")},
            {"type": "TextPositionSelector", "start": c.get("start"), "end": c.get("end")}]
    return c.get("content_hash") == c.get("version_id") and c.get("selector") == want


def _quotes(receipt: Mapping[str, Any], versions: Mapping[str, str] | None,
            problems: list[str]) -> tuple[int, int]:
    checked = unchecked = 0
    for i, s in enumerate((receipt.get("answer") or {}).get("sentences") or []):
        for j, c in enumerate(s.get("citations") or []):
            where = f"answer.sentences[{i}].citations[{j}]"
            if not _selectors(c):
                problems.append(f"{where}: content_hash or selector disagrees with it")
            text = (versions or {}).get(str(c.get("version_id")))
            if text is None:
                unchecked += 1
                continue
            checked += 1
            start, end = c.get("start"), c.get("end")
            if not (isinstance(start, int) and isinstance(end, int)
                    and 0 <= start <= end <= len(text)):
                problems.append(f"{where}: offsets outside the version")
                continue
            prefix, suffix = quote_context(text, start, end)
            if (text[start:end], prefix, suffix) != (c.get("quote"), c.get("prefix"),
                                                     c.get("suffix")):
                problems.append(f"{where}.quote: not the version's text at its offsets")
    return checked, unchecked


def verify_receipt(receipt: Mapping[str, Any], public_key: Ed25519PublicKey, *,
                   versions: Mapping[str, str] | None = None) -> ReceiptReport:
    """Check a receipt offline; ``versions``: version id -> text, already checked against
    its content address (``load_versions``)."""
    problems: list[str] = []
    if receipt.get("format") != RECEIPT_FORMAT:
        problems.append(f"format: not {RECEIPT_FORMAT}")
    checkpoint = _signature(receipt, public_key, problems)
    if checkpoint is not None:
        _inclusion(receipt, checkpoint, problems)
    _binding(receipt, problems)
    checked, unchecked = _quotes(receipt, versions, problems)
    return ReceiptReport(problems=tuple(problems), quotes_checked=checked,
                         quotes_unchecked=unchecked,
                         checkpoint=checkpoint if not problems else None)


def load_versions(texts: Iterable[bytes | str]) -> dict[str, str]:
    """Version texts keyed by the content address recomputed from each (normalized as at
    ingest): a text that is not the cited version simply does not match its id."""
    out: dict[str, str] = {}
    for raw in texts:
        text = normalize(raw)
        out[version_id(text)] = text
    return out


def cited_versions(receipt: Mapping[str, Any]) -> Sequence[str]:
    """The version ids a receipt cites, once each."""
    ids = [c.get("version_id") for s in (receipt.get("answer") or {}).get("sentences") or []
           for c in s.get("citations") or []]
    return [i for i in dict.fromkeys(ids) if isinstance(i, str)]
