"""Tamper evidence of a run-log export: every edit, deletion, reorder, insertion,
truncation and rewrite of a 1,000-record export is detected by the offline verifier.

What "detected" means for a single-byte change: the verifier reports a problem, unless
the changed line still parses to a record with the identical RFC 8785 canonical form
(e.g. ``1e-7`` rewritten as ``1E-7``). Such a change does not alter any signed content,
so it is not tampering; the verifier reports it as a notice and the test asserts the
canonical bytes are unchanged instead of counting it as a miss.

Sampling (to stay well under 30 s on 2 cores), stated as the bars of this test:

* every byte of 24 whole records (8 of each kind: search, answer, abstention), each
  position changed twice (XOR 0x20, the ASCII case bit, and a random nonzero XOR):
  about 2.4 % of all record bytes, every position exhaustively;
* a systematic stride over the whole file (every 37th byte: header, all 1,000 records,
  line breaks and the checkpoint), one random change each: about 2.7 % of all bytes;
* every 1,999th byte through the complete ``verify_export`` run end to end;
* every line deleted (all 1,002), and chosen swaps, insertions, truncations, rewrites.

Single-line changes are judged per line with ``parse_record_line`` (the verifier's own
line reader): a line that cannot be read, or whose seq or leaf hash differs, makes the
full verification fail (gap check or root mismatch); the end-to-end sample shows it.
"""

from __future__ import annotations

import io
import random
import re
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from stichtag.audit.export import ExportLineError, export_lines, parse_record_line
from stichtag.audit.signing import sign_checkpoint
from stichtag.audit.verify import VerifyReport, verify_export, verify_record_inclusion
from stichtag.domain.canonical_json import canonicalize
from stichtag.domain.checkpoint import format_checkpoint
from stichtag.domain.merkle import CompactRange, consistency_proof, inclusion_proof, leaf_hash

N_RECORDS = 1000
TENANT = "nordlicht"
ORIGIN = "stichtag/nordlicht"
OLD_SIZE = 500
SIGNED_AT = datetime(2024, 6, 30, 18, 0, tzinfo=UTC)
KINDS = ("search", "answer", "abstention")

SENTENCES = [
    "Der Höchstzinssatz für die Berechnung der Deckungsrückstellungen beträgt 0,25 Prozent.",
    "Die Aufsichtsbehörde kann Abweichungen zulassen, wenn dies zur Wahrung der Belange "
    "der Versicherten erforderlich ist.",
    "Für Verträge, die vor dem 1. Januar 2022 geschlossen wurden, gilt § 2 Abs. 1 a. F.",
    "Die Zinszusatzreserve ist nach der Korridormethode zu ermitteln (vgl. § 5 Abs. 3 DeckRV).",
    "Überschüsse sind den Versicherungsnehmern angemessen zuzuteilen; Näheres regelt die MindZV.",
]
QUESTIONS = [
    "Welcher Höchstrechnungszins galt am 1. Januar 2022?",
    "Wie wird die Zinszusatzreserve berechnet?",
    "Gilt die Übergangsregelung für Altverträge (Vertragsabschluss vor 2015)?",
    "Was regelt § 145 VAG zur Überschussbeteiligung?",
]


def _rng(seed: int) -> random.Random:
    """Seeded generator: reproducible test data, no cryptographic use."""
    return random.Random(seed)


