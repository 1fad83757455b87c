"""Appends with group commit: concurrent appends of one process queue, and a leader writes them in one
transaction, each checked against its own expected version and chained after the one before it."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from ledger.core import clock as _clock
from ledger.core.canonical import format_ts, parse_ts
from ledger.core.chain import GENESIS_HASH, chain_rows
from ledger.core.errors import ConcurrencyError, NotInitialised
from ledger.core.events import DomainEvent, RecordedEvent
from ledger.core.mapper import encode_all, encode_meta
from ledger.core.sealed import VERSION as SEALED
from ledger.core.sealed import NewKey
from ledger.core.storage.driver_errors import classify_driver_error
from ledger.core.storage.pending import _copy_error, _held_lock, _MemberRefused, _Pending
from ledger.core.storage.schema import (
    _INSERT_CHUNK,
    _VERSION_AND_HEAD,
    VERSION_AND_AUTH_HEAD,
    _guarded_insert_sql,
    _versions_and_head_sql,
    insert_one_sql,
    insert_rows_sql,
    versions_and_auth_head_sql,
)
from ledger.core.storage.tree import Seal, StoreTree, Tree


class GroupCommit(StoreTree):
    """The append path of :class:`~ledger.core.storage.store.SqlEventStore` (see its docstring).

    Each new row carries its authenticator and its leaf's stored hashes (:meth:`_sealing`), written with it.
    Before chaining after a head this store did not write itself, the leader checks that head's authenticator and
    reads the tree's compact range for it."""

    def _init_group_commit(self, clock: _clock.Clock, group_limit: int) -> None:
        """Set up the queue of appends, stamped by ``clock``; ``group_limit`` caps the appends of one group."""
        self.group_limit = max(1, group_limit)  # 1: every append its own transaction (no group commit)
        self._clock = clock
        self._insert_one = insert_one_sql(self.dialect)
        self._queue: list[_Pending] = []  # appends waiting for a group commit, in arrival order
        self._mutex = threading.Lock()  # guards _queue and _leading (held for list operations only)
        self._leading = False  # a thread is writing a group; while it is, new appends queue behind it
        # The head this store committed last (position, hash, recorded_at), for the next group's guarded insert;
        # None when unknown. Only the leader reads or sets it.
        self._head: tuple[int, str, str] | None = None
        # The tree at that head (None when the head is unknown, or this store keeps no tree); set with _head.
        self._tree: Tree | None = None
        self._guard = True  # whether the next group tries the guarded insert (see _write_group)

    def _forget_head(self) -> None:
        self._head = self._tree = None

    def append(
        self,
        stream: str,
        expected_version: int,
        events: Sequence[DomainEvent],
        meta: dict[str, Any],
    ) -> list[RecordedEvent]:
        """Append ``events`` to ``stream`` if it is still at ``expected_version``; all or nothing.

        Raises :class:`ConcurrencyError` when another writer got there first. Returns the recorded events
        with their positions and hashes.
        """
        if not events:
            return []
        if self.tlog and self.row_key is None:
            raise NotInitialised(
                "this store was opened without the row key: it can read the log, not append to it",
                "open the ledger with its receipt key file (LEDGER_KEY_FILE)",
            )
        # Encoded here, in the caller's thread and outside every lock: the leader only chains and writes.
        # Free text is encrypted here too, under the stream's data key (ledger.core.data_keys; one made for it is
        # written in the group's transaction, with the events sealed under it); the metadata says so.
        keys: list[NewKey] = []
        encoded, sealed = encode_all(events, stream, self.cipher, keys, fresh=expected_version == 0)
        if sealed:
            meta = {**meta, "enc": SEALED}
        pending = _Pending(stream, expected_version, events, encoded, meta, encode_meta(meta), keys)
        with self._mutex:
            self._queue.append(pending)
            lead = not self._leading
            if lead:
                self._leading = True
            else:
                pending.wake = _held_lock()
        if not lead:  # released by a leader: this append is done, or it leads the next group
            pending.wake.acquire()
        if not pending.done:
            self._lead()
        recorded = pending.outcome()
        if keys and self.cipher is not None:
            self.cipher.adopt(keys)  # committed with the events: later appends of the stream use them
        return recorded

    def _lead(self) -> None:
        """Commit a group led by this thread's append (the first queued), then hand the lead to the first append
        queued meanwhile."""
        group: list[_Pending] = []
        try:
            group = self._commit_queued()
        finally:
            with self._mutex:
                successor = self._queue[0] if self._queue else None
                if successor is None:
                    self._leading = False
            for p in group:
                p.done = True
                if p.wake is not None:
                    p.wake.release()
            if successor is not None:
                successor.wake.release()  # not done: it leads

    def _commit_queued(self) -> list[_Pending]:
        """Take the write lock, then the appends queued by then (up to ``group_limit``), and write them in one
        transaction; return them, each ended with its rows or its error.

        The group is taken once the lock is held, so every append that queued while the leader waited for it
        (behind other processes, or behind the last group's fsync) joins: the more writers wait, the larger the
        groups. The fast path writes every member's rows in one statement. If the database refuses a row (rare:
        the ledger checks what it can before it appends), the transaction is rolled back and the group is
        written again member by member, each under a savepoint, so only the refused member fails."""
        group: list[_Pending] = []

        def take() -> list[_Pending]:
            with self._mutex:
                group.extend(self._queue[: self.group_limit])
                del self._queue[: self.group_limit]
            return group

        try:
            try:
                with self.write_transaction() as cur:
                    head, tree = self._write_group(cur, take(), one_by_one=False)
            except _MemberRefused:
                self._forget_head()
                for p in group:
                    p.rows, p.error, p.recorded_at = None, None, None
                with self.write_transaction() as cur:
                    head, tree = self._write_group(cur, group, one_by_one=True)
            self._head, self._tree = head, tree
            if tree is not None:
                self._verified = max(self._verified, tree.size)  # its newest leaf is this store's own event
        except BaseException as exc:
            # Nothing of the group was committed: every member that had not failed alone fails with the group
            # (each its own copy of the error, as each is raised in its own thread). If the lock was never had,
            # the appends queued by now fail with its error: they waited as long as the leader did.
            self._forget_head()
            for p in group or take():
                if p.error is None:
                    p.error, p.rows = (exc if p is group[0] else _copy_error(exc)), None
        return group

    def _versions_and_head(
        self, cur: Any, group: list[_Pending]
    ) -> tuple[dict[str, int], tuple[int, str, str], bytes | None]:
        """Each stream's version, the chain head and (keeping the tree) the head's authenticator, in one round
        trip (index probes only)."""
        if len(group) == 1:
            cur.execute(self.sql(VERSION_AND_AUTH_HEAD if self.tlog else _VERSION_AND_HEAD), (group[0].stream,))
            actual, position, digest, last_at, *mac = cur.fetchone()
            head = (position or 0, digest or GENESIS_HASH, last_at or "")
            return {group[0].stream: actual}, head, (mac or [None])[0]
        streams = sorted({p.stream for p in group})
        sql = versions_and_auth_head_sql if self.tlog else _versions_and_head_sql
        cur.execute(self.sql(sql(len(streams))), [s for stream in streams for s in (stream, stream)])
        versions: dict[str, int] = {}
        head = (0, GENESIS_HASH, "")
        auth = None
        for name, number, digest, last_at, *mac in cur.fetchall():
            if name is None:
                head, auth = (int(number), digest, last_at), (mac or [None])[0]
            else:
                versions[name] = int(number)
        return versions, head, auth

    def _write_group(
        self, cur: Any, group: list[_Pending], *, one_by_one: bool
    ) -> tuple[tuple[int, str, str], Tree | None]:
        """Chain and insert the rows of every member whose version check passes, then their authenticators and
        tree hashes; return the new head and tree.

        On SQLite, when this store wrote the head it knows (no other writer has appended since, as far as it
        knows), the group is written without reading anything first: the first insert statement itself checks,
        inside the transaction, that the head is still that one and every stream is at the version assumed
        (its first member's ``expected_version``), and inserts nothing otherwise. Then the versions and the
        head are read and the group is planned again. Either way every check is made under the write lock.

        While other writers keep appending between this store's commits (processes taking turns on one file),
        the guarded insert would fail every time, so it is skipped until a read shows the head this store left."""
        if not one_by_one and self._head is not None and self._guard and self.dialect == "sqlite":
            assumed: dict[str, int] = {}
            for p in group:
                assumed.setdefault(p.stream, p.expected_version)
            done = self._plan_and_insert(cur, group, assumed, self._head, self._tree, one_by_one=False, guarded=True)
            if done is not None:
                return done
        versions, known, mac = self._versions_and_head(cur, group)
        self._guard = known == self._head  # False: another writer appended since this store's last commit
        tree = self._tree if self._guard else None
        if self.tlog and tree is None:
            tree = self._tree_at(cur, known, mac)
        done = self._plan_and_insert(cur, group, versions, known, tree, one_by_one=one_by_one, guarded=False)
        assert done is not None  # an unguarded write inserts or raises
        return done

    def _plan_and_insert(
        self,
        cur: Any,
        group: list[_Pending],
        versions: dict[str, int],
        head: tuple[int, str, str],
        tree: Tree | None,
        *,
        one_by_one: bool,
        guarded: bool,
    ) -> tuple[tuple[int, str, str], Tree | None] | None:
        """Check each member against ``versions``, chain its rows after ``head`` and insert them with their
        authenticators and ``tree``'s new hashes; return the new head and tree. ``guarded``: ``versions`` and
        ``head`` are assumptions the insert verifies; ``None`` (nothing written, no member touched) when they no
        longer hold."""
        position, prev_hash, last_at = head
        assumed, versions = versions, dict(versions)
        # One timestamp for the group (it commits at once); recorded_at never goes backwards in position order,
        # so "as of T" is always a prefix of the log.
        recorded_at = max(format_ts(self._clock()), last_at)
        planned: list[tuple[_Pending, list[tuple[Any, ...]]]] = []
        lost: list[tuple[_Pending, ConcurrencyError]] = []  # guarded: their errors hold only if the guard does
        all_rows: list[tuple[Any, ...]] = []
        for p in group:
            actual = versions[p.stream]
            if actual != p.expected_version:
                error = ConcurrencyError(p.stream, p.expected_version, actual)
                if guarded:
                    lost.append((p, error))
                else:
                    p.error = error
                continue
            rows = chain_rows(
                position=position,
                version=actual,
                stream=p.stream,
                recorded_at=recorded_at,
                prev_hash=prev_hash,
                meta_json=p.meta_json,
                encoded=p.encoded,
            )
            if one_by_one:
                seal = self._sealing(tree, rows)
                try:
                    cur.execute("SAVEPOINT group_member")
                    self._insert(cur, rows, seal=seal)
                    if self.cipher is not None:
                        self.cipher.write(cur, p.keys)
                    cur.execute("RELEASE SAVEPOINT group_member")
                except Exception as exc:
                    cur.execute("ROLLBACK TO SAVEPOINT group_member")
                    cur.execute("RELEASE SAVEPOINT group_member")
                    p.error = classify_driver_error(exc, self.dialect) or exc
                    continue
                tree = seal.tree if seal is not None else tree
            else:
                all_rows.extend(rows)
            planned.append((p, rows))
            versions[p.stream] = rows[-1][2]
            position, prev_hash = rows[-1][0], rows[-1][9]
        if all_rows:
            seal = self._sealing(tree, all_rows)
            try:
                if not self._insert(cur, all_rows, (head, assumed) if guarded else None, seal):
                    return None
                if self.cipher is not None:  # the data keys made for the members written, in their transaction
                    self.cipher.write(cur, [k for p, _ in planned for k in p.keys])
            except Exception as exc:
                if len(planned) > 1 or lost:  # again, one member at a time (and every check made afresh)
                    raise _MemberRefused from exc
                raise
            tree = seal.tree if seal is not None else tree
        at = parse_ts(recorded_at)
        for p, rows in planned:
            p.rows, p.recorded_at = rows, at
        for p, lost_race in lost:
            p.error = lost_race
        return (position, prev_hash, recorded_at), tree

    def _insert(
        self,
        cur: Any,
        rows: list[tuple[Any, ...]],
        guard: tuple[tuple[int, str, str], dict[str, int]] | None = None,
        seal: Seal | None = None,
    ) -> bool:
        """Insert ``rows`` in position order, each with its authenticator and tree hashes from ``seal`` (NULL
        without one), one multi-row statement per chunk of rows. On SQLite each statement step releases Python's
        GIL, and under concurrent writers getting it back cost more than the insert itself. On PostgreSQL each
        statement is complete when it is sent (never a pipeline or executemany, whose statements go before their
        Sync): a node stopped (SIGSTOP, a long pause) mid-way would leave its session "active", waiting for the
        rest, which neither idle_in_transaction_session_timeout nor statement_timeout ends — holding the write lock
        until it resumes. Between complete statements the session is idle in its transaction, and the server ends
        it.

        ``guard`` (SQLite): the head and stream versions the rows were chained against. The first statement
        inserts only if they still hold; ``False`` when it inserted nothing."""
        if seal is not None:
            stored = [(*row, mac, tree) for row, mac, tree in zip(rows, seal.macs, seal.trees, strict=True)]
        else:
            stored = [(*row, None, None) for row in rows]
        if guard is not None:
            (position, digest, _), streams = guard
            chunk = stored[:_INSERT_CHUNK]
            cur.execute(
                _guarded_insert_sql(len(chunk)),
                [
                    *(value for row in chunk for value in row),
                    digest if position else None,
                    json.dumps(streams),
                ],
            )
            if cur.rowcount != len(chunk):
                return False
            stored = stored[_INSERT_CHUNK:]
        if len(stored) == 1:
            cur.execute(self._insert_one, stored[0])
        else:
            self._insert_chunks(cur, stored)
        return True

    def _insert_chunks(self, cur: Any, rows: list[tuple[Any, ...]]) -> None:
        """``rows`` as multi-row INSERTs of up to ``_INSERT_CHUNK`` rows, each statement whole when sent."""
        for start in range(0, len(rows), _INSERT_CHUNK):
            chunk = rows[start : start + _INSERT_CHUNK]
            cur.execute(insert_rows_sql(self.dialect, len(chunk)), _flat(chunk))


def _flat(rows: list[tuple[Any, ...]]) -> list[Any]:
    return [value for row in rows for value in row]
