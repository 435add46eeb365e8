"""RFC 6962 / RFC 9162 Merkle tree hashing, proofs and an incremental tree head.

The run log is a standard certificate-transparency style log so that independent tools
(and the published transparency-dev test vectors) can check it: SHA-256, leaves hashed
as ``SHA-256(0x00 || data)``, interior nodes as ``SHA-256(0x01 || left || right)``, the
tree split at the largest power of two smaller than the size (RFC 6962 §2.1).

Verification follows the iterative algorithms of RFC 9162 §2.1.3.2 (inclusion) and
§2.1.4.2 (consistency). Every verifier returns ``False`` for malformed input instead of
raising: a proof from the outside is untrusted data, and "not valid" is the only answer
a caller needs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

HASH_SIZE = 32
"""Length in bytes of every hash in the tree (SHA-256)."""

EMPTY_ROOT = hashlib.sha256(b"").digest()
"""The root of the empty tree: SHA-256 of the empty string (RFC 6962 §2.1)."""

_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"


def leaf_hash(data: bytes) -> bytes:
    """Hash one leaf's data: ``SHA-256(0x00 || data)``."""
    return hashlib.sha256(_LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """Hash two child hashes into their parent: ``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(_NODE_PREFIX + left + right).digest()


def _split(n: int) -> int:
    """Largest power of two strictly smaller than ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


def _subtree_root(leaves: Sequence[bytes], lo: int, hi: int) -> bytes:
    """MTH over ``leaves[lo:hi]`` (non-empty), by the recursive definition of RFC 6962."""
    if hi - lo == 1:
        return leaves[lo]
    k = _split(hi - lo)
    return node_hash(_subtree_root(leaves, lo, lo + k), _subtree_root(leaves, lo + k, hi))


def root(leaf_hashes: Sequence[bytes]) -> bytes:
    """Merkle tree hash (MTH) of a list of leaf hashes; the empty tree hashes to ``EMPTY_ROOT``.

    Written from the recursive definition rather than with ``CompactRange`` so that each
    serves as an independent check of the other in the tests.
    """
    if not leaf_hashes:
        return EMPTY_ROOT
    return _subtree_root(leaf_hashes, 0, len(leaf_hashes))


def _path(m: int, leaves: Sequence[bytes], lo: int, hi: int) -> list[bytes]:
    """PATH(m, D[lo:hi]) of RFC 6962 §2.1.1, ordered from the leaf up to the root."""
    if hi - lo == 1:
        return []
    k = _split(hi - lo)
    if m < k:
        return [*_path(m, leaves, lo, lo + k), _subtree_root(leaves, lo + k, hi)]
    return [*_path(m - k, leaves, lo + k, hi), _subtree_root(leaves, lo, lo + k)]


def inclusion_proof(leaf_hashes: Sequence[bytes], index: int) -> list[bytes]:
    """Audit path for the leaf at ``index`` in the tree of all ``leaf_hashes``.

    Raises ``ValueError`` when ``index`` is outside ``[0, len(leaf_hashes))``.
    """
    if not 0 <= index < len(leaf_hashes):
        raise ValueError(f"leaf index {index} outside tree of size {len(leaf_hashes)}")
    return _path(index, leaf_hashes, 0, len(leaf_hashes))


def _subproof(m: int, leaves: Sequence[bytes], lo: int, hi: int, complete: bool) -> list[bytes]:
    """SUBPROOF(m, D[lo:hi], b) of RFC 6962 §2.1.2."""
    n = hi - lo
    if m == n:
        # The old tree is this whole subtree: its root is needed only when the verifier
        # cannot already know it (i.e. when it is not the old tree's root itself).
        return [] if complete else [_subtree_root(leaves, lo, hi)]
    k = _split(n)
    if m <= k:
        return [*_subproof(m, leaves, lo, lo + k, complete), _subtree_root(leaves, lo + k, hi)]
    return [*_subproof(m - k, leaves, lo + k, hi, False), _subtree_root(leaves, lo, lo + k)]


def consistency_proof(leaf_hashes: Sequence[bytes], old_size: int, new_size: int) -> list[bytes]:
    """Proof that the tree of the first ``old_size`` leaves is a prefix of the first ``new_size``.

    ``leaf_hashes`` must hold at least ``new_size`` leaves. Equal sizes give an empty
    proof. ``old_size == 0 < new_size`` raises ``ValueError``: a proof from the empty tree
    is meaningless (every tree extends it) and RFC 9162 defines none, so the verifier
    rejects any; callers compare against ``EMPTY_ROOT`` instead.
    """
    if not 0 <= old_size <= new_size <= len(leaf_hashes):
        raise ValueError(
            f"need 0 <= old_size ({old_size}) <= new_size ({new_size}) "
            f"<= number of leaves ({len(leaf_hashes)})"
        )
    if old_size == new_size:
        return []
    if old_size == 0:
        raise ValueError("no consistency proof exists from the empty tree")
    return _subproof(old_size, leaf_hashes, 0, new_size, True)


def _all_hashes(items: Sequence[bytes]) -> bool:
    return all(isinstance(h, bytes) and len(h) == HASH_SIZE for h in items)


def verify_inclusion(
    leaf_hash: bytes, index: int, tree_size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """Check an audit path with the algorithm of RFC 9162 §2.1.3.2.

    Rejects wrong hash lengths, ``index >= tree_size``, negative numbers, and proofs with
    missing or extra nodes.
    """
    if not (0 <= index < tree_size):
        return False
    if not _all_hashes([leaf_hash, root, *proof]):
        return False
    fn, sn = index, tree_size - 1
    r = leaf_hash
    for p in proof:
        if sn == 0:
            return False  # more nodes than the path has levels
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            # Skip the levels where this node is the last one and has no right sibling.
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def _same_size_consistent(
    size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    # No hashing happens here, so only equality can be checked. The reference vectors
    # require accepting equal roots of any length for a non-empty tree; the empty tree
    # has exactly one root.
    if proof or old_root != new_root:
        return False
    return size != 0 or old_root == EMPTY_ROOT


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """Check a consistency proof with the algorithm of RFC 9162 §2.1.4.2.

    Edge cases (matching the transparency-dev reference vectors):
    equal sizes hold iff the proof is empty and the roots are equal (for size 0 the root
    must moreover be ``EMPTY_ROOT``); ``old_size == 0 < new_size`` is always rejected,
    since no proof from the empty tree exists; ``old_size > new_size`` is rejected.
    """
    if not 0 <= old_size <= new_size:
        return False
    if old_size == new_size:
        return _same_size_consistent(old_size, old_root, new_root, proof)
    if old_size == 0 or not proof or not _all_hashes([old_root, new_root, *proof]):
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:
        # The old tree is a perfect subtree of the new one: its root is the seed.
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == old_root and sr == new_root


class CompactRange:
    """Incremental tree head: the roots of the perfect subtrees that make up the tree.

    A tree of size n is the concatenation of perfect subtrees, one per set bit of n,
    largest first. Keeping only their roots (``popcount(n) <= log2(n) + 1`` hashes) lets
    a store append a leaf and compute the new root in O(log n) without reading old leaves.
    """

    __slots__ = ("_hashes", "_size")

    def __init__(self) -> None:
        """Start with the empty tree."""
        self._size = 0
        self._hashes: list[bytes] = []

    @property
    def size(self) -> int:
        """Number of leaves appended so far."""
        return self._size

    def append(self, leaf_hash: bytes) -> None:
        """Add one leaf hash at the right edge of the tree."""
        if not (isinstance(leaf_hash, bytes) and len(leaf_hash) == HASH_SIZE):
            raise ValueError("leaf hash must be 32 bytes")
        node = leaf_hash
        s = self._size
        # Each trailing set bit is a perfect subtree of the new node's height: merge them.
        while s & 1:
            node = node_hash(self._hashes.pop(), node)
            s >>= 1
        self._hashes.append(node)
        self._size += 1

    def root(self) -> bytes:
        """Root of the current tree: fold the subtree roots from the right."""
        if not self._hashes:
            return EMPTY_ROOT
        r = self._hashes[-1]
        for h in reversed(self._hashes[:-1]):
            r = node_hash(h, r)
        return r

    def to_list(self) -> list[bytes]:
        """The subtree roots, largest (leftmost) first, for persisting next to ``size``."""
        return list(self._hashes)

    @classmethod
    def from_list(cls, size: int, hashes: Sequence[bytes]) -> CompactRange:
        """Rebuild from a persisted ``size`` and ``to_list()``; checks that they fit together."""
        if size < 0:
            raise ValueError("size must not be negative")
        if len(hashes) != size.bit_count():
            raise ValueError(
                f"a tree of size {size} has {size.bit_count()} subtree roots, got {len(hashes)}"
            )
        if not _all_hashes(hashes):
            raise ValueError("subtree roots must be 32-byte hashes")
        cr = cls()
        cr._size = size
        cr._hashes = list(hashes)
        return cr

    def __repr__(self) -> str:
        return f"CompactRange(size={self._size}, root={self.root().hex()})"
