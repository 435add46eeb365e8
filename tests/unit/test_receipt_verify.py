"""The offline receipt verifier on a receipt built by hand (app/stichtag/audit/receipt.py;
docs/audit.md, "Receipts"): a citation of a version a tool returned is bound to the
document the tool result names, and a version the record never names fails."""

from __future__ import annotations

import base64
import copy
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from stichtag.audit.receipt import RECEIPT_FORMAT, load_versions, verify_receipt
from stichtag.audit.signing import sign_checkpoint
from stichtag.domain.canonical_json import canonicalize
from stichtag.domain.checkpoint import format_checkpoint, origin_for_tenant, split_signed_note
from stichtag.domain.merkle import inclusion_proof, leaf_hash, root
from stichtag.domain.selectors import quote_context
from stichtag.domain.text import version_id

TENANT = "7b0c6c1e-2f4a-4d8e-9c1b-3a5d7e9f1b2c"
TEXT = "# Tarif\n\n(1) Der Beitrag steigt um 3 %. (2) Alles andere bleibt.\n"
QUOTE = "Der Beitrag steigt um 3 %."


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _receipt(key: Ed25519PrivateKey) -> dict[str, Any]:
    vid = version_id(TEXT)
    start = TEXT.index(QUOTE)
    end = start + len(QUOTE)
    record = {"kind": "answer", "run_id": "r1", "tenant": TENANT,
              "request": {"question": "Wie stark steigt der Beitrag?"},
              "as_of": {"valid_at": "2024-01-01T00:00:00Z", "known_at": "2024-06-01T00:00:00Z"},
              "candidates": [],  # found by a tool, not by retrieval
              "generator": {"tools": [{"name": "read_document", "document": "tarif",
                                       "version_id": vid, "evidence": []}]},
              "result": {"status": "answered", "reason": None, "sentences": [
                  {"text": QUOTE, "citations": [{"version_id": vid, "start": start,
                                                 "end": end}]}]}}
    leaves = [leaf_hash(b"other leaf"), leaf_hash(canonicalize(record)), leaf_hash(b"third")]
    note = sign_checkpoint(format_checkpoint(origin_for_tenant(TENANT), 3, root(leaves)), key)
    [signature] = split_signed_note(note)[1]
    prefix, suffix = quote_context(TEXT, start, end)
    citation = {"document": "tarif", "version_id": vid, "start": start, "end": end,
                "quote": QUOTE, "prefix": prefix, "suffix": suffix, "content_hash": vid,
                "selector": [{"type": "TextQuoteSelector", "exact": QUOTE, "prefix": prefix,
                              "suffix": suffix},
                             {"type": "TextPositionSelector", "start": start, "end": end}]}
    return {"format": RECEIPT_FORMAT, "run_id": "r1", "kind": "answer", "tenant": TENANT,
            "answer": {"question": record["request"]["question"], "as_of": record["as_of"],
                       "status": "answered", "reason": None,
                       "sentences": [{"text": QUOTE, "citations": [citation]}]},
            "record": record,
            "log": {"seq": 1, "leaf_hash": _b64(leaves[1]), "tree_size": 3,
                    "inclusion": [_b64(p) for p in inclusion_proof(leaves, 1)],
                    "checkpoint": note, "key_name": signature.key_name,
                    "key_id": _b64(signature.key_id)}}


def test_a_tool_cited_version_is_bound_to_the_document_the_tool_named() -> None:
    key = Ed25519PrivateKey.generate()
    receipt = _receipt(key)
    versions = load_versions([TEXT])
    report = verify_receipt(receipt, key.public_key(), versions=versions)
    assert report.ok, report.problems
    assert report.quotes_checked == 1
    renamed = copy.deepcopy(receipt)
    renamed["answer"]["sentences"][0]["citations"][0]["document"] = "anderes"
    assert verify_receipt(renamed, key.public_key(), versions=versions).problems == (
        "answer.sentences[0].citations[0].document: not the record's",)


def test_a_quote_that_is_not_the_text_at_its_offsets_fails_only_with_the_text() -> None:
    key = Ed25519PrivateKey.generate()
    receipt = _receipt(key)
    for selector in receipt["answer"]["sentences"][0]["citations"][0]["selector"][:1]:
        selector["exact"] = "Der Beitrag sinkt um 3 %."
    receipt["answer"]["sentences"][0]["citations"][0]["quote"] = "Der Beitrag sinkt um 3 %."
    assert verify_receipt(receipt, key.public_key()).ok  # unchecked without the text
    failed = verify_receipt(receipt, key.public_key(), versions=load_versions([TEXT]))
    assert failed.problems == (
        "answer.sentences[0].citations[0].quote: not the version's text at its offsets",)
