"""Checkpoint bodies, signed-note signatures and the Ed25519 key file."""

from __future__ import annotations

import base64
import os
import stat
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from stichtag.audit.signing import (
    SigningKeyError,
    load_or_create_signing_key,
    load_public_key,
    public_key_pem,
    sign_checkpoint,
    verify_checkpoint,
)
from stichtag.domain.checkpoint import (
    Checkpoint,
    CheckpointError,
    CheckpointSignatureError,
    format_checkpoint,
    format_signature_line,
    key_id,
    origin_for_tenant,
    parse_checkpoint,
    split_signed_note,
    verifier_key,
)

ROOT = bytes(range(32))
ROOT_B64 = base64.b64encode(ROOT).decode()
WHEN = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)

# The worked example of the Go signed-note package (golang.org/x/mod/sumdb/note docs):
# a deterministic Ed25519 key, its verifier key, a text and the resulting signature line.
GO_SEED = base64.b64decode("AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz")[1:]
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
GO_SIG_LINE = (
    "\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvq"
    "fqdngotpRZb6KE6RyyBwJnAM=\n"
)


def _raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def test_signed_note_interoperates_with_the_go_reference_example() -> None:
    key = Ed25519PrivateKey.from_private_bytes(GO_SEED)
    assert verifier_key("PeterNeumann", _raw(key)) == GO_VKEY
    kid = key_id("PeterNeumann", _raw(key))
    assert kid.hex() == "c74f20a3"
    line = format_signature_line("PeterNeumann", kid, key.sign(GO_TEXT.encode()))
    assert line == GO_SIG_LINE
    body, sigs = split_signed_note(GO_TEXT + "\n" + GO_SIG_LINE)
    assert body == GO_TEXT
    assert [(s.key_name, s.key_id) for s in sigs] == [("PeterNeumann", kid)]


def test_format_matches_the_c2sp_layout() -> None:
    body = format_checkpoint("stichtag/acme", 1000, ROOT, WHEN)
    assert body == f"stichtag/acme\n1000\n{ROOT_B64}\n2024-05-01T12:00:00Z\n"
    assert format_checkpoint("stichtag/acme", 0, ROOT, None) == f"stichtag/acme\n0\n{ROOT_B64}\n"
    assert origin_for_tenant("acme") == "stichtag/acme"


def test_parse_round_trips_and_normalizes_time_to_utc() -> None:
    local = WHEN.astimezone(timezone(timedelta(hours=2))).replace(microsecond=250)
    body = format_checkpoint("stichtag/acme", 7, ROOT, local)
    assert "2024-05-01T12:00:00.000250Z" in body
    parsed = parse_checkpoint(body)
    assert parsed == Checkpoint(
        origin="stichtag/acme", size=7, root=ROOT, timestamp=local.astimezone(UTC)
    )
    assert parsed.timestamp is not None and parsed.timestamp.tzinfo is UTC


@settings(max_examples=200, deadline=None)
@given(
    origin=st.text(
        alphabet=st.characters(exclude_categories=["Cc", "Cs", "Zs", "Zl", "Zp"]),
        min_size=1,
        max_size=30,
    ),
    size=st.integers(0, 2**64 - 1),
    root=st.binary(min_size=32, max_size=32),
    ts=st.none() | st.datetimes(timezones=st.just(UTC)),
)
def test_format_parse_round_trip(origin: str, size: int, root: bytes, ts: datetime | None) -> None:
    body = format_checkpoint(origin, size, root, ts)
    assert parse_checkpoint(body) == Checkpoint(origin=origin, size=size, root=root, timestamp=ts)


@pytest.mark.parametrize(
    "body",
    [
        f"stichtag/acme\n10\n{ROOT_B64}",  # no final newline
        f"stichtag/acme\n010\n{ROOT_B64}\n",  # leading zero
        f"stichtag/acme\n+10\n{ROOT_B64}\n",
        f"stichtag/acme\n-1\n{ROOT_B64}\n",
        f"stichtag/acme\n{2**64}\n{ROOT_B64}\n",
        f"stichtag/acme\n10 \n{ROOT_B64}\n",
        "stichtag/acme\n10\n\n",
        f"stichtag/acme\n10\n{ROOT_B64[:-2]}\n",  # unpadded
        f"stichtag/acme\n10\n{base64.b64encode(ROOT[:31]).decode()}\n",  # 31 bytes
        f"stichtag/acme\n10\n{ROOT_B64[:-2]}9=\n",  # unused bits set: a second spelling
        f"stichtag/acme\n10\n{ROOT_B64.replace('A', '-')}\n",
        f"\n10\n{ROOT_B64}\n",  # empty origin
        f" stichtag/acme\n10\n{ROOT_B64}\n",
        f"stichtag/acme\n10\n{ROOT_B64}\n2024-05-01\n",  # not a date-time
        f"stichtag/acme\n10\n{ROOT_B64}\n2024-05-01T14:00:00+02:00\n",  # not UTC form
        f"stichtag/acme\n10\n{ROOT_B64}\n2024-02-30T12:00:00Z\n",
        f"stichtag/acme\n10\n{ROOT_B64}\n2024-05-01T12:00:00Z\nextra\n",
        "stichtag/acme\n10\n",
    ],
)
def test_malformed_bodies_are_refused(body: str) -> None:
    with pytest.raises(CheckpointError):
        parse_checkpoint(body)


