"""The RFC 6962 (RFC 9162 §2.1) Merkle tree: hashing, the stored-hash layout, proofs and their verification.

* Leaf hash ``SHA-256(0x00 ‖ data)``, node hash ``SHA-256(0x01 ‖ left ‖ right)``, the empty tree's root
  ``SHA-256("")``; a tree of n leaves splits at the largest power of two below n.
* **Stored hashes** (the layout of Go's ``golang.org/x/mod/sumdb/tlog``, BSD-licensed, whose algorithms this module
  follows): appending leaf n stores its leaf hash and the hash of every complete subtree it completes, at the
  indexes :func:`stored_hash_index` gives, so a log of n leaves holds under 2n hashes, none of which ever changes.
  The root of any size, an inclusion proof and a consistency proof each read O(log n) of them (one batched read
  through a :data:`HashReader`).
* **Verification** follows RFC 9162 §2.1.3.2 (inclusion) and §2.1.4.2 (consistency) to the letter, with the edge
  cases of the transparency-dev/merkle test vectors (a consistency proof from size 0 is refused; equal sizes need
  an empty proof and equal roots). Every failure is a :class:`ProofError` saying why.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

HashReader = Callable[[Sequence[int]], Sequence[bytes]]
"""Returns the stored hashes at the given stored-hash indexes, in the order asked."""


class ProofError(ValueError):
    """A proof that does not hold, or inputs no proof can be checked against; the message says which."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


# --- the stored-hash layout ----------------------------------------------------------------------------------


def stored_hash_index(level: int, n: int) -> int:
    """The index of the hash of the n-th complete subtree of 2**level leaves (level 0: leaf n)."""
    for _ in range(level):
        n = 2 * n + 1
    i = 0
    while n > 0:
        i += n
        n >>= 1
    return i + level


def stored_hash_count(n: int) -> int:
    """How many hashes a tree of n leaves stores."""
    if n == 0:
        return 0
    count = stored_hash_index(0, n - 1) + 1
    i = n - 1
    while i & 1:
        count += 1
        i >>= 1
    return count


def stored_hash_leaf(index: int) -> tuple[int, int]:
    """Which leaf's append stored the hash at ``index``, and where among the hashes it stored (0: the leaf's own
    hash, then its parents): the inverse of :func:`stored_hash_index` over the stored layout."""
    if index < 0:
        raise ValueError(f"no stored hash has index {index}")
    # stored_hash_index(0, n) = 2n − popcount(n), strictly increasing in n: the leaf is the last n where it is at
    # most ``index``, so n lies between index / 2 and (index + popcount(n)) / 2 (a few steps of a search).
    lo, hi = index // 2, min(index, (index + index.bit_length() + 1) // 2)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if 2 * mid - mid.bit_count() <= index:
            lo = mid
        else:
            hi = mid - 1
    return lo, index - (2 * lo - lo.bit_count())


def hashes_stored_with(n: int) -> int:
    """How many hashes the append of leaf n stores: its own and one a subtree it completes."""
    return 1 + _trailing_ones(n)


def _trailing_ones(n: int) -> int:
    return ((n ^ (n + 1)).bit_length()) - 1


def new_stored_hashes(n: int, leaf: bytes, read: HashReader) -> list[bytes]:
    """The hashes to store when leaf n (0-based; its hash ``leaf``) is appended to a tree of n leaves, in
    stored-index order starting at ``stored_hash_index(0, n)``."""
    m = _trailing_ones(n)
    indexes = [stored_hash_index(i, (n >> i) - 1) for i in reversed(range(m))]
    old = _read(read, indexes)
    hashes = [leaf]
    h = leaf
    for i in range(m):
        h = node_hash(old[m - 1 - i], h)
        hashes.append(h)
    return hashes


def _read(read: HashReader, indexes: Sequence[int]) -> Sequence[bytes]:
    if not indexes:
        return []
    hashes = read(indexes)
    if len(hashes) != len(indexes):
        raise ProofError(f"the tree's store returned {len(hashes)} hashes for {len(indexes)} indexes")
    return hashes


