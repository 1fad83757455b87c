"""The store's tree arithmetic: growing a tree from its compact range stores exactly the hashes the stored-hash
layout names (merkle.new_stored_hashes, leaf by leaf), and a table's hash count gives back its size."""

from __future__ import annotations

import hashlib

import pytest

from ledger.core.storage.tree import EMPTY, Tree, size_of
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


def test_the_size_of_a_table_is_the_inverse_of_its_hash_count() -> None:
    counts = {merkle.stored_hash_count(n): n for n in range(5000)}
    for count in range(max(counts) + 1):
        assert size_of(count) == counts.get(count)
    assert size_of(merkle.stored_hash_count(10**6)) == 10**6
