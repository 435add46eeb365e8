"""The body of GET /v1/runs/{run_id}/receipt: an answer receipt that verifies offline
(``stichtag receipt verify``; the checks: ``app/stichtag/audit/receipt.py``)."""

from __future__ import annotations

from typing import Any

import msgspec

from stichtag.api.schemas.answers import Selector


class ReceiptAsOf(msgspec.Struct):
    """The as-of pair the run used (RFC 3339, UTC), as its record holds it."""

    valid_at: str
    known_at: str


class ReceiptCitation(msgspec.Struct):
    """A citation as the receipt shows it: ``quote == text[start:end]`` of the version
    whose blake3 content address is ``version_id`` (= ``content_hash``); ``prefix`` and
    ``suffix`` are up to 32 code points around it."""

    document: str
    version_id: str
    start: int
    end: int
    quote: str
    prefix: str
    suffix: str
    content_hash: str
    selector: list[Selector]


class ReceiptSentence(msgspec.Struct):
    """An answer sentence and its citations."""

    text: str
    citations: list[ReceiptCitation]


class ReceiptAnswer(msgspec.Struct):
    """The answer or refusal, exactly as the record holds it."""

    question: str
    as_of: ReceiptAsOf
    status: str
    reason: str | None
    sentences: list[ReceiptSentence]


class ReceiptLog(msgspec.Struct):
    """Where the record stands in the tenant's log: leaf ``seq`` with hash ``leaf_hash``
    (SHA-256 of 0x00 and the record's RFC 8785 JSON), its RFC 9162 inclusion proof in the
    tree of ``tree_size`` leaves, and that tree's signed checkpoint (Ed25519, signed by
    ``key_name`` with the key id ``key_id``). Hashes are standard base64."""

    seq: int
    leaf_hash: str
    tree_size: int
    inclusion: list[str]
    checkpoint: str
    key_name: str | None
    key_id: str | None


class ReceiptOut(msgspec.Struct):
    """One self-contained answer receipt (format ``stichtag-receipt/1``)."""

    format: str
    run_id: str
    kind: str
    tenant: str
    answer: ReceiptAnswer
    record: dict[str, Any]
    log: ReceiptLog
    # commitment hex -> {"salt": hex, "text": ...}: opens the record's sealed texts
    # (docs/audit.md, "Sealed texts"); empty for a record from before sealing
    texts: dict[str, dict[str, str]] = {}