def run_record(seq: int, rng: random.Random) -> dict[str, Any]:
    """A synthetic run record shaped like the real ones (DESIGN §8)."""
    kind = KINDS[seq % 3]

    def digest() -> str:
        return f"{rng.getrandbits(256):064x}"

    candidates = []
    for _ in range(2):
        start = rng.randrange(20000)
        candidates.append(
            {
                "passage_id": f"p-{rng.randrange(10**6)}",
                "version_id": "b3:" + digest(),
                "start": start,
                "end": start + rng.randrange(40, 400),
                "heading_path": ["DeckRV", "§ 2 Höchstzinssatz", f"({rng.randrange(1, 5)})"],
                "scores": {
                    "bm25": round(rng.uniform(0, 25), 4),
                    "vector": rng.uniform(0.5, 0.95),
                    "fused": rng.uniform(0, 0.05),
                    # Tiny and huge values print in exponent form (1.5e-8, 2.5e+20).
                    "rerank": rng.choice([rng.random(), rng.random() * 1e-7, rng.random() * 1e21]),
                },
            }
        )
    record: dict[str, Any] = {
        "run_id": f"run-{seq:06d}",
        "kind": kind,
        "tenant": TENANT,
        "key_id": f"key-{rng.randrange(5)}",
        "as_of": {"valid_at": "2022-01-01T00:00:00Z", "known_at": "2024-03-15T09:30:00.125Z"},
        "request": {"query": rng.choice(QUESTIONS), "k": 10, "generator": "extractive"},
        "models": {
            "embedder": "multilingual-e5-small-int8",
            "sha256": digest(),
            "segmenter_id": "de-legal/3",
        },
        "thresholds": {"relevance": 0.42, "coverage": 0.8},
        "candidates": candidates,
        "timings_ms": {"retrieve": round(rng.uniform(1, 40), 3), "total": rng.uniform(5, 300)},
    }
    if kind == "answer":
        quote = rng.choice(SENTENCES)
        record["result"] = {
            "status": "answered",
            "coverage": 1.0,
            "sentences": [
                {
                    "text": quote,
                    "citations": [
                        {"document": "deckrv", "start": 12, "end": 12 + len(quote), "quote": quote}
                    ],
                }
            ],
        }
    elif kind == "abstention":
        record["result"] = {
            "status": "abstained",
            "reason": "insufficient_evidence",
            "threshold": 0.42,
            "observed": rng.uniform(0, 0.42),
            "next_step": "Bitte präzisieren Sie die Frage.\nGgf. fehlt die Fassung vom 1.1.2016.",
        }
    else:
        record["result"] = {
            "status": "found",
            "hits": rng.randrange(50),
            "note": 'Tab\tund "Zitat"',
        }
    return record


class Log:
    """A signed export plus what an auditor may hold from earlier."""

    def __init__(self) -> None:
        rng = _rng(20240630)
        self.key = Ed25519PrivateKey.generate()
        self.public = self.key.public_key()
        self.records = [run_record(i, rng) for i in range(N_RECORDS)]
        self.leaves = [leaf_hash(canonicalize(r)) for r in self.records]
        tree = CompactRange()
        for i, leaf in enumerate(self.leaves):
            tree.append(leaf)
            if i + 1 == OLD_SIZE:
                old_body = format_checkpoint(
                    ORIGIN, OLD_SIZE, tree.root(), SIGNED_AT - timedelta(days=30)
                )
                self.old_checkpoint = sign_checkpoint(old_body, self.key)
        self.checkpoint = sign_checkpoint(
            format_checkpoint(ORIGIN, N_RECORDS, tree.root(), SIGNED_AT), self.key
        )
        self.lines = list(export_lines(TENANT, ORIGIN, self.records, self.checkpoint))
        self.data = "".join(line + "\n" for line in self.lines).encode("utf-8")
        self.proof = consistency_proof(self.leaves, OLD_SIZE, N_RECORDS)

    def verify(self, lines: Iterable[str | bytes], **kwargs: Any) -> VerifyReport:
        return verify_export(lines, self.public, **kwargs)

    def verify_bytes(self, data: bytes) -> VerifyReport:
        # Iterating a binary stream splits exactly as reading the export file would.
        return self.verify(io.BytesIO(data))


@pytest.fixture(scope="module")
def log() -> Log:
    return Log()


def test_untampered_export_verifies(log: Log) -> None:
    report = log.verify(log.lines)
    assert report.ok, report.problems
    assert report.notices == ()
    assert report.record_count == N_RECORDS
    assert report.tenant == TENANT and report.origin == ORIGIN
    assert report.checkpoint is not None and report.checkpoint.size == N_RECORDS
    assert log.verify_bytes(log.data).ok
    full = log.verify(
        log.lines,
        older_checkpoint=log.old_checkpoint,
        older_proof=log.proof,
        expected_origin=ORIGIN,
    )
    assert full.ok, full.problems
    assert {KINDS[i % 3] for i in range(N_RECORDS)} == {r["kind"] for r in log.records}


def _mutate_line(line: bytes, offset: int, xor: int) -> bytes:
    changed = bytearray(line)
    changed[offset] ^= xor
    return bytes(changed)


