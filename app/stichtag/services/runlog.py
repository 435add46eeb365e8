"""The per-tenant, append-only Merkle run log with signed checkpoints (docs/architecture.md §8).

Appends happen in the transaction that stores the run: the tenant's log head row is
locked, the record gets the next sequence number, its leaf hash is computed over the
canonical JSON (RFC 8785) of exactly what is stored, the head's compact range advances in
O(log n), and a new checkpoint is signed. Proofs and exports read the stored leaves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from uuid import UUID

from stichtag.audit.export import export_lines
from stichtag.domain import merkle
from stichtag.domain.canonical_json import canonicalize
from stichtag.domain.checkpoint import format_checkpoint, origin_for_tenant
from stichtag.domain.errors import Invalid
from stichtag.domain.records import LogHead
from stichtag.domain.sealing import seal
from stichtag.ports import Clock, RunStore, Signer, UnitOfWork


def normalized(record: dict[str, Any]) -> dict[str, Any]:
    """The record as the database will return it (tuples become lists, and so on)."""
    return json.loads(json.dumps(record, allow_nan=False))  # type: ignore[no-any-return]


class SigningKeyMismatchError(RuntimeError):
    """This node's signing key did not sign the log head it is about to extend."""


class RunLog:
    """Appends, checkpoints, proofs and exports of tenants' run logs.

    Several server nodes share one database and therefore one log per tenant, so they
    must sign with one key: a node whose key did not sign the stored head (a second node
    that generated its own ``signing.key``, say) refuses to append or to hand out a
    checkpoint, instead of leaving a log whose checkpoints verify with no single key.
    ``previous`` lists the public keys of a deliberate rotation (``STICHTAG_SIGNING_KEY_PREVIOUS``):
    a head signed by one of them may be extended, and from then on carries the new key.
    """

    def __init__(self, store: RunStore, signer: Signer, clock: Clock) -> None:
        self.store = store
        self.signer = signer
        self.clock = clock

    def public_key(self) -> str:
        """PEM of the checkpoint verification key."""
        return self.signer.public_key_pem()

    def _sign(self, tenant_id: UUID, size: int, root: bytes) -> str:
        body = format_checkpoint(origin_for_tenant(str(tenant_id)), size, root,
                                 self.clock.now().replace(microsecond=0))
        return self.signer.sign(body)

    def check_signer(self, tenant_id: UUID, stored: str) -> None:
        """Raise ``SigningKeyMismatchError`` unless our key (or a declared previous one) signed
        the stored head checkpoint; an empty log has no signer yet."""
        if not stored or self.signer.signed_by_us(stored):
            return
        raise SigningKeyMismatchError(
            f"the run log of tenant {tenant_id} is signed by another key than this node's "
            f"({self.signer.name}); every node must use the same STICHTAG_SIGNING_KEY, and a "
            "rotation names the old public key in STICHTAG_SIGNING_KEY_PREVIOUS")

    def observe(self, uow: UnitOfWork, known_at: datetime) -> datetime:
        """Before a run to be recorded reads at ``known_at``: move the tenant's transaction
        clock there (never back) in its own unit of work, so no import can later place a
        change into the past this run sees (docs/architecture.md §3.6). Taken before the
        read, not with the append, so an import or a write in flight cannot slip between
        the run's read and its record. ``known_at`` must not lie after now."""
        if known_at > self.clock.now():
            raise Invalid("known_at", "must not be after the server's now")
        return uow.log.observe(known_at)

    def append(self, uow: UnitOfWork, tenant_id: UUID, *, run_id: UUID, kind: str,
               key_id: str, record: dict[str, Any]) -> tuple[int, str]:
        """Store ``record`` as the next leaf in the unit of work; (seq, signed checkpoint).

        Version text the record quotes is sealed first: the leaf hashes a salted
        commitment in its place, the text is kept beside it where an erasure can delete
        it (docs/audit.md, "Sealed texts")."""
        stored, texts = seal(normalized(record))
        leaf = merkle.leaf_hash(canonicalize(stored))
        head = uow.log.lock_head(merkle.EMPTY_ROOT)
        self.check_signer(tenant_id, head.checkpoint)
        tree = merkle.CompactRange.from_list(head.size, head.frontier)
        tree.append(leaf)
        root = tree.root()
        checkpoint = self._sign(tenant_id, tree.size, root)
        uow.log.insert_leaf(run_id=run_id, kind=kind, key_id=key_id, record=stored,
                            seq=head.size, leaf=leaf, texts=texts)
        uow.log.set_head(LogHead(size=tree.size, root=root, frontier=tree.to_list(),
                                 checkpoint=checkpoint))
        return head.size, checkpoint

    def head(self, tenant_id: UUID) -> tuple[int, bytes, str]:
        """(size, root, signed checkpoint) of the tenant's log; an empty log is signed too."""
        row = self.store.log_head(tenant_id)
        if row is None or not row.checkpoint:
            return 0, merkle.EMPTY_ROOT, self._sign(tenant_id, 0, merkle.EMPTY_ROOT)
        return row.size, row.root, row.checkpoint

    def checkpoint(self, tenant_id: UUID) -> str:
        """A freshly signed checkpoint of the current head (on demand)."""
        size, root, signed = self.head(tenant_id)
        self.check_signer(tenant_id, signed)
        return self._sign(tenant_id, size, root)

    def _leaves(self, tenant_id: UUID, size: int) -> list[bytes]:
        return self.store.log_leaves(tenant_id, size)

    def inclusion(self, tenant_id: UUID, *, seq: int, size: int | None = None
                  ) -> tuple[int, list[bytes], bytes, str]:
        """(tree size, audit path, leaf hash, the head's signed checkpoint) proving leaf
        ``seq`` in the tree of ``size``."""
        current, _, signed = self.head(tenant_id)
        size = current if size is None else size
        if not 0 < size <= current:
            raise Invalid("size", f"must be between 1 and the log size {current}")
        if not 0 <= seq < size:
            raise Invalid("seq", f"must be between 0 and {size - 1}")
        leaves = self._leaves(tenant_id, size)
        return size, merkle.inclusion_proof(leaves, seq), leaves[seq], signed

    def consistency(self, tenant_id: UUID, *, old: int, new: int | None = None
                    ) -> tuple[int, list[bytes], str]:
        """(new size, proof, the head's signed checkpoint) that the tree of ``old`` leaves
        is a prefix of ``new``."""
        current, _, signed = self.head(tenant_id)
        new = current if new is None else new
        if not 0 < old <= new <= current:
            raise Invalid("old", f"need 0 < old <= new <= log size {current}")
        return new, merkle.consistency_proof(self._leaves(tenant_id, new), old, new), signed

    def export(self, tenant_id: UUID) -> Iterator[str]:
        """The export lines: header, every record from seq 0, the signed checkpoint.

        The checkpoint is signed now for the exported tree, not taken from the head: the
        head's was signed at the last append, and a checkpoint an auditor fetched after
        that (same tree, later time) would make this export look like a rollback.
        """
        size, root, stored = self.head(tenant_id)
        self.check_signer(tenant_id, stored)
        checkpoint = self._sign(tenant_id, size, root)
        entries = self.store.log_entries(tenant_id, size)
        return export_lines(str(tenant_id), origin_for_tenant(str(tenant_id)),
                            [r for r, _ in entries], checkpoint,
                            texts=[t for _, t in entries])
