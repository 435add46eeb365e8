"""Ed25519 keys and checkpoint signatures for the run log.

The signing key lives in a file outside the database (PKCS#8 PEM, mode 0600), so that
whoever can write the database still cannot forge a checkpoint. Checkpoints are signed
as C2SP signed notes; see ``stichtag.domain.checkpoint`` for the text format and key ids.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from stichtag.domain.checkpoint import (
    Checkpoint,
    CheckpointError,
    CheckpointSignatureError,
    format_signature_line,
    key_id,
    parse_checkpoint,
    split_signed_note,
)

_PEM_MARKER = b"-----BEGIN"


class SigningKeyError(ValueError):
    """A key file is missing, unreadable, of the wrong type or too widely readable."""


def _raw_public(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _load_private(path: Path) -> Ed25519PrivateKey:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        # Like ssh: a key others can read may already be someone else's key.
        raise SigningKeyError(
            f"signing key {path} has mode {mode:04o}; it must not be accessible to group or "
            f"others (chmod 600 {path})"
        )
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(f"{path} is not an unencrypted PEM private key: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{path} holds a {type(key).__name__}, expected Ed25519")
    return key


def load_or_create_signing_key(path: Path) -> Ed25519PrivateKey:
    """Load the Ed25519 key at ``path``, generating it (mode 0600) if the file is absent.

    Creation is atomic and race-free: the key is written to a private temporary file and
    hard-linked into place, so a concurrent starter either wins or loads the winner's key,
    and a crash never leaves a half-written key behind.
    """
    if path.exists():
        return _load_private(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # Unique per process and thread: two threads of one server may start signing at once.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o600)  # the umask may only narrow it, but be explicit
            fh.write(pem)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return _load_private(path)  # another process created it first; use theirs
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return key


def public_key_pem(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The SubjectPublicKeyInfo PEM of a key, for handing to auditors."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def load_public_key(pem_or_path: str | bytes | Path) -> Ed25519PublicKey:
    """Load an Ed25519 public key from PEM text/bytes or from a file holding PEM.

    A ``str`` counts as PEM when it contains a ``-----BEGIN`` line, else as a path.
    """
    if isinstance(pem_or_path, Path):
        data = pem_or_path.read_bytes()
    elif isinstance(pem_or_path, bytes):
        data = pem_or_path
    elif _PEM_MARKER.decode() in pem_or_path:
        data = pem_or_path.encode("ascii", "replace")
    else:
        data = Path(pem_or_path).read_bytes()
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError as exc:
        raise SigningKeyError(f"not a PEM public key: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError(f"expected an Ed25519 public key, got {type(key).__name__}")
    return key


def sign_checkpoint(body: str, key: Ed25519PrivateKey, *, key_name: str | None = None) -> str:
    """Sign a checkpoint body; returns the signed note (body, blank line, signature line).

    The body is parsed first so that nothing but a well-formed checkpoint gets signed.
    The key name defaults to the checkpoint's origin, as in the C2SP examples.
    """
    checkpoint = parse_checkpoint(body)
    name = checkpoint.origin if key_name is None else key_name
    kid = key_id(name, _raw_public(key.public_key()))
    signature = key.sign(body.encode("utf-8"))
    return body + "\n" + format_signature_line(name, kid, signature)


def verify_checkpoint(
    text: str, public_key: Ed25519PublicKey, *, key_name: str | None = None
) -> Checkpoint:
    """Check a signed checkpoint against ``public_key``; return its parsed body.

    Signature lines of other keys (e.g. witnesses' cosignatures) are ignored. Raises
    ``CheckpointError`` for a malformed note or body, ``CheckpointSignatureError`` when
    no line is a valid signature by this key (under ``key_name``, when given).
    """
    body, signatures = split_signed_note(text)
    checkpoint = parse_checkpoint(body)
    raw = _raw_public(public_key)
    message = body.encode("utf-8")
    candidates = 0
    for sig in signatures:
        if key_name is not None and sig.key_name != key_name:
            continue
        try:
            expected_id = key_id(sig.key_name, raw)
        except CheckpointError:
            continue
        if sig.key_id != expected_id:
            continue  # signed by some other key
        candidates += 1
        try:
            public_key.verify(sig.signature, message)
        except InvalidSignature:
            continue
        return checkpoint
    if candidates:
        raise CheckpointSignatureError("checkpoint signature does not verify with the given key")
    raise CheckpointSignatureError("checkpoint carries no signature by the given key")


class FileSigner:
    """The Signer adapter: an Ed25519 key in a file outside the database (mode 0600,
    created on first use), and the public keys of a declared rotation
    (``STICHTAG_SIGNING_KEY_PREVIOUS``) whose signed heads this node may extend."""

    def __init__(self, key_path: Path, previous: tuple[Ed25519PublicKey, ...] = ()) -> None:
        self.key_path = key_path
        self.previous = previous
        self._key: Ed25519PrivateKey | None = None

    @property
    def key(self) -> Ed25519PrivateKey:
        """The signing key, loaded (or created) on first use; never in the database."""
        if self._key is None:
            self._key = load_or_create_signing_key(self.key_path)
        return self._key

    @property
    def name(self) -> str:
        """Where the key lives, for error messages (never the key itself)."""
        return str(self.key_path)

    def sign(self, body: str) -> str:
        """The signed note of a checkpoint body."""
        return sign_checkpoint(body, self.key)

    def public_key_pem(self) -> str:
        """PEM of the verification key."""
        return public_key_pem(self.key)

    def signed_by_us(self, note: str) -> bool:
        """Whether this key, or a declared previous one, signed ``note``."""
        for public in (self.key.public_key(), *self.previous):
            try:
                verify_checkpoint(note, public)
                return True
            except CheckpointError:
                continue
        return False