def _judge(original: bytes, mutated: bytes, tally: Counter[str]) -> None:
    """Classify one changed record line; fail the test if the change would go unnoticed."""
    before = parse_record_line(original)
    try:
        after = parse_record_line(mutated)
    except ExportLineError:
        tally["unreadable"] += 1
        return
    if after.seq != before.seq:
        tally["seq"] += 1
    elif after.leaf != before.leaf:
        tally["leaf"] += 1
    else:
        # Same leaf: the canonical content must be byte-identical (anything else would
        # be a SHA-256 collision), and the verifier must still flag the odd encoding.
        assert after.canonical == before.canonical
        assert not after.canonical_line, mutated
        tally["same_content"] += 1


def test_every_byte_of_24_whole_records_changed(log: Log) -> None:
    rng = _rng(1)
    tally: Counter[str] = Counter()
    chosen = [seq for kind in range(3) for seq in range(kind, 3 * 8, 3)]
    assert {log.records[s]["kind"] for s in chosen} == set(KINDS)
    positions = 0
    for seq in chosen:
        line = log.lines[seq + 1].encode()
        for offset in range(len(line)):
            for xor in (0x20, rng.randrange(1, 256)):
                _judge(line, _mutate_line(line, offset, xor), tally)
                positions += 1
    assert positions > 60_000
    assert tally["unreadable"] + tally["seq"] + tally["leaf"] + tally["same_content"] == positions
    # The case flip turns exponent 'e' into 'E' somewhere among these records: the one
    # content-preserving change. Everything else is detected.
    assert 0 < tally["same_content"] < positions // 1000
    # Both kinds of detection are exercised in bulk: broken lines and changed content.
    assert tally["leaf"] > positions // 4
    assert tally["unreadable"] > positions // 4


def test_stride_over_the_whole_file(log: Log) -> None:
    rng = _rng(2)
    line_of: list[tuple[int, int]] = []  # byte position -> (line index, offset in line)
    for index, line in enumerate(log.lines):
        line_of.extend((index, offset) for offset in range(len(line.encode()) + 1))
    assert len(line_of) == len(log.data)
    tally: Counter[str] = Counter()
    hit_lines = set()
    for pos in range(0, len(log.data), 37):
        index, offset = line_of[pos]
        hit_lines.add(index)
        xor = rng.randrange(1, 256)
        raw = log.lines[index].encode()
        if 0 < index < len(log.lines) - 1 and offset < len(raw):
            _judge(raw, _mutate_line(raw, offset, xor), tally)
        else:
            # Header, checkpoint or a line break: judged by the full verifier.
            report = log.verify_bytes(_mutate_line(log.data, pos, xor))
            assert not report.ok, (pos, xor)
            tally["full"] += 1
    assert hit_lines == set(range(len(log.lines)))  # every line, records and both ends
    assert tally["full"] > 30
    assert tally["same_content"] < 10


def test_end_to_end_sample_through_the_full_verifier(log: Log) -> None:
    rng = _rng(3)
    failed = same = 0
    for pos in range(0, len(log.data), 1999):
        report = log.verify_bytes(_mutate_line(log.data, pos, rng.randrange(1, 256)))
        if report.ok:
            # Only a content-preserving re-encoding may pass, and it must be flagged.
            assert report.notices, pos
            same += 1
        else:
            failed += 1
    assert failed > 600
    assert same <= 2


def test_same_content_reencoding_passes_with_a_notice(log: Log) -> None:
    exponent = re.compile(r"\de-\d")  # a number in exponent form, e.g. 1.5e-8
    seq = next(i for i in range(N_RECORDS) if exponent.search(log.lines[i + 1]))
    line = log.lines[seq + 1]
    match = exponent.search(line)
    assert match is not None
    at = match.start() + 1
    lines = list(log.lines)
    lines[seq + 1] = line[:at] + "E" + line[at + 1 :]
    report = log.verify(lines)
    assert report.ok
    assert [n.line for n in report.notices] == [seq + 2]
    # Whitespace between tokens is another re-encoding of the same content.
    lines[seq + 1] = line.replace(',"seq":', ', "seq": ')
    assert log.verify(lines).ok