def test_format_refuses_bad_arguments() -> None:
    with pytest.raises(CheckpointError):
        format_checkpoint("a\nb", 1, ROOT, None)
    with pytest.raises(CheckpointError):
        format_checkpoint("stichtag/acme", -1, ROOT, None)
    with pytest.raises(CheckpointError):
        format_checkpoint("stichtag/acme", True, ROOT, None)
    with pytest.raises(CheckpointError):
        format_checkpoint("stichtag/acme", 1, ROOT[:16], None)
    with pytest.raises(CheckpointError, match="timezone-aware"):
        format_checkpoint("stichtag/acme", 1, ROOT, datetime(2024, 1, 1))


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def test_sign_and_verify(key: Ed25519PrivateKey) -> None:
    body = format_checkpoint("stichtag/acme", 3, ROOT, WHEN)
    signed = sign_checkpoint(body, key)
    assert signed.startswith(body + "\n\u2014 stichtag/acme ")
    assert signed.endswith("\n")
    cp = verify_checkpoint(signed, key.public_key())
    assert (cp.origin, cp.size, cp.root, cp.timestamp) == ("stichtag/acme", 3, ROOT, WHEN)
    assert verify_checkpoint(signed, key.public_key(), key_name="stichtag/acme") == cp
    with pytest.raises(CheckpointSignatureError, match="no signature"):
        verify_checkpoint(signed, key.public_key(), key_name="someone-else")


def test_signature_by_another_key_is_refused(key: Ed25519PrivateKey) -> None:
    signed = sign_checkpoint(format_checkpoint("stichtag/acme", 3, ROOT, WHEN), key)
    with pytest.raises(CheckpointSignatureError, match="no signature"):
        verify_checkpoint(signed, Ed25519PrivateKey.generate().public_key())


def test_cosignatures_of_other_keys_are_ignored(key: Ed25519PrivateKey) -> None:
    body = format_checkpoint("stichtag/acme", 3, ROOT, WHEN)
    witness = sign_checkpoint(body, Ed25519PrivateKey.generate(), key_name="witness.example")
    ours = sign_checkpoint(body, key)
    both = witness + ours.removeprefix(body + "\n")
    assert verify_checkpoint(both, key.public_key()).size == 3


def test_every_single_byte_change_of_a_signed_checkpoint_is_refused(
    key: Ed25519PrivateKey,
) -> None:
    signed = sign_checkpoint(format_checkpoint("stichtag/acme", 3, ROOT, WHEN), key).encode()
    for pos in range(len(signed)):
        for delta in (1, 0x20, 0x80):
            tampered = bytearray(signed)
            tampered[pos] ^= delta
            try:
                text = bytes(tampered).decode("utf-8")
            except UnicodeDecodeError:
                continue  # cannot even be handed over as text
            with pytest.raises(CheckpointError):
                verify_checkpoint(text, key.public_key())


def test_forged_signature_with_right_key_id_is_refused(key: Ed25519PrivateKey) -> None:
    body = format_checkpoint("stichtag/acme", 3, ROOT, WHEN)
    kid = key_id("stichtag/acme", _raw(key))
    forged = body + "\n" + format_signature_line("stichtag/acme", kid, bytes(64))
    with pytest.raises(CheckpointSignatureError, match="does not verify"):
        verify_checkpoint(forged, key.public_key())
    short = body + "\n" + format_signature_line("stichtag/acme", kid, b"\x01")
    with pytest.raises(CheckpointSignatureError):
        verify_checkpoint(short, key.public_key())


@pytest.mark.parametrize(
    "note",
    [
        "stichtag/acme\n1\nAAAA\n",  # no signature block
        "stichtag/acme\n\n\u2014 k AAAAAAAA",  # no final newline
        "body\n\n- k AAAAAAAA\n",  # hyphen instead of em dash
        "body\n\n\u2014 kAAAAAAAA\n",
        "body\n\n\u2014 k+1 AAAAAAAA\n",  # '+' is not allowed in key names
        "body\n\n\u2014 k AAAA\n",  # too short for a key id
        "body\n\n\u2014 k AAAAAAA!\n",
    ],
)
def test_malformed_notes_are_refused(note: str) -> None:
    with pytest.raises(CheckpointError):
        split_signed_note(note)


def test_sign_refuses_a_malformed_body(key: Ed25519PrivateKey) -> None:
    with pytest.raises(CheckpointError):
        sign_checkpoint("not a checkpoint\n", key)


def test_key_file_is_created_private_and_reloaded(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "log.pem"
    key = load_or_create_signing_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = load_or_create_signing_key(path)
    assert _raw(again) == _raw(key)
    assert [p.name for p in path.parent.iterdir()] == ["log.pem"]  # no temp file left


def test_key_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.pem"
    load_or_create_signing_key(path)
    os.chmod(path, 0o644)
    with pytest.raises(SigningKeyError, match="chmod 600"):
        load_or_create_signing_key(path)


def test_key_file_of_another_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ec.pem"
    pem = generate_private_key(SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.write_bytes(pem)
    path.chmod(0o600)
    with pytest.raises(SigningKeyError, match="expected Ed25519"):
        load_or_create_signing_key(path)
    path.write_text("garbage")
    with pytest.raises(SigningKeyError, match="not an unencrypted PEM"):
        load_or_create_signing_key(path)


def test_public_key_round_trips_through_pem(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    pem = public_key_pem(key)
    assert pem.startswith("-----BEGIN PUBLIC KEY-----")
    assert public_key_pem(key.public_key()) == pem
    file = tmp_path / "log.pub"
    file.write_text(pem)
    for source in (pem, pem.encode(), file, str(file)):
        loaded = load_public_key(source)
        assert loaded.public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        ) == _raw(key)
    with pytest.raises(SigningKeyError):
        load_public_key("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n")
    ec_pem = (
        generate_private_key(SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    with pytest.raises(SigningKeyError, match="expected an Ed25519"):
        load_public_key(ec_pem)
