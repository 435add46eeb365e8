"""Sealed texts (docs/audit.md, "Sealed texts"): the commitment an auditor recomputes,
what a record seals, and how it is opened again."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from stichtag.audit.export import export_lines
from stichtag.audit.signing import sign_checkpoint
from stichtag.audit.verify import verify_export
from stichtag.domain.canonical_json import canonicalize
from stichtag.domain.checkpoint import format_checkpoint
from stichtag.domain.merkle import CompactRange, leaf_hash
from stichtag.domain.sealing import (
    check_openings,
    commit,
    inline_texts,
    opens,
    seal,
    unseal,
)

TEXT = "Erika Mustermann wohnt in der Musterstraße 5."
A, B = "b3:" + "a" * 64, "b3:" + "b" * 64


def _answer() -> dict[str, Any]:
    return {"kind": "answer", "request": {"question": "Wo wohnt sie?"},
            "candidates": [{"version_id": A}, {"version_id": B}],
            "evidence": [{"eid": "e1", "version_id": A}, {"eid": "e2", "version_id": B}],
            "generator": {"draft": {"sentences": [{"text": TEXT, "evidence": ["e1"]}]},
                          "exchanges": [{"request": {"body": f"Evidence: {TEXT}"},
                                         "response": {"body": None}}], "tools": []},
            "result": {"sentences": [{"text": TEXT, "citations": [{"version_id": A}]},
                                     {"text": "Ohne Beleg.", "citations": []}]}}


def test_the_commitment_is_sha256_of_salt_then_utf8_text() -> None:
    salt = bytes(range(32))
    assert commit(salt, TEXT) == hashlib.sha256(salt + TEXT.encode("utf-8")).digest()


def test_a_commitment_depends_on_the_salt_and_a_wrong_salt_or_text_fails() -> None:
    sealed_a = seal(_answer())[1][0]
    sealed_b = seal(_answer())[1][0]
    assert sealed_a.text == sealed_b.text == TEXT
    assert sealed_a.salt != sealed_b.salt and sealed_a.commitment != sealed_b.commitment
    assert opens(sealed_a.commitment, sealed_a.salt, TEXT)
    assert not opens(sealed_a.commitment, sealed_b.salt, TEXT)  # wrong salt
    assert not opens(sealed_a.commitment, sealed_a.salt, TEXT + " ")  # wrong text
    assert not opens(sealed_a.commitment, sealed_a.salt[:31], TEXT)  # not a salt


def test_a_record_keeps_no_quote_and_opens_to_what_was_recorded() -> None:
    original = _answer()
    record, texts = seal(json.loads(json.dumps(original)))
    assert TEXT not in json.dumps(record)
    assert "Wo wohnt sie?" in json.dumps(record)  # the question is not version text
    # the cited sentence comes from A, the uncited one from any version, the draft
    # sentence from e1's version A, the exchange from every version (no response body)
    assert [t.versions for t in texts] == [(A,), (A, B), (A,), (A, B)]
    openings = {t.commitment.hex(): {"salt": t.salt.hex(), "text": t.text} for t in texts}
    assert unseal(record, openings) == original
    assert check_openings(record, openings) == []
    assert inline_texts(record) == 0 and inline_texts(original) == 4


def test_a_missing_opening_reads_as_erased_and_a_forged_one_is_refused() -> None:
    record, texts = seal(_answer())
    first = texts[0].commitment.hex()
    erased = unseal(record, {})
    assert erased["result"]["sentences"][0]["text"] == {
        "sealed": first, "versions": [A], "erased": True}
    forged = {first: {"salt": texts[0].salt.hex(), "text": "Jemand anderes."}}
    assert check_openings(record, forged) == [f"text {first[:16]}… does not open its commitment"]
    stray = {"00" * 32: {"salt": "00" * 32, "text": TEXT}}
    assert check_openings(record, stray) == [f"text {'0' * 16}… opens no sealed text of the record"]


def test_other_kinds_seal_nothing() -> None:
    record = {"kind": "search", "request": {"query": TEXT}, "candidates": [{"version_id": A}]}
    assert seal(json.loads(json.dumps(record))) == (record, [])


def _export(records: list[dict[str, Any]], texts: list[dict[str, Any]],
            key: Ed25519PrivateKey) -> list[str]:
    tree = CompactRange()
    for r in records:
        tree.append(leaf_hash(canonicalize(r)))
    body = format_checkpoint("stichtag/t", tree.size, tree.root(),
                             datetime(2026, 12, 7, tzinfo=UTC))
    return list(export_lines("t", "stichtag/t", records, sign_checkpoint(body, key),
                             texts=texts))


def test_an_export_verifies_with_texts_erased_but_not_with_a_forged_one() -> None:
    key = Ed25519PrivateKey.generate()
    legacy = _answer()  # a record from before sealing: its text inside the leaf
    record, texts = seal(_answer())
    openings = {t.commitment.hex(): {"salt": t.salt.hex(), "text": t.text} for t in texts}
    held = verify_export(_export([legacy, record], [{}, openings], key), key.public_key())
    assert held.ok and (held.sealed_texts, held.opened_texts) == (4, 4)
    assert held.inline_text_records == 1
    # Erased: the openings are gone, every leaf and the root are the same.
    erased = verify_export(_export([legacy, record], [{}, {}], key), key.public_key())
    assert erased.ok and erased.root == held.root and erased.opened_texts == 0
    first = texts[0].commitment.hex()
    forged = {**openings, first: {**openings[first], "text": "Jemand anderes."}}
    report = verify_export(_export([legacy, record], [{}, forged], key), key.public_key())
    assert not report.ok and [(p.line, p.message) for p in report.problems] == [
        (3, f"text {first[:16]}… does not open its commitment")]