def test_every_line_deletion_is_detected(log: Log) -> None:
    for index in range(len(log.lines)):
        report = log.verify(log.lines[:index] + log.lines[index + 1 :])
        assert not report.ok, index
    # Line index 500 is file line 501 and holds seq 499; seq 500 moves up to line 501.
    report = log.verify(log.lines[:500] + log.lines[501:])
    assert report.problems[0].line == 501
    assert "seq 500 where 499 was expected" in report.problems[0].message


@pytest.mark.parametrize(
    ("a", "b"),
    [(1, 2), (10, 11), (500, 501), (1, 1000), (300, 700), (999, 1000), (0, 1), (1000, 1001)],
)
def test_swapping_two_lines_is_detected(log: Log, a: int, b: int) -> None:
    lines = list(log.lines)
    lines[a], lines[b] = lines[b], lines[a]
    assert not log.verify(lines).ok


def test_swapping_records_and_renumbering_seq_is_detected(log: Log) -> None:
    records = list(log.records)
    records[10], records[11] = records[11], records[10]
    lines = [*export_lines(TENANT, ORIGIN, records, log.checkpoint)]
    report = log.verify(lines)
    assert [p.message for p in report.problems] == ["recomputed root differs from the signed root"]


def _forged(seq: int) -> dict[str, Any]:
    record = run_record(seq, _rng(99))
    record["result"] = {"status": "answered", "coverage": 1.0, "sentences": []}
    return record


def test_inserting_a_forged_record_is_detected(log: Log) -> None:
    forged_line = canonicalize({"seq": N_RECORDS, "record": _forged(N_RECORDS)}).decode()
    appended = [*log.lines[:-1], forged_line, log.lines[-1]]
    report = log.verify(appended)
    assert any("is for 1000 records, the export has 1001" in p.message for p in report.problems)
    # In the middle with every later seq renumbered, so the sequence looks gapless.
    records = [*log.records[:400], _forged(400), *log.records[400:]]
    report = log.verify(export_lines(TENANT, ORIGIN, records, log.checkpoint))
    assert not report.ok
    assert not any("seq" in p.message for p in report.problems)
    # A replayed copy of an existing line.
    assert not log.verify([*log.lines[:5], log.lines[4], *log.lines[5:]]).ok


@pytest.mark.parametrize("dropped", [1, 10, 500, 1000])
def test_truncation_with_the_checkpoint_kept_is_detected(log: Log, dropped: int) -> None:
    lines = [*log.lines[: N_RECORDS + 1 - dropped], log.lines[-1]]
    report = log.verify(lines)
    assert not report.ok
    assert any(f"the export has {N_RECORDS - dropped}" in p.message for p in report.problems)


def test_rollback_to_an_older_genuine_state_is_detected_by_a_newer_checkpoint(log: Log) -> None:
    # The first 500 records with their genuine (older) checkpoint are a valid export of
    # the log as it was; only an auditor holding the newer checkpoint can tell.
    old_lines = [
        *log.lines[: OLD_SIZE + 1],
        canonicalize({"checkpoint": log.old_checkpoint}).decode(),
    ]
    assert log.verify(old_lines).ok
    report = log.verify(old_lines, older_checkpoint=log.checkpoint)
    assert not report.ok
    messages = " | ".join(p.message for p in report.problems)
    assert "older checkpoint has 1000 records, the export only 500" in messages
    assert "dated after the current one" in messages


def _rewrite(log: Log, seq: int, key: Ed25519PrivateKey) -> list[str]:
    """Change one record, recompute the whole tree and sign a new checkpoint with ``key``."""
    records = list(log.records)
    records[seq] = dict(records[seq], result={"status": "answered", "coverage": 0.99})
    tree = CompactRange()
    for record in records:
        tree.append(leaf_hash(canonicalize(record)))
    body = format_checkpoint(ORIGIN, N_RECORDS, tree.root(), SIGNED_AT)
    return list(export_lines(TENANT, ORIGIN, records, sign_checkpoint(body, key)))


def test_rewrite_signed_by_an_impostor_is_detected(log: Log) -> None:
    lines = _rewrite(log, 123, Ed25519PrivateKey.generate())
    report = log.verify(lines, older_checkpoint=log.old_checkpoint)
    messages = [p.message for p in report.problems]
    assert any("checkpoint carries no signature by the given key" in m for m in messages)
    assert "the first 500 records do not match the older checkpoint" in messages
    # An unsigned recomputed root (body only) is refused outright.
    body_only = lines[-1].split("\\n\\n")[0] + '\\n"}'
    report = log.verify([*lines[:-1], body_only])
    assert any("checkpoint rejected" in p.message for p in report.problems)


