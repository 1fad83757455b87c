"""The store's tree arithmetic: growing a tree from its compact range stores exactly the hashes the stored-hash
layout names (merkle.new_stored_hashes, leaf by leaf), each leaf's share is what its row keeps, and a stored
hash's index names the leaf (row) that keeps it and its place there."""

from __future__ import annotations

import hashlib

import pytest

from ledger.core.storage.tree import EMPTY, Tree, tree_length
from ledger.core.tlog import merkle


def digests(n: int) -> list[str]:
    return [hashlib.sha256(str(i).encode()).hexdigest() for i in range(n)]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 300])
def test_extending_in_any_chunks_stores_what_the_layout_names_leaf_by_leaf(chunk: int) -> None:
    hashes = digests(300)
    stored: list[bytes] = []  # merkle's own growth, one leaf at a time, reading what it stored
    for n, h in enumerate(hashes):
        stored.extend(
            merkle.new_stored_hashes(n, merkle.leaf_hash(bytes.fromhex(h)), lambda ids: [stored[i] for i in ids])
        )
    tree, blob = EMPTY, b""
    for start in range(0, len(hashes), chunk):
        first = merkle.stored_hash_index(0, tree.size)
        tree, part = tree.extend(hashes[start : start + chunk])
        assert first == len(blob) // 32
        blob += part
        # the compact range is the stored hashes compact_range_indexes names, and gives the tree's root
        assert list(tree.compact) == [stored[i] for i in merkle.compact_range_indexes(tree.size)]
        assert merkle.tree_hash(tree.size, lambda ids: [stored[i] for i in ids]) == _root(tree)
    assert [blob[32 * i : 32 * (i + 1)] for i in range(len(blob) // 32)] == stored
    assert len(stored) == merkle.stored_hash_count(300)


def _root(tree: Tree) -> bytes:
    h = tree.compact[-1]
    for left in reversed(tree.compact[:-1]):
        h = merkle.node_hash(left, h)
    return h


def test_each_leaf_keeps_the_hashes_its_append_stored_in_its_row() -> None:
    hashes = digests(600)
    tree, blob = EMPTY.extend(hashes)
    _, per_leaf = EMPTY.extend_raw([bytes.fromhex(h) for h in hashes])
    assert b"".join(per_leaf) == blob
    for n, stored in enumerate(per_leaf):
        assert len(stored) == tree_length(n + 1) == 32 * merkle.hashes_stored_with(n)
        assert stored[:32] == merkle.leaf_hash(bytes.fromhex(hashes[n]))
        first = merkle.stored_hash_index(0, n)
        assert stored == blob[32 * first : 32 * first + len(stored)]
    assert tree.size == 600


def test_a_stored_index_names_the_leaf_that_keeps_it_and_its_place() -> None:
    index = 0
    for n in range(5000):
        for k in range(merkle.hashes_stored_with(n)):
            assert merkle.stored_hash_leaf(index) == (n, k)
            index += 1
    assert index == merkle.stored_hash_count(5000)
    big = merkle.stored_hash_index(0, 10**6)
    assert merkle.stored_hash_leaf(big) == (10**6, 0)
    assert merkle.stored_hash_leaf(big - 1)[0] == 10**6 - 1
    with pytest.raises(ValueError, match="no stored hash"):
        merkle.stored_hash_leaf(-1)
