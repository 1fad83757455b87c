"""The transparency-log tree in the store: an RFC 6962 Merkle tree whose leaf p − 1 is the event at position p
(leaf data: the 32 raw bytes of its chain hash), its stored hashes kept in ``tlog_hashes`` in Go sumdb's layout
(:mod:`ledger.core.tlog.merkle`), written in the transaction of the events they cover.

Proofs and roots read O(log n) stored hashes in one indexed query at any size. The tree only ever grows: a size
checked once (its newest leaf the hash of an event this ledger wrote) stays good, so later proofs up to it need no
second look at the table.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.core.chain import GENESIS_HASH
from ledger.core.errors import Conflict, IntegrityViolation, NotInitialised
from ledger.core.storage.driver_errors import classify_driver_error
from ledger.core.storage.proofs import TreeProofs
from ledger.core.storage.reads import StoreReads
from ledger.core.storage.schema import SQLITE_SEAL, authenticated, series_insert, series_keys, series_params
from ledger.core.tlog import merkle

TREE_BATCH = 5000
"""Leaves added per statement (and per transaction) when the tree is built for events already in the log."""

REBUILD_HINT = "run `compliance-ledger verify`, then `compliance-ledger replay --rebuild` to rebuild the tree"
BEHIND_HINT = (
    "run `compliance-ledger init` (it builds the missing part of the tree), or `compliance-ledger replay --rebuild`"
)


def size_of(count: int) -> int | None:
    """How many leaves a tree storing exactly ``count`` hashes has (``None``: no tree stores that many)."""
    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi) // 2
        if merkle.stored_hash_count(mid) < count:
            lo = mid + 1
        else:
            hi = mid
    return lo if merkle.stored_hash_count(lo) == count else None


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
        return self.extend_raw([bytes.fromhex(h) for h in chain_hashes])

    def extend_raw(self, leaves_data: Sequence[bytes]) -> tuple[Tree, bytes]:
        """:meth:`extend` with each leaf's data given as raw bytes."""
        compact = list(self.compact)
        size = self.size
        out: list[bytes] = []
        sha256 = hashlib.sha256
        for data in leaves_data:
            h = sha256(b"\x00" + data).digest()  # merkle.leaf_hash, inlined: this runs under the write lock
            out.append(h)
            n = size
            while n & 1:
                h = sha256(b"\x01" + compact.pop() + h).digest()  # merkle.node_hash
                out.append(h)
                n >>= 1
            compact.append(h)
            size += 1
        return Tree(size, tuple(compact)), b"".join(out)


EMPTY = Tree(0, ())

_SMALL = 8  # PostgreSQL, a group of one row: up to this many hashes as plain VALUES, more as a series


@functools.lru_cache(maxsize=4 * _SMALL)
def _values_sql(table: str, count: int) -> str:
    key, value = ("id", "hash") if table == "tlog_hashes" else ("position", "mac")
    return f"INSERT INTO {table} ({key}, {value}) VALUES {', '.join(['(?, ?)'] * count)}"


def _rows_sql(dialect: str, table: str, first: int, blob: bytes, small: int) -> tuple[str, Sequence[Any]]:
    """The statement (``?`` placeholders) writing the consecutive rows of ``blob`` from key ``first``."""
    count = len(blob) // 32
    if count > small:
        return series_insert(dialect, table), series_params(dialect, first, blob)
    params: list[Any] = []
    for k in range(count):
        params += (first + k, blob[32 * k : 32 * (k + 1)])
    return _values_sql(table, count), params