def _maxpow2(n: int) -> tuple[int, int]:
    """The largest power of two strictly below n (n ≥ 2), and its log."""
    level = (n - 1).bit_length() - 1
    return 1 << level, level


def _subtree_indexes(lo: int, hi: int, need: list[int]) -> list[int]:
    """The stored hashes whose combination is the hash of leaves [lo, hi): one per complete subtree."""
    while lo < hi:
        k, level = _maxpow2(hi - lo + 1)
        if lo & (k - 1):
            raise AssertionError("bad subtree bounds")
        need.append(stored_hash_index(level, lo >> level))
        lo += k
    return need


def _subtree_hash(lo: int, hi: int, hashes: list[bytes]) -> tuple[bytes, list[bytes]]:
    count = 0
    while lo < hi:
        k, _ = _maxpow2(hi - lo + 1)
        count += 1
        lo += k
    h = hashes[count - 1]
    for i in range(count - 2, -1, -1):
        h = node_hash(hashes[i], h)
    return h, hashes[count:]


def tree_hash(size: int, read: HashReader) -> bytes:
    """The root hash of the tree's first ``size`` leaves (the empty root for 0)."""
    if size == 0:
        return EMPTY_ROOT
    indexes = _subtree_indexes(0, size, [])
    h, rest = _subtree_hash(0, size, list(_read(read, indexes)))
    assert not rest
    return h


def _inclusion_indexes(lo: int, hi: int, n: int, need: list[int]) -> list[int]:
    if lo + 1 == hi:
        return need
    k, _ = _maxpow2(hi - lo)
    if n < lo + k:
        _inclusion_indexes(lo, lo + k, n, need)
        _subtree_indexes(lo + k, hi, need)
    else:
        _subtree_indexes(lo, lo + k, need)
        _inclusion_indexes(lo + k, hi, n, need)
    return need


