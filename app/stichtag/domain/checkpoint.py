"""Checkpoint bodies (C2SP tlog-checkpoint) and signed-note framing, without any crypto.

A checkpoint commits to a log's size and root hash. The body is the C2SP form::

    stichtag/<tenant_id>            origin: names the log
    1000                            tree size, ASCII decimal
    rRa8/idLcKFPs...=               root hash, standard base64
    2024-05-01T12:00:00Z            optional extension line: RFC 3339 time of signing, UTC

Our format allows at most this one extension line: the signature covers every line, but
a verifier that met an unknown line could not say what was vouched for, so it refuses.

Signatures use the signed-note form (C2SP signed-note): the body, a blank line, then one
line per signature ``"— <key name> <base64(key id || signature)>"``. For Ed25519 the
4-byte key id is ``SHA-256(key name || "\\n" || 0x01 || 32-byte public key)[:4]``, the
convention of the Go ``note`` package and sumdb, so their tools read our checkpoints.
The signer itself (Ed25519 via ``cryptography``) lives in ``stichtag.audit.signing``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime

ED25519_ALGORITHM = 0x01
"""Signature type byte of Ed25519 in the signed-note key id and verifier key."""

SIGNATURE_PREFIX = "\u2014 "
"""Every signature line starts with an em dash and a space."""

_MAX_SIZE = 2**64 - 1
_MAX_SIGNATURES = 100  # bounds the work spent on an untrusted note
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?([Zz]|[+-]\d{2}:\d{2})"
)


class CheckpointError(ValueError):
    """A checkpoint or signed note is malformed."""


class CheckpointSignatureError(CheckpointError):
    """A checkpoint carries no valid signature by the expected key."""


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """The parsed body of a checkpoint."""

    origin: str
    size: int
    root: bytes
    timestamp: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class NoteSignature:
    """One signature line of a signed note, not yet checked."""

    key_name: str
    key_id: bytes
    signature: bytes


def origin_for_tenant(tenant_id: str) -> str:
    """The origin line of a tenant's run log."""
    return f"stichtag/{tenant_id}"