def test_rewrite_with_a_stolen_key_is_caught_by_the_older_checkpoint(log: Log) -> None:
    lines = _rewrite(log, 123, log.key)
    assert log.verify(lines).ok  # the stolen key makes the rewrite self-consistent ...
    report = log.verify(lines, older_checkpoint=log.old_checkpoint)
    assert [p.message for p in report.problems] == [
        "the first 500 records do not match the older checkpoint"
    ]
    # ... and the consistency proof published with the honest log does not fit it.
    report = log.verify(lines, older_checkpoint=log.old_checkpoint, older_proof=log.proof)
    assert "consistency proof from the older checkpoint does not verify" in [
        p.message for p in report.problems
    ]
    # Limit, stated honestly: a rewrite after the older checkpoint's size, re-signed
    # with the real key, is indistinguishable from an honest log without a newer
    # checkpoint or a witness.
    later = _rewrite(log, 800, log.key)
    assert log.verify(later, older_checkpoint=log.old_checkpoint).ok


def test_consistency_proof_mismatch_is_reported(log: Log) -> None:
    bad = [*log.proof[:-1], bytes(32)]
    report = log.verify(log.lines, older_checkpoint=log.old_checkpoint, older_proof=bad)
    assert [p.message for p in report.problems] == [
        "consistency proof from the older checkpoint does not verify"
    ]


def test_inclusion_of_single_records(log: Log) -> None:
    for seq in (0, 1, 499, 500, 998, 999):
        proof = inclusion_proof(log.leaves, seq)
        cp = verify_record_inclusion(log.records[seq], seq, proof, log.checkpoint, log.public)
        assert cp.size == N_RECORDS
        with pytest.raises(ValueError, match="not leaf"):
            verify_record_inclusion(
                log.records[seq], (seq + 1) % N_RECORDS, proof, log.checkpoint, log.public
            )
        changed = dict(log.records[seq], kind="edited")
        with pytest.raises(ValueError, match="not leaf"):
            verify_record_inclusion(changed, seq, proof, log.checkpoint, log.public)


def test_header_and_structure_problems(log: Log) -> None:
    def problems(lines: list[str], **kwargs: Any) -> str:
        report = log.verify(lines, **kwargs)
        assert not report.ok
        return " | ".join(f"{p.line}: {p.message}" for p in report.problems)

    header = log.lines[0]
    assert "export is empty" in problems([])
    with pytest.raises(TypeError, match="iterable of lines"):
        log.verify("\n".join(log.lines))
    assert "unknown export format" in problems(
        [header.replace("export/1", "export/2"), *log.lines[1:]]
    )
    assert "1: tenant 'acme'" in problems([header.replace(f'"{TENANT}"', '"acme"'), *log.lines[1:]])
    assert "1: header origin" in problems(
        [header.replace(f'"{ORIGIN}"', '"stichtag/other"'), *log.lines[1:]]
    )
    assert "not the expected 'stichtag/acme'" in problems(
        log.lines, expected_origin="stichtag/acme"
    )
    assert "second checkpoint line" in problems([*log.lines, log.lines[-1]])
    assert "record after the checkpoint" in problems([*log.lines, log.lines[5]])
    assert "duplicate member name" in problems(
        [*log.lines[:3], log.lines[3].replace('{"record":', '{"seq":2,"record":'), *log.lines[4:]]
    )
    assert "older checkpoint rejected" in problems(
        log.lines, older_checkpoint=log.old_checkpoint.replace("500", "501", 1)
    )
    assert "without a valid older checkpoint" in problems(log.lines, older_proof=log.proof)
    nan_record = '{"record":{"x":NaN},"seq":0}'
    assert "NaN is not valid JSON" in problems([header, nan_record, log.lines[-1]])
    # A blank line changes no content: a notice only.
    report = log.verify([*log.lines[:3], "", *log.lines[3:]])
    assert report.ok and [n.message for n in report.notices] == ["blank line"]
