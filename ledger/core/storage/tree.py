"""The transparency-log tree in the store: an RFC 6962 Merkle tree whose leaf p − 1 is the event at position p
(leaf data: the 32 raw bytes of its chain hash), its stored hashes in Go sumdb's layout kept in the events' rows.

The append of leaf i stores its leaf hash and the hash of each subtree it completes
(:mod:`ledger.core.tlog.merkle`); these are kept in that leaf's own row, the ``tree`` column of the event at
position i + 1, written with the row (schema 3; up to version 2 a side table, ``tlog_hashes``, had a row a hash).

Proofs and roots read O(log n) rows by primary key in one query at any size. The tree only ever grows: a size
checked once (its newest leaf the hash of an event this ledger wrote) stays good, so later proofs up to it need no
second look at the table.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.core.chain import GENESIS_HASH
from ledger.core.errors import IntegrityViolation, NotInitialised
from ledger.core.storage.proofs import TreeProofs
from ledger.core.storage.reads import StoreReads
from ledger.core.storage.schema import TREE_HEAD
from ledger.core.tlog import merkle

TREE_BATCH = 5000
"""Leaves added per statement (and per transaction) when the tree is built for events already in the log."""

REBUILD_HINT = "run `compliance-ledger verify`, then `compliance-ledger replay --rebuild` to rebuild the tree"
BEHIND_HINT = (
    "run `compliance-ledger init` (it builds the missing part of the tree), or `compliance-ledger replay --rebuild`"
)


UPDATE_TREE = "UPDATE events SET tree = ? WHERE position = ?"


def tree_length(position: int) -> int:
    """The bytes of the ``tree`` column of the event at ``position``: 32 for each hash its leaf stored."""
    return 32 * merkle.hashes_stored_with(position - 1)


@dataclass(frozen=True, slots=True)
class Tree:
    """A tree's size and its compact range: the hashes of the complete subtrees it ends with, left to right (what
    the next leaf combines with)."""

    size: int
    compact: tuple[bytes, ...]

    def extend(self, chain_hashes: Sequence[str]) -> tuple[Tree, bytes]:
        """This tree with a leaf appended for each chain hash (hex), and the hashes to store for them, concatenated
        in id order from ``stored_hash_index(0, size)`` (what :func:`merkle.new_stored_hashes` gives leaf by
        leaf)."""
        grown, per_leaf = self.extend_raw([bytes.fromhex(h) for h in chain_hashes])
        return grown, b"".join(per_leaf)

    def extend_raw(self, leaves_data: Sequence[bytes]) -> tuple[Tree, list[bytes]]:
        """This tree with a leaf appended for each leaf data (raw bytes), and what each new leaf stores (its row's
        ``tree`` column: its leaf hash, then the subtrees it completes)."""
        compact = list(self.compact)
        size = self.size
        out: list[bytes] = []
        sha256 = hashlib.sha256
        for data in leaves_data:
            h = sha256(b"\x00" + data).digest()  # merkle.leaf_hash, inlined: this runs under the write lock
            stored = h
            n = size
            while n & 1:
                h = sha256(b"\x01" + compact.pop() + h).digest()  # merkle.node_hash
                stored += h
                n >>= 1
            out.append(stored)
            compact.append(h)
            size += 1
        return Tree(size, tuple(compact)), out


EMPTY = Tree(0, ())


@dataclass(frozen=True, slots=True)
class Seal:
    """What a group writes in its rows beside the hashed columns: each row's authenticator and its leaf's stored
    hashes (the rows' ``mac`` and ``tree``, in order), and the tree they make."""

    tree: Tree
    macs: list[bytes]
    trees: list[bytes]


class StoreTree(TreeProofs, StoreReads):
    """The tree's part of :class:`~ledger.core.storage.store.SqlEventStore`: its size, hashes, roots and proofs,
    and its growth over events already in the log."""

    # --- reading -----------------------------------------------------------------------------------------

    def tree_size(self) -> int:
        """How many leaves the stored tree has (the head's position when it is in step with the log)."""
        with self._read_cursor() as cur:
            return self._tree_size(cur)

    def _tree_size(self, cur: Any) -> int:
        cur.execute(TREE_HEAD)
        row = cur.fetchone()
        size = 0 if row is None else int(row[0])
        if size > self._verified:
            # The newest leaf must be the hash of an event this ledger wrote: a row forged at the head, with tree
            # hashes forged for it, never counts as part of the tree.
            _, digest, auth, stored = row
            if self.checker is not None:
                self.checker.check(size, digest, auth)
            if len(stored) != tree_length(size) or bytes(stored[:32]) != merkle.leaf_hash(bytes.fromhex(digest)):
                raise IntegrityViolation(
                    f"the tree's leaf {size - 1} is not the hash of the event at position {size}", REBUILD_HINT, size
                )
            self._verified = max(self._verified, size)
        return size

    def tree_hashes(self, indexes: Sequence[int]) -> list[bytes]:
        """The stored hashes at ``indexes``, in the order asked (a :data:`merkle.HashReader`): one query."""
        if not indexes:
            return []
        with self._read_cursor() as cur:
            found = self._stored(cur, indexes)
        missing = [i for i in indexes if i not in found]
        if missing:
            raise IntegrityViolation(f"the tree's stored hash {missing[0]} is missing", REBUILD_HINT)
        return [found[int(i)] for i in indexes]

    def _stored(self, cur: Any, indexes: Sequence[int]) -> dict[int, bytes]:
        """The stored hashes at ``indexes`` that the rows hold, by index: one primary-key probe a leaf. A row
        whose ``tree`` has the wrong length for its leaf raises :class:`IntegrityViolation`."""
        places = {int(i): merkle.stored_hash_leaf(int(i)) for i in indexes}
        positions = sorted({leaf + 1 for leaf, _ in places.values()})
        cur.execute(
            self.sql(f"SELECT position, tree FROM events WHERE position IN ({', '.join('?' * len(positions))})"),
            positions,
        )
        trees: dict[int, bytes] = {}
        for position, stored in cur.fetchall():
            if stored is None:
                continue
            if len(stored) != tree_length(int(position)):
                raise IntegrityViolation(
                    f"the tree hashes of the event at position {position} have {len(stored)} bytes, not the "
                    f"{tree_length(int(position))} its leaf stores: they were altered",
                    REBUILD_HINT,
                    int(position),
                )
            trees[int(position)] = bytes(stored)
        found: dict[int, bytes] = {}
        for index, (leaf, k) in places.items():
            stored = trees.get(leaf + 1)
            if stored is not None:
                found[index] = stored[32 * k : 32 * (k + 1)]
        return found

    def _chain_hash_at(self, position: int) -> str | None:
        rows = self._rows("position, hash", "position = ?", (position,), hash_at=1)
        return str(rows[0][1]) if rows else None

    # --- growing ------------------------------------------------------------------------------------------

    def _compact(self, cur: Any, size: int) -> Tree:
        """The tree of ``size`` leaves as the rows hold it, read in one query: :class:`NotInitialised` when the
        rows hold fewer leaves."""
        ids = merkle.compact_range_indexes(size)
        found = self._stored(cur, ids) if ids else {}
        if any(i not in found for i in ids):
            raise NotInitialised(f"the transparency-log tree covers fewer than the log's {size} events", BEHIND_HINT)
        return Tree(size, tuple(found[i] for i in ids))

    def _grow(self, cur: Any, tree: Tree, end: int) -> Tree:
        """Add the leaves of the events after ``tree`` up to position ``end`` (each checked: on the chain and
        written by this ledger) and write their hashes into their rows; return the grown tree."""
        mac = ", mac" if self.checker else ""
        cur.execute(
            self.sql(
                f"SELECT position, prev_hash, hash{mac} FROM events WHERE position >= ? AND position <= ? "
                "ORDER BY position"
            ),
            (max(tree.size, 1), end),
        )
        rows = cur.fetchall()
        if self.checker is not None:
            rows = self.checker.strip(rows, 2)
        prev = GENESIS_HASH
        if tree.size:
            if not rows or rows[0][0] != tree.size:
                raise IntegrityViolation(f"position {tree.size} is missing from the log", REBUILD_HINT, tree.size)
            prev, rows = rows[0][2], rows[1:]
        for expected, row in enumerate(rows, tree.size + 1):
            if row[0] != expected:
                raise IntegrityViolation(f"position {expected} is missing from the log", REBUILD_HINT, expected)
            if row[1] != prev:
                raise IntegrityViolation(
                    f"the event at position {expected} does not extend the chain", REBUILD_HINT, expected
                )
            prev = row[2]
        if len(rows) != end - tree.size:
            raise IntegrityViolation(f"position {tree.size + len(rows) + 1} is missing from the log", REBUILD_HINT)
        grown, stored = tree.extend_raw([bytes.fromhex(r[2]) for r in rows])
        if stored:
            cur.executemany(self.sql(UPDATE_TREE), [(t, r[0]) for t, r in zip(stored, rows, strict=True)])
        return grown

    def _tree_at(self, cur: Any, head: tuple[int, str, str], mac: bytes | None) -> Tree:
        """The tree to extend after ``head``, a head this store did not write: its authenticator checked first
        (never chain after a row the ledger did not write), then the tree's compact range read for it."""
        position, digest, _ = head
        if position and self.checker is not None:
            self.checker.check(position, digest, mac)
        return self._compact(cur, position)

    def _sealing(self, tree: Tree | None, written: list[tuple[Any, ...]]) -> Seal | None:
        """The authenticators of the rows ``written`` (chained after ``tree``'s last leaf) and their leaves' stored
        hashes, to write in the rows (``None`` for a store that keeps no tree)."""
        if not self.tlog or not written or tree is None or self.row_key is None:
            return None
        first = written[0][0]
        if first != tree.size + 1:  # the tree is always read at the head the rows were chained after
            raise IntegrityViolation(
                f"the tree has {tree.size} leaves, not the {first - 1} the rows follow", REBUILD_HINT
            )
        digests = [bytes.fromhex(r[9]) for r in written]
        grown, trees = tree.extend_raw(digests)
        mac = self.row_key.mac
        return Seal(grown, [mac(d) for d in digests], trees)

    def _head_position(self, cur: Any) -> int:
        cur.execute("SELECT MAX(position) FROM events WHERE position >= 1")
        (head,) = cur.fetchone()
        return int(head or 0)

    def _require_key(self, what: str) -> None:
        if not self.tlog or self.checker is None:
            raise NotInitialised(
                f"this store was opened without the row key (or without the tree): it cannot {what}",
                "open the ledger with its receipt key file (LEDGER_KEY_FILE), as `compliance-ledger init` does",
            )

    def build_tree(self, progress: Callable[[int], None] | None = None) -> int:
        """Add the leaves of the events the tree does not cover yet, :data:`TREE_BATCH` per transaction under the
        write lock (appends wait meanwhile: they refuse while the tree is behind); return how many were added.
        ``progress`` gets the number added so far."""
        self._require_key("build the tree")
        added = 0
        while True:
            with self.write_transaction() as cur:
                size = self._tree_size(cur)
                head = self._head_position(cur)
                if size > head:
                    raise IntegrityViolation(f"the tree has {size} leaves but the log only {head} events", REBUILD_HINT)
                if size == head:
                    break
                end = min(size + TREE_BATCH, head)
                self._grow(cur, self._compact(cur, size), end)
            added += end - size
            if progress is not None:
                progress(added)
        self._forget_head()
        return added

    def _forget_head(self) -> None:
        """Drop what the append path cached about the head and the tree (the next append reads them)."""
