"""The full check of the log (``compliance-ledger verify``): the hash chain recomputed from every row's columns,
every row's authenticator, and the transparency-log tree recomputed from the chain hashes and compared, hash by
hash, with the stored one; and the tree's rebuild over a log that passes the first two."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ledger.core.chain import ChainReport, StoredRecord, verify_chain
from ledger.core.errors import IntegrityViolation
from ledger.core.storage.driver_errors import translate_errors
from ledger.core.storage.schema import _COLUMNS, TREE_HEAD, TREE_REWRITE
from ledger.core.storage.tree import EMPTY, TREE_BATCH, StoreTree, Tree


class _TreeCheck:
    """Recomputes the tree from the chain hashes as they are read and compares each page's stored hashes with the
    rows'; keeps the first difference."""

    def __init__(self, store: StoreVerify, stored_leaves: int) -> None:
        self.store = store
        self.stored_leaves = stored_leaves  # leaves the rows hold (compared up to there)
        self.tree: Tree = EMPTY
        self.pending: list[str] = []
        self.problem: tuple[int, str] | None = None

    def add(self, digest: str) -> None:
        if self.problem is None and self.tree.size + len(self.pending) < self.stored_leaves:
            self.pending.append(digest)

    def compare(self) -> None:
        """Compare the hashes of the leaves added since the last call with the rows'."""
        if not self.pending or self.problem is not None:
            return
        start, hashes = self.tree, self.pending
        self.tree, wanted = start.extend_raw([bytes.fromhex(h) for h in hashes])
        self.pending = []
        with self.store.read_cursor() as cur:
            cur.execute(
                self.store.sql(
                    "SELECT position, tree FROM events WHERE position > ? AND position <= ? ORDER BY position"
                ),
                (start.size, self.tree.size),
            )
            stored = {int(p): t for p, t in cur.fetchall()}
        for leaf, want in enumerate(wanted, start.size):
            have = stored.get(leaf + 1)
            if have is None or bytes(have) != want:
                what = "missing" if have is None else "not the ones the chain gives"
                self.problem = (leaf + 1, f"the stored tree's hashes of leaf {leaf} are {what}: the tree was altered")
                return


class StoreVerify(StoreTree):
    """The verification part of :class:`~ledger.core.storage.store.SqlEventStore`."""

    def verify(
        self, progress: Callable[[int], None] | None = None, batch_size: int = 5000, *, tree: bool = True
    ) -> ChainReport:
        """Recompute the whole hash chain, check every row's authenticator and (``tree``) recompute the tree from
        the chain hashes and compare it with the stored one; report the first position where any of them breaks.

        Besides each link, the table must hold exactly the positions 1..head: a row outside them (forced in
        behind the triggers) is reported even though no read ever obeys it.
        """
        head, _ = self.head()
        with translate_errors(self.dialect), self.engine.connect() as conn:
            outside, rows = conn.exec_driver_sql(
                self.sql("SELECT MIN(position), COUNT(*) FROM events WHERE position <= ?"), (head,)
            ).one()
            # The tree's size and the log's head in one statement (one snapshot: appends write both at once);
            # events appended after ``head`` are not compared, but the tree must match the log they belong to.
            now, leaves = (
                conn.exec_driver_sql(
                    "SELECT (SELECT MAX(position) FROM events WHERE position >= 1), "
                    f"(SELECT position FROM ({TREE_HEAD}) AS t)"
                ).one()
                if tree and self.tlog
                else (head, None)
            )
        if outside is not None and outside < 1:
            return ChainReport(
                False, 0, 0, int(outside), f"a row at position {outside} lies outside 1..{head}: it is off the chain"
            )
        leaves = int(leaves or 0)
        trees = _TreeCheck(self, min(leaves, head)) if tree and self.tlog else None
        forged: list[IntegrityViolation] = []

        def records() -> Iterator[StoredRecord]:
            # Up to the head read above: events appended while verify runs are not part of this check.
            for i, (rec, mac) in enumerate(self._verify_rows(head, batch_size), 1):
                if progress and i % 1000 == 0:
                    progress(i)
                if self.checker is not None and rec.position == i:  # a gap is the chain's to report
                    try:
                        self.checker.check(rec.position, rec.hash, mac)
                    except IntegrityViolation as exc:
                        forged.append(exc)
                        return
                if trees is not None:
                    trees.add(rec.hash)
                    if i % batch_size == 0:
                        trees.compare()
                yield rec

        report = verify_chain(records())
        if progress:
            progress(report.checked)
        if not report.ok:
            return report
        if forged:
            return ChainReport(False, report.checked, report.head_position, forged[0].position, forged[0].message)
        if report.head_position != head:
            return ChainReport(
                False,
                report.checked,
                report.head_position,
                report.head_position + 1,
                "the chain ends before the table's last position",
            )
        if rows != head:
            return ChainReport(
                False, report.checked, head, None, f"the table holds {rows} rows for the positions 1..{head}"
            )
        if trees is not None:
            trees.compare()
            problem = trees.problem or _tree_size_problem(leaves, int(now or 0))
            if problem is not None:
                return ChainReport(False, report.checked, head, problem[0], problem[1])
        return report

    def _verify_rows(self, head: int, batch_size: int) -> Iterator[tuple[StoredRecord, Any]]:
        """Every row up to ``head`` with its authenticator (``None`` where it has none), unchecked, in pages."""
        mac = ", mac" if self.checker is not None else ""
        text = self.sql(
            f"SELECT {_COLUMNS}{mac} FROM events WHERE position > ? AND position <= ? ORDER BY position "
            f"LIMIT {int(batch_size)}"
        )
        after = 0
        while after < head:
            with self._read_cursor() as cur:
                cur.execute(text, (after, head))
                page = cur.fetchall()
            for row in page:
                yield StoredRecord(*row[:10]), (row[10] if mac else None)
            if len(page) < batch_size:
                return
            after = page[-1][0]

    def rebuild_tree(self, progress: Callable[[int], None] | None = None) -> int:
        """Check the chain and every authenticator, then write every row's tree hashes again from the log, in one
        transaction (the old ones stay if anything fails); return the leaves built. ``progress`` gets the
        leaves built so far."""
        self._require_key("rebuild the tree")
        report = self.verify(tree=False)
        if not report.ok:
            raise IntegrityViolation(
                f"the log does not verify at position {report.first_bad_position}: {report.reason}",
                "the tree is only built over a log whose chain and authenticators hold: run `compliance-ledger "
                "verify` and restore the database from a backup",
                report.first_bad_position,
            )
        lift, restore = TREE_REWRITE[self.dialect]
        with self.write_transaction() as cur:
            for ddl in lift:  # every row's tree is rewritten: the guard lets a row's tree be written once only
                cur.execute(ddl)
            head = self._head_position(cur)
            built = EMPTY
            while built.size < head:
                built = self._grow(cur, built, min(built.size + TREE_BATCH, head))
                if progress is not None:
                    progress(built.size)
            for ddl in restore:
                cur.execute(ddl)
        self._verified = 0
        self._forget_head()
        return head


def _tree_size_problem(leaves: int, head: int) -> tuple[int | None, str] | None:
    """What is wrong with the stored tree's size against a log of ``head`` events (``None``: nothing)."""
    if leaves < head:
        return (
            leaves + 1,
            f"the tree covers only {leaves} of the log's {head} events: run `compliance-ledger init` to build the rest",
        )
    return None