def _check_origin(origin: str) -> None:
    if not origin or origin != origin.strip() or any(ord(c) < 0x20 or c == "\x7f" for c in origin):
        raise CheckpointError(
            f"origin {origin!r} must be non-empty, without control characters "
            "or surrounding whitespace"
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    """Strict standard base64: padding required, no stray characters, one spelling only."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise CheckpointError(f"{what} is not valid base64") from exc
    if _b64(raw) != text:
        # Unused low bits set: another spelling of the same bytes. Refuse it so that
        # one checkpoint has exactly one text.
        raise CheckpointError(f"{what} is not canonical base64")
    return raw


def format_timestamp(ts: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``; microseconds only when present."""
    if ts.tzinfo is None or ts.utcoffset() is None:
        raise CheckpointError("checkpoint timestamp must be timezone-aware")
    utc = ts.astimezone(UTC)
    # Not strftime: "%Y" drops the zero padding of years before 1000 on glibc.
    text = (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
        f"T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
    )
    if utc.microsecond:
        text += f".{utc.microsecond:06d}"
    return text + "Z"


def parse_timestamp(text: str) -> datetime:
    """Parse an RFC 3339 date-time with an offset (fractions up to microseconds) to UTC."""
    if _RFC3339.fullmatch(text) is None:
        raise CheckpointError(f"{text!r} is not an RFC 3339 date-time")
    try:
        parsed = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError as exc:
        raise CheckpointError(f"{text!r} is not a valid date-time: {exc}") from exc
    return parsed.astimezone(UTC)


def format_checkpoint(
    origin: str, size: int, root: bytes, timestamp: datetime | None = None
) -> str:
    """Render a checkpoint body; every line, including the last, ends with ``\\n``."""
    _check_origin(origin)
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= _MAX_SIZE:
        raise CheckpointError(f"tree size {size!r} must be an integer in [0, 2**64)")
    if not isinstance(root, bytes) or len(root) != 32:
        raise CheckpointError("root hash must be 32 bytes")
    lines = [origin, str(size), _b64(root)]
    if timestamp is not None:
        lines.append(format_timestamp(timestamp))
    return "".join(line + "\n" for line in lines)


def parse_checkpoint(text: str) -> Checkpoint:
    """Parse a checkpoint body (no signatures); strict: it must be exactly what we format."""
    if not text.endswith("\n"):
        raise CheckpointError("checkpoint body must end with a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise CheckpointError("checkpoint body needs origin, tree size and root hash lines")
    if len(lines) > 4:
        raise CheckpointError("checkpoint body has unknown extension lines")
    origin, size_text, root_text = lines[:3]
    _check_origin(origin)
    if _DECIMAL.fullmatch(size_text) is None or int(size_text) > _MAX_SIZE:
        raise CheckpointError(f"tree size {size_text!r} is not a canonical decimal number")
    root = _unb64(root_text, "root hash")
    if len(root) != 32:
        raise CheckpointError(f"root hash is {len(root)} bytes, expected 32")
    timestamp = None
    if len(lines) == 4:
        timestamp = parse_timestamp(lines[3])
        if format_timestamp(timestamp) != lines[3]:
            raise CheckpointError(f"timestamp {lines[3]!r} is not in the canonical UTC form")
    return Checkpoint(origin=origin, size=int(size_text), root=root, timestamp=timestamp)


def check_key_name(name: str) -> None:
    """Key names are non-empty and hold no whitespace and no ``+`` (signed-note rule)."""
    if not name or "+" in name or any(c.isspace() for c in name):
        raise CheckpointError(f"key name {name!r} must be non-empty, without spaces or '+'")


def key_id(key_name: str, public_key_raw: bytes) -> bytes:
    """The 4-byte signed-note key id of an Ed25519 key."""
    check_key_name(key_name)
    material = key_name.encode("utf-8") + b"\n" + bytes([ED25519_ALGORITHM]) + public_key_raw
    return hashlib.sha256(material).digest()[:4]


def verifier_key(key_name: str, public_key_raw: bytes) -> str:
    """The signed-note verifier key string ``name+hex(key id)+base64(0x01 || key)``."""
    kid = key_id(key_name, public_key_raw).hex()
    return f"{key_name}+{kid}+{_b64(bytes([ED25519_ALGORITHM]) + public_key_raw)}"


def format_signature_line(key_name: str, key_id_bytes: bytes, signature: bytes) -> str:
    """One signature line, newline included."""
    check_key_name(key_name)
    if len(key_id_bytes) != 4:
        raise CheckpointError("key id must be 4 bytes")
    return f"{SIGNATURE_PREFIX}{key_name} {_b64(key_id_bytes + signature)}\n"


def split_signed_note(text: str) -> tuple[str, list[NoteSignature]]:
    """Split a signed note into its text (ending in ``\\n``) and its signature lines."""
    cut = text.rfind("\n\n")
    if cut < 0:
        raise CheckpointError("signed note has no blank line before its signatures")
    body, sig_block = text[: cut + 1], text[cut + 2 :]
    if not sig_block.endswith("\n"):
        raise CheckpointError("signed note must end with a newline")
    sig_lines = sig_block[:-1].split("\n")
    if len(sig_lines) > _MAX_SIGNATURES:
        raise CheckpointError(f"signed note has more than {_MAX_SIGNATURES} signatures")
    signatures: list[NoteSignature] = []
    for line in sig_lines:
        if not line.startswith(SIGNATURE_PREFIX):
            raise CheckpointError(f"malformed signature line {line!r}")
        name, sep, blob_text = line[len(SIGNATURE_PREFIX) :].partition(" ")
        if not sep:
            raise CheckpointError(f"malformed signature line {line!r}")
        check_key_name(name)
        blob = _unb64(blob_text, "signature")
        if len(blob) < 5:
            raise CheckpointError("signature is too short to hold a key id")
        signatures.append(NoteSignature(key_name=name, key_id=blob[:4], signature=blob[4:]))
    return body, signatures