@dataclass(frozen=True, slots=True)
class Seal:
    """What a group writes beside its rows: their authenticators (from position ``first``) and the tree's new
    stored hashes (from id ``node``), each a concatenation of 32-byte values, and the tree they make."""

    tree: Tree
    first: int
    macs: bytes
    node: int
    blob: bytes

    def sqlite(self) -> tuple[str, Sequence[Any]]:
        """The statement that writes it on SQLite (into the ``tlog_seal`` view, whose trigger writes both tables)."""
        keys = series_keys(len(self.macs) // 32), series_keys(len(self.blob) // 32)
        return SQLITE_SEAL, (self.first, self.macs, keys[0], self.node, self.blob, keys[1])

    def pg_with(self) -> tuple[str, tuple[Any, ...]]:
        """A ``WITH`` clause writing it on PostgreSQL, to put before the group's insert (``?`` placeholders), and
        its parameters. A group of one row writes plain VALUES (a few statement texts, each prepared once); a
        larger one a series of each blob (one text whatever the counts)."""
        small = _SMALL if len(self.macs) == 32 else 0
        auth, auth_params = _rows_sql("postgresql", "event_auth", self.first, self.macs, small)
        tree, tree_params = _rows_sql("postgresql", "tlog_hashes", self.node, self.blob, small)
        return f"WITH auth AS ({auth}), tree AS ({tree}) ", (*auth_params, *tree_params)


class StoreTree(TreeProofs, StoreReads):
    """The tree's part of :class:`~ledger.core.storage.store.SqlEventStore`: its size, hashes, roots and proofs,
    and its growth over events already in the log."""

    # --- reading -----------------------------------------------------------------------------------------

    def tree_size(self) -> int:
        """How many leaves the stored tree has (the head's position when it is in step with the log)."""
        with self._read_cursor() as cur:
            return self._tree_size(cur)

    def _tree_size(self, cur: Any) -> int:
        cur.execute("SELECT MAX(id) FROM tlog_hashes")
        (top,) = cur.fetchone()
        size = size_of(0 if top is None else int(top) + 1)
        if size is None:
            raise IntegrityViolation(
                f"the tree's table ends part-way through a leaf's hashes (last id {top})", REBUILD_HINT
            )
        if size > self._verified:
            # The newest leaf must be the hash of an event this ledger wrote: a row forged at the head, with tree
            # hashes forged for it, never counts as part of the tree.
            mac = ", a.mac" if self.checker else ", NULL"
            join = " LEFT JOIN event_auth a ON a.position = e.position" if self.checker else ""
            cur.execute(
                self.sql(
                    f"SELECT t.hash, e.hash{mac} FROM tlog_hashes t LEFT JOIN events e ON e.position = ?{join} "
                    "WHERE t.id = ?"
                ),
                (size, merkle.stored_hash_index(0, size - 1)),
            )
            leaf, digest, auth = cur.fetchone()
            if digest is None:
                raise IntegrityViolation(
                    f"the tree has {size} leaves but the log has no event {size}", REBUILD_HINT, size
                )
            if self.checker is not None:
                self.checker.check(size, digest, auth)
            if bytes(leaf) != merkle.leaf_hash(bytes.fromhex(digest)):
                raise IntegrityViolation(
                    f"the tree's leaf {size - 1} is not the hash of the event at position {size}", REBUILD_HINT, size
                )
            self._verified = max(self._verified, size)
        return size

    def tree_hashes(self, indexes: Sequence[int]) -> list[bytes]:
        """The stored hashes at ``indexes``, in the order asked (a :data:`merkle.HashReader`): one query."""
        if not indexes:
            return []
        wanted = sorted({int(i) for i in indexes})
        with self._read_cursor() as cur:
            cur.execute(
                self.sql(f"SELECT id, hash FROM tlog_hashes WHERE id IN ({', '.join('?' * len(wanted))})"), wanted
            )
            found = {int(i): bytes(h) for i, h in cur.fetchall()}
        missing = [i for i in wanted if i not in found]
        if missing:
            raise IntegrityViolation(f"the tree's stored hash {missing[0]} is missing", REBUILD_HINT)
        return [found[int(i)] for i in indexes]

    def _chain_hash_at(self, position: int) -> str | None:
        rows = self._rows("position, hash", "position = ?", (position,), hash_at=1)
        return str(rows[0][1]) if rows else None

    # --- growing ------------------------------------------------------------------------------------------

    def _compact(self, cur: Any, size: int) -> Tree:
        """The tree of ``size`` leaves as the table holds it, read in one query: :class:`NotInitialised` when the
        table has fewer leaves, :class:`IntegrityViolation` when it has more."""
        ids = merkle.compact_range_indexes(size)
        following = merkle.stored_hash_index(0, size)
        asked = [*ids, following]
        cur.execute(self.sql(f"SELECT id, hash FROM tlog_hashes WHERE id IN ({', '.join('?' * len(asked))})"), asked)
        found = {int(i): bytes(h) for i, h in cur.fetchall()}
        if following in found:
            raise IntegrityViolation(
                f"the tree holds hashes past the log's {size} events: something other than the ledger wrote them",
                REBUILD_HINT,
            )
        if any(i not in found for i in ids):
            raise NotInitialised(f"the transparency-log tree covers fewer than the log's {size} events", BEHIND_HINT)
        return Tree(size, tuple(found[i] for i in ids))

    def _grow(self, cur: Any, tree: Tree, end: int) -> Tree:
        """Add the leaves of the events after ``tree`` up to position ``end`` (each checked: on the chain and
        written by this ledger) and store their hashes; return the grown tree."""
        mac = ", mac" if self.checker else ""
        source, bounds = authenticated(self.dialect, ">=") if self.checker else ("events", 0)
        cur.execute(
            self.sql(
                f"SELECT position, prev_hash, hash{mac} FROM {source} "
                "WHERE position >= ? AND position <= ? ORDER BY position"
            ),
            (*[max(tree.size, 1)] * (bounds + 1), end),
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
        grown, blob = tree.extend([r[2] for r in rows])
        if blob:
            cur.execute(
                self.sql(series_insert(self.dialect, "tlog_hashes")),
                series_params(self.dialect, merkle.stored_hash_index(0, tree.size), blob),
            )
        return grown

    def _tree_at(self, cur: Any, head: tuple[int, str, str], mac: bytes | None) -> Tree:
        """The tree to extend after ``head``, a head this store did not write: its authenticator checked first
        (never chain after a row the ledger did not write), then the tree's compact range read for it."""
        position, digest, _ = head
        if position and self.checker is not None:
            self.checker.check(position, digest, mac)
        return self._compact(cur, position)

    def _sealing(self, tree: Tree | None, written: list[tuple[Any, ...]]) -> Seal | None:
        """The authenticators of the rows ``written`` (chained after ``tree``'s last leaf) and the tree's new
        stored hashes, ready to write (``None`` for a store that keeps no tree)."""
        if not self.tlog or not written or tree is None or self.row_key is None:
            return None
        first = written[0][0]
        if first != tree.size + 1:  # the tree is always read at the head the rows were chained after
            raise IntegrityViolation(
                f"the tree has {tree.size} leaves, not the {first - 1} the rows follow", REBUILD_HINT
            )
        digests = [bytes.fromhex(r[9]) for r in written]
        grown, blob = tree.extend_raw(digests)
        macs = b"".join([self.row_key.mac(d) for d in digests])
        return Seal(grown, first, macs, merkle.stored_hash_index(0, tree.size), blob)

    def _write_seal(self, cur: Any, seal: Seal) -> None:
        try:
            if self.dialect == "sqlite":
                cur.execute(*seal.sqlite())
            else:
                with_clause, params = seal.pg_with()
                cur.execute(self.sql(with_clause + "SELECT 1"), params)
        except Exception as exc:
            foreign = self._foreign_rows(exc)
            if foreign is not None:
                raise foreign from exc
            raise

    def _seal(self, cur: Any, tree: Tree | None, written: list[tuple[Any, ...]]) -> Tree | None:
        """Write the authenticators of the rows ``written`` and the tree's new hashes; return the grown tree."""
        seal = self._sealing(tree, written)
        if seal is None:
            return tree
        self._write_seal(cur, seal)
        return seal.tree

    def _foreign_rows(self, exc: BaseException) -> IntegrityViolation | None:
        """What a unique violation on the tree's or the authenticators' table means: rows the ledger did not
        write hold the keys it is writing (``None`` for any other error)."""
        if isinstance(classify_driver_error(exc, self.dialect), Conflict) and any(
            table in str(exc) for table in ("tlog_hashes", "event_auth")
        ):
            return IntegrityViolation(
                "the tree or the authenticators already hold rows for the events being appended: something other "
                "than the ledger wrote them",
                REBUILD_HINT,
            )
        return None

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