def _inclusion(lo: int, hi: int, n: int, hashes: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    if lo + 1 == hi:
        return [], hashes
    k, _ = _maxpow2(hi - lo)
    if n < lo + k:
        proof, hashes = _inclusion(lo, lo + k, n, hashes)
        th, hashes = _subtree_hash(lo + k, hi, hashes)
    else:
        th, hashes = _subtree_hash(lo, lo + k, hashes)
        proof, hashes = _inclusion(lo + k, hi, n, hashes)
    return [*proof, th], hashes


def prove_inclusion(index: int, size: int, read: HashReader) -> list[bytes]:
    """RFC 9162 PATH(index, D[size]): the audit path of leaf ``index`` in the tree of ``size`` leaves, leaf side
    first."""
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is not in a tree of {size} leaves")
    indexes = _inclusion_indexes(0, size, index, [])
    proof, rest = _inclusion(0, size, index, list(_read(read, indexes)))
    assert not rest
    return proof


def _consistency_indexes(lo: int, hi: int, n: int, need: list[int]) -> list[int]:
    if n == hi:
        return need if lo == 0 else _subtree_indexes(lo, hi, need)
    k, _ = _maxpow2(hi - lo)
    if n <= lo + k:
        _consistency_indexes(lo, lo + k, n, need)
        _subtree_indexes(lo + k, hi, need)
    else:
        _subtree_indexes(lo, lo + k, need)
        _consistency_indexes(lo + k, hi, n, need)
    return need


def _consistency(lo: int, hi: int, n: int, hashes: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    if n == hi:
        if lo == 0:
            return [], hashes
        th, hashes = _subtree_hash(lo, hi, hashes)
        return [th], hashes
    k, _ = _maxpow2(hi - lo)
    if n <= lo + k:
        proof, hashes = _consistency(lo, lo + k, n, hashes)
        th, hashes = _subtree_hash(lo + k, hi, hashes)
    else:
        th, hashes = _subtree_hash(lo, lo + k, hashes)
        proof, hashes = _consistency(lo + k, hi, n, hashes)
    return [*proof, th], hashes


def prove_consistency(old_size: int, size: int, read: HashReader) -> list[bytes]:
    """RFC 9162 PROOF(old_size, D[size]): that the tree of ``old_size`` leaves is a prefix of the one of ``size``
    (empty when the sizes are equal)."""
    if not 0 < old_size <= size:
        raise ProofError(f"no consistency proof from size {old_size} to size {size}: need 0 < old ≤ size")
    indexes = _consistency_indexes(0, size, old_size, [])
    proof, rest = _consistency(0, size, old_size, list(_read(read, indexes)))
    assert not rest
    return proof


def compact_range_indexes(size: int) -> list[int]:
    """The stored hashes of the complete subtrees a tree of ``size`` leaves ends with, left to right: what the next
    append combines with (:func:`new_stored_hashes` reads a suffix of them)."""
    return _subtree_indexes(0, size, [])


# --- verification (RFC 9162 §2.1.3.2, §2.1.4.2) --------------------------------------------------------------


def _check_hash(what: str, value: bytes) -> None:
    if len(value) != HASH_SIZE:
        raise ProofError(f"{what} has {len(value)} bytes, not {HASH_SIZE}")


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """The root that ``proof`` makes of leaf hash ``leaf`` at ``index`` in a tree of ``size`` (RFC 9162
    §2.1.3.2 steps 1–5, without the final comparison)."""
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is not below the tree size {size}")
    _check_hash("the leaf hash", leaf)
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        _check_hash("a proof hash", p)
        if sn == 0:
            raise ProofError("the inclusion proof is longer than the path from the leaf to the root")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the inclusion proof is shorter than the path from the leaf to the root")
    return r


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> None:
    """Check that leaf hash ``leaf`` is at ``index`` in the tree of ``size`` leaves whose root is ``root``."""
    if root_from_inclusion(index, size, leaf, proof) != root:
        raise ProofError(f"the inclusion proof of leaf {index} does not lead to the root of the tree of size {size}")


def verify_consistency(old_size: int, size: int, proof: Sequence[bytes], old_root: bytes, root: bytes) -> None:
    """Check that the tree of ``old_size`` leaves with ``old_root`` is a prefix of the tree of ``size`` leaves with
    ``root``."""
    if size < old_size:
        raise ProofError(f"the new size {size} is smaller than the old size {old_size}: the log went backwards")
    if old_size == 0:
        raise ProofError("a consistency proof from the empty tree proves nothing: check the new tree directly")
    if old_size == size:
        if proof:
            raise ProofError("the sizes are equal, so the proof must be empty")
        if old_root != root:
            raise ProofError(f"two different roots for the same size {size}: the log forked")
        return
    if not proof:
        raise ProofError(f"an empty proof cannot show size {old_size} is a prefix of size {size}")
    for p in proof:
        _check_hash("a proof hash", p)
    _check_hash("the old root", old_root)
    _check_hash("the new root", root)
    path = list(proof)
    # RFC 9162 §2.1.4.2: if first is an exact power of two, prepend first_hash to the path.
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old_size - 1, size - 1
    while fn & 1:  # step 3: right-shift both while LSB(fn) is set
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("the consistency proof is longer than the two trees need")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the consistency proof is shorter than the two trees need")
    if fr != old_root:
        raise ProofError(f"the consistency proof does not lead to the root of the old tree (size {old_size})")
    if sr != root:
        raise ProofError(f"the consistency proof does not lead to the root of the new tree (size {size})")


class CompactRange:
    """The roots of the complete subtrees a growing tree ends with: appends leaf hashes one at a time and gives the
    root at any moment, in O(log n) memory, with nothing stored (``verify`` recomputes a checkpoint's root from the
    log's chain hashes this way, trusting no stored tree)."""

    def __init__(self) -> None:
        self.size = 0
        self._hashes: list[bytes] = []  # one per set bit of size, highest level first

    def append(self, leaf: bytes) -> None:
        h = leaf
        n = self.size
        while n & 1:
            h = node_hash(self._hashes.pop(), h)
            n >>= 1
        self._hashes.append(h)
        self.size += 1

    def root(self) -> bytes:
        if not self._hashes:
            return EMPTY_ROOT
        h = self._hashes[-1]
        for left in reversed(self._hashes[:-1]):
            h = node_hash(left, h)
        return h
