"""RFC 6962 / RFC 9162 Merkle tree: known answers, exhaustive small trees, mutations."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stichtag.domain.merkle import (
    EMPTY_ROOT,
    CompactRange,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root,
    verify_consistency,
    verify_inclusion,
)

# The eight leaf inputs of the certificate-transparency reference test tree and the
# roots of its prefixes of size 1..8 (published with the CT reference implementation).
CT_INPUTS = [
    b"",
    b"\x00",
    b"\x10",
    b"\x20\x21",
    b"\x30\x31",
    b"\x40\x41\x42\x43",
    b"\x50\x51\x52\x53\x54\x55\x56\x57",
    bytes(range(0x60, 0x70)),
]
CT_ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]

MAX_LEAVES = 70
LEAVES = [leaf_hash(i.to_bytes(2, "big")) for i in range(MAX_LEAVES)]
ROOTS = [root(LEAVES[:n]) for n in range(MAX_LEAVES + 1)]


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def inclusion_shape(m: int, n: int) -> list[str]:
    """Which side each audit-path node sits on, from the RFC 6962 PATH definition.

    RFC 9162 verification depends on (index, size) only through this shape, so two
    (index, size) pairs with the same shape are indistinguishable to any verifier.
    """
    if n == 1:
        return []
    k = _split(n)
    if m < k:
        return [*inclusion_shape(m, k), "R"]
    return [*inclusion_shape(m - k, n - k), "L"]


def consistency_shape(m: int, n: int, complete: bool = True) -> list[str]:
    """The same for SUBPROOF: sides of the proof nodes, and whether a seed node leads."""
    if m == n:
        return [] if complete else ["seed"]
    k = _split(n)
    if m <= k:
        return [*consistency_shape(m, k, complete), "R"]
    return [*consistency_shape(m - k, n - k, False), "L"]


def test_hash_prefixes_are_rfc6962() -> None:
    assert leaf_hash(b"abc") == hashlib.sha256(b"\x00abc").digest()
    assert (
        node_hash(b"l" * 32, b"r" * 32) == hashlib.sha256(b"\x01" + b"l" * 32 + b"r" * 32).digest()
    )
    assert EMPTY_ROOT.hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert root([]) == EMPTY_ROOT


def test_reference_tree_roots() -> None:
    leaves = [leaf_hash(data) for data in CT_INPUTS]
    cr = CompactRange()
    for n, expected in enumerate(CT_ROOTS, start=1):
        assert root(leaves[:n]).hex() == expected
        cr.append(leaves[n - 1])
        assert cr.root().hex() == expected


def test_all_proofs_verify_up_to_70_leaves() -> None:
    for n in range(1, MAX_LEAVES + 1):
        for i in range(n):
            assert verify_inclusion(LEAVES[i], i, n, inclusion_proof(LEAVES[:n], i), ROOTS[n])
        for m in range(1, n + 1):
            proof = consistency_proof(LEAVES, m, n)
            assert verify_consistency(m, n, ROOTS[m], ROOTS[n], proof), (m, n)


def test_proof_lengths_are_logarithmic() -> None:
    # A wrong recursion still "verifies" its own proofs; the length pins the shape.
    for n in range(1, MAX_LEAVES + 1):
        for i in range(n):
            assert len(inclusion_proof(LEAVES[:n], i)) == len(inclusion_shape(i, n))
        for m in range(1, n):
            shape = consistency_shape(m, n)
            assert len(consistency_proof(LEAVES, m, n)) == len(shape)
            assert len(shape) <= 2 * (n - 1).bit_length()


def test_degenerate_consistency_cases() -> None:
    assert consistency_proof(LEAVES, 5, 5) == []
    assert verify_consistency(5, 5, ROOTS[5], ROOTS[5], [])
    assert not verify_consistency(5, 5, ROOTS[5], ROOTS[6], [])
    assert not verify_consistency(5, 5, ROOTS[5], ROOTS[5], [ROOTS[1]])
    assert verify_consistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [])
    assert not verify_consistency(0, 0, ROOTS[1], ROOTS[1], [])
    # From the empty tree there is no proof; any offered one is refused.
    assert not verify_consistency(0, 3, EMPTY_ROOT, ROOTS[3], [])
    assert not verify_consistency(0, 3, EMPTY_ROOT, ROOTS[3], [ROOTS[3]])
    with pytest.raises(ValueError, match="empty tree"):
        consistency_proof(LEAVES, 0, 3)
    assert not verify_consistency(4, 3, ROOTS[4], ROOTS[3], [])
    with pytest.raises(ValueError):
        consistency_proof(LEAVES, 4, 3)
    with pytest.raises(ValueError):
        consistency_proof(LEAVES[:3], 1, 4)


def test_inclusion_rejects_malformed_input() -> None:
    proof = inclusion_proof(LEAVES[:5], 2)
    assert verify_inclusion(LEAVES[2], 2, 5, proof, ROOTS[5])
    assert not verify_inclusion(LEAVES[2], 5, 5, proof, ROOTS[5])
    assert not verify_inclusion(LEAVES[2], -1, 5, proof, ROOTS[5])
    assert not verify_inclusion(LEAVES[2], 0, 0, [], EMPTY_ROOT)
    assert not verify_inclusion(LEAVES[2][:31], 2, 5, proof, ROOTS[5])
    assert not verify_inclusion(LEAVES[2], 2, 5, proof, ROOTS[5] + b"\x00")
    assert not verify_inclusion(LEAVES[2], 2, 5, [*proof[:-1], proof[-1][:31]], ROOTS[5])
    with pytest.raises(ValueError):
        inclusion_proof(LEAVES[:5], 5)
    # A one-leaf tree: the leaf hash is the root and the proof is empty.
    assert verify_inclusion(LEAVES[0], 0, 1, [], LEAVES[0])
    assert not verify_inclusion(LEAVES[0], 0, 1, [LEAVES[1]], LEAVES[0])


sizes = st.integers(min_value=1, max_value=MAX_LEAVES)


def _flip(node: bytes, bit: int) -> bytes:
    data = bytearray(node)
    data[bit // 8] ^= 1 << (bit % 8)
    return bytes(data)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), n=sizes)
def test_any_change_to_an_inclusion_proof_is_rejected(data: st.DataObject, n: int) -> None:
    i = data.draw(st.integers(0, n - 1))
    proof = inclusion_proof(LEAVES[:n], i)
    kind = data.draw(st.sampled_from(["bit", "drop", "add", "swap", "leaf", "root"]))
    if kind == "bit" and proof:
        at = data.draw(st.integers(0, len(proof) - 1))
        proof[at] = _flip(proof[at], data.draw(st.integers(0, 255)))
    elif kind == "drop" and proof:
        del proof[data.draw(st.integers(0, len(proof) - 1))]
    elif kind == "swap" and len(set(proof)) > 1:
        a, b = data.draw(
            st.lists(st.integers(0, len(proof) - 1), min_size=2, max_size=2, unique=True)
        )
        if proof[a] == proof[b]:
            return
        proof[a], proof[b] = proof[b], proof[a]
    elif kind == "leaf":
        assert not verify_inclusion(LEAVES[(i + 1) % MAX_LEAVES], i, n, proof, ROOTS[n])
        return
    elif kind == "root":
        assert not verify_inclusion(LEAVES[i], i, n, proof, ROOTS[n - 1] if n > 1 else EMPTY_ROOT)
        return
    else:  # "add", or a kind that does not apply to an empty proof
        at = data.draw(st.integers(0, len(proof)))
        proof.insert(at, data.draw(st.sampled_from([*LEAVES[:3], ROOTS[n], bytes(32)])))
    assert not verify_inclusion(LEAVES[i], i, n, proof, ROOTS[n])


@settings(max_examples=400, deadline=None)
@given(data=st.data(), n=sizes)
def test_changed_index_or_size_is_rejected_unless_indistinguishable(
    data: st.DataObject, n: int
) -> None:
    """A changed index is always rejected. A changed size is rejected unless it gives the
    same path shape: the RFC 9162 algorithm (like every implementation of it) reads the
    size only through that shape, e.g. leaf 0 of 4 and of 3 have shape [R, R]. Sizes come
    from the signed checkpoint, so this is no attack surface; we pin the exact behaviour.
    """
    i = data.draw(st.integers(0, n - 1))
    proof = inclusion_proof(LEAVES[:n], i)
    other_i = data.draw(st.integers(0, MAX_LEAVES).filter(lambda x: x != i))
    assert not verify_inclusion(LEAVES[i], other_i, n, proof, ROOTS[n])
    other_n = data.draw(st.integers(0, 2 * MAX_LEAVES).filter(lambda x: x != n))
    same_shape = i < other_n and inclusion_shape(i, other_n) == inclusion_shape(i, n)
    assert verify_inclusion(LEAVES[i], i, other_n, proof, ROOTS[n]) == same_shape


@settings(max_examples=400, deadline=None)
@given(data=st.data(), n=st.integers(2, MAX_LEAVES))
def test_any_change_to_a_consistency_proof_is_rejected(data: st.DataObject, n: int) -> None:
    m = data.draw(st.integers(1, n - 1))
    proof = consistency_proof(LEAVES, m, n)
    kind = data.draw(st.sampled_from(["bit", "drop", "add", "old_root", "new_root", "sizes"]))
    if kind == "bit":
        at = data.draw(st.integers(0, len(proof) - 1))
        proof[at] = _flip(proof[at], data.draw(st.integers(0, 255)))
    elif kind == "drop":
        del proof[data.draw(st.integers(0, len(proof) - 1))]
    elif kind == "add":
        at = data.draw(st.integers(0, len(proof)))
        proof.insert(at, data.draw(st.sampled_from([*LEAVES[:3], ROOTS[m], bytes(32)])))
    elif kind == "old_root":
        assert not verify_consistency(m, n, ROOTS[m - 1] if m > 1 else LEAVES[1], ROOTS[n], proof)
        return
    elif kind == "new_root":
        assert not verify_consistency(m, n, ROOTS[m], ROOTS[n - 1], proof)
        return
    else:
        # Sizes are read only through the proof's shape (see the inclusion test).
        m2 = data.draw(st.integers(0, MAX_LEAVES))
        n2 = data.draw(st.integers(0, 2 * MAX_LEAVES))
        if (m2, n2) == (m, n):
            return
        same_shape = 0 < m2 < n2 and consistency_shape(m2, n2) == consistency_shape(m, n)
        assert verify_consistency(m2, n2, ROOTS[m], ROOTS[n], proof) == same_shape
        return
    assert not verify_consistency(m, n, ROOTS[m], ROOTS[n], proof)


@settings(max_examples=60, deadline=None)
@given(data=st.lists(st.binary(max_size=8), max_size=300))
def test_compact_range_matches_recursive_root(data: list[bytes]) -> None:
    leaves = [leaf_hash(d) for d in data]
    cr = CompactRange()
    assert cr.root() == EMPTY_ROOT
    for n, leaf in enumerate(leaves, start=1):
        cr.append(leaf)
        # Persist and restore at every step, as the store does between appends.
        cr = CompactRange.from_list(cr.size, cr.to_list())
        assert cr.size == n
        assert len(cr.to_list()) == n.bit_count()
    assert cr.root() == root(leaves)


def test_compact_range_refuses_inconsistent_state() -> None:
    cr = CompactRange()
    for leaf in LEAVES[:6]:
        cr.append(leaf)
    assert cr.to_list() == [root(LEAVES[:4]), root(LEAVES[4:6])]
    with pytest.raises(ValueError, match="subtree roots"):
        CompactRange.from_list(7, cr.to_list())
    with pytest.raises(ValueError, match="32-byte"):
        CompactRange.from_list(6, [b"x", b"y"])
    with pytest.raises(ValueError):
        CompactRange.from_list(-1, [])
    with pytest.raises(ValueError):
        cr.append(b"short")
    assert CompactRange.from_list(0, []).root() == EMPTY_ROOT
