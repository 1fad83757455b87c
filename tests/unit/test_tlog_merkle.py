"""The Merkle tree module against a straight transcription of RFC 9162 §2.1 (MTH, PATH, PROOF, SUBPROOF): the
stored-hash layout gives the same roots and proofs at every size and index, every proof verifies, and a proof
with any one hash, index or size changed does not."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.tlog import merkle


def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves: list[bytes]) -> bytes:
    n = len(leaves)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return merkle.leaf_hash(leaves[0])
    k = _k(n)
    return merkle.node_hash(mth(leaves[:k]), mth(leaves[k:]))


def path(m: int, leaves: list[bytes]) -> list[bytes]:
    n = len(leaves)
    if n == 1:
        return []
    k = _k(n)
    if m < k:
        return [*path(m, leaves[:k]), mth(leaves[k:])]
    return [*path(m - k, leaves[k:]), mth(leaves[:k])]


def subproof(m: int, leaves: list[bytes], b: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if b else [mth(leaves)]
    k = _k(n)
    if m <= k:
        return [*subproof(m, leaves[:k], b), mth(leaves[k:])]
    return [*subproof(m - k, leaves[k:], False), mth(leaves[:k])]


class Tree:
    """A tree kept the way the store keeps it: stored hashes appended leaf by leaf."""

    def __init__(self) -> None:
        self.stored: list[bytes] = []
        self.size = 0
        self.reads = 0

    def read(self, indexes):  # type: ignore[no-untyped-def]
        self.reads += 1
        return [self.stored[i] for i in indexes]

    def append(self, data: bytes) -> None:
        assert len(self.stored) == merkle.stored_hash_index(0, self.size)
        self.stored.extend(merkle.new_stored_hashes(self.size, merkle.leaf_hash(data), self.read))
        self.size += 1
        assert len(self.stored) == merkle.stored_hash_count(self.size)


LEAVES = [f"leaf {i}".encode() for i in range(70)]


@pytest.fixture(scope="module")
def grown() -> list[Tree]:
    """trees[n] holds the first n leaves."""
    trees = []
    tree = Tree()
    for n in range(len(LEAVES) + 1):
        snapshot = Tree()
        snapshot.stored, snapshot.size = list(tree.stored), tree.size
        trees.append(snapshot)
        if n < len(LEAVES):
            tree.append(LEAVES[n])
    return trees


def test_roots_match_the_rfc_at_every_size(grown: list[Tree]) -> None:
    for n, tree in enumerate(grown):
        assert merkle.tree_hash(n, tree.read) == mth(LEAVES[:n])
    assert merkle.tree_hash(0, grown[0].read) == merkle.EMPTY_ROOT


def test_inclusion_proofs_match_the_rfc_and_verify(grown: list[Tree]) -> None:
    for n in range(1, len(LEAVES) + 1):
        tree, root = grown[n], mth(LEAVES[:n])
        for m in range(n):
            proof = merkle.prove_inclusion(m, n, tree.read)
            assert proof == path(m, LEAVES[:n])
            assert len(proof) <= (n - 1).bit_length()  # at most ⌈log2 n⌉ hashes
            merkle.verify_inclusion(m, n, merkle.leaf_hash(LEAVES[m]), proof, root)


def test_consistency_proofs_match_the_rfc_and_verify(grown: list[Tree]) -> None:
    for n in range(1, len(LEAVES) + 1):
        tree, root = grown[n], mth(LEAVES[:n])
        for m in range(1, n + 1):
            proof = merkle.prove_consistency(m, n, tree.read)
            assert proof == subproof(m, LEAVES[:n], True)
            merkle.verify_consistency(m, n, proof, mth(LEAVES[:m]), root)


def test_a_proof_reads_the_store_once(grown: list[Tree]) -> None:
    tree = grown[len(LEAVES)]
    tree.reads = 0
    merkle.prove_inclusion(13, len(LEAVES), tree.read)
    merkle.prove_consistency(13, len(LEAVES), tree.read)
    merkle.tree_hash(len(LEAVES), tree.read)
    assert tree.reads == 3


def _flip(proof: list[bytes], i: int) -> list[bytes]:
    bad = list(proof)
    bad[i] = bytes([bad[i][0] ^ 1]) + bad[i][1:]
    return bad


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_tampered_inclusion_proofs_fail(grown: list[Tree], data: st.DataObject) -> None:
    n = data.draw(st.integers(2, len(LEAVES)))
    m = data.draw(st.integers(0, n - 1))
    tree, root, leaf = grown[n], mth(LEAVES[:n]), merkle.leaf_hash(LEAVES[m])
    proof = merkle.prove_inclusion(m, n, tree.read)
    tamper = data.draw(st.sampled_from(["hash", "index", "size", "drop", "extra", "leaf"]))
    args: tuple = (m, n, leaf, proof, root)
    if tamper == "hash":
        args = (m, n, leaf, _flip(proof, data.draw(st.integers(0, len(proof) - 1))), root)
    elif tamper == "index":
        args = ((m + data.draw(st.integers(1, n - 1))) % n, n, leaf, proof, root)
    elif tamper == "size":
        # another size whose path from leaf m has another length (one of the same shape would be a true claim
        # about some other tree, which no verifier can tell from this one)
        sizes = [s for s in range(m + 1, 4 * len(LEAVES)) if len(path(m, [b""] * s)) != len(proof)]
        args = (m, data.draw(st.sampled_from(sizes)), leaf, proof, root)
    elif tamper == "drop":
        args = (m, n, leaf, proof[:-1], root)
    elif tamper == "extra":
        args = (m, n, leaf, [*proof, root], root)
    else:
        args = (m, n, merkle.leaf_hash(LEAVES[(m + 1) % n]), proof, root)
    with pytest.raises(merkle.ProofError):
        merkle.verify_inclusion(*args)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_tampered_consistency_proofs_fail(grown: list[Tree], data: st.DataObject) -> None:
    n = data.draw(st.integers(2, len(LEAVES)))
    m = data.draw(st.integers(1, n - 1))
    tree, root, old = grown[n], mth(LEAVES[:n]), mth(LEAVES[:m])
    proof = merkle.prove_consistency(m, n, tree.read)
    tamper = data.draw(st.sampled_from(["hash", "old", "size", "drop", "extra", "root"]))
    args: tuple = (m, n, proof, old, root)
    if tamper == "hash":
        args = (m, n, _flip(proof, data.draw(st.integers(0, len(proof) - 1))), old, root)
    elif tamper == "old":
        args = (m, n, proof, mth(LEAVES[1 : m + 1]), root)
    elif tamper == "size":
        sizes = [s for s in range(1, n) if s != m and len(subproof(s, [b""] * n, True)) != len(proof)]
        args = (data.draw(st.sampled_from(sizes)), n, proof, old, root) if sizes else (m, n, _flip(proof, 0), old, root)
    elif tamper == "drop":
        args = (m, n, proof[:-1], old, root)
    elif tamper == "extra":
        args = (m, n, [*proof, root], old, root)
    else:
        args = (m, n, proof, old, _flip([root], 0)[0])
    with pytest.raises(merkle.ProofError):
        merkle.verify_consistency(*args)


def test_a_rewritten_leaf_breaks_consistency_with_the_old_root() -> None:
    original, rewritten = Tree(), Tree()
    for i, leaf in enumerate(LEAVES[:40]):
        original.append(leaf)
        rewritten.append(b"rewritten" if i == 17 else leaf)
    old_root = merkle.tree_hash(30, original.read)
    proof = merkle.prove_consistency(30, 40, rewritten.read)
    with pytest.raises(merkle.ProofError, match="old tree"):
        merkle.verify_consistency(30, 40, proof, old_root, merkle.tree_hash(40, rewritten.read))


@pytest.mark.parametrize(("index", "size"), [(-1, 5), (5, 5), (0, 0)])
def test_no_inclusion_proof_outside_the_tree(index: int, size: int) -> None:
    with pytest.raises(merkle.ProofError, match="not in a tree"):
        merkle.prove_inclusion(index, size, lambda ix: [])


def test_stored_hash_layout_matches_go_sumdb() -> None:
    # Values from golang.org/x/mod/sumdb/tlog's StoredHashIndex: leaves interleave with the subtrees they complete.
    assert [merkle.stored_hash_index(0, n) for n in range(8)] == [0, 1, 3, 4, 7, 8, 10, 11]
    assert [merkle.stored_hash_index(1, n) for n in range(4)] == [2, 5, 9, 12]
    assert merkle.stored_hash_index(2, 0) == 6 and merkle.stored_hash_index(3, 0) == 14
    assert [merkle.stored_hash_count(n) for n in range(1, 9)] == [1, 3, 4, 7, 8, 10, 11, 15]


def test_compact_range_roots_match_the_rfc() -> None:
    acc = merkle.CompactRange()
    assert acc.root() == merkle.EMPTY_ROOT
    for n, leaf in enumerate(LEAVES, 1):
        acc.append(merkle.leaf_hash(leaf))
        assert acc.size == n and acc.root() == mth(LEAVES[:n])
