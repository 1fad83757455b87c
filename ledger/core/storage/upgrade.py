"""Bringing an older ledger up to date.

* Schema 2 (authenticators and tree hashes in side tables): each row's authenticator moved into its ``mac``
  column and the side tables dropped, in one transaction (:meth:`StoreUpgrade.move_into_rows`; the tree is then
  built again in the rows from the chain, which it is derived from).
* From before row authenticators: the ``mac`` and ``tree`` columns added and every existing row authenticated in
  one transaction, after its chain verifies, on the operator's word that the log is the ledger's
  (:meth:`StoreUpgrade.authenticate_existing`).

Then the tree is built (:meth:`~ledger.core.storage.tree.StoreTree.build_tree`). The ``mac`` column is what says
a ledger authenticates its rows: once it exists nothing is ever vouched for again."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ledger.core.canonical import format_ts
from ledger.core.chain import GENESIS_HASH, StoredRecord, chain_rows, verify_chain
from ledger.core.errors import IntegrityViolation
from ledger.core.events import DomainEvent
from ledger.core.mapper import decode, encode, encode_meta
from ledger.core.storage.group_commit import GroupCommit
from ledger.core.storage.reads import StreamState
from ledger.core.storage.schema import (
    _COLUMNS,
    ADD_ROW_COLUMNS,
    GUARD_UPDATE,
    LEGACY_DROP,
    column_exists_sql,
    table_exists_sql,
)

AUTH_BATCH = 5000
"""Rows read, checked and authenticated per statement when an existing ledger is upgraded."""

Vouch = Callable[[StreamState, int], Sequence[DomainEvent]]
"""Given a stream as it stands (unauthenticated) and the log's head, raise to refuse the upgrade, or return the
events to append to that stream in the upgrade's transaction (what records that the operator vouched)."""

_BROKEN_HINT = (
    "the ledger only vouches for a log whose chain holds: run `compliance-ledger verify` and restore the database "
    "from a backup"
)


class StoreUpgrade(GroupCommit):
    """The upgrade part of :class:`~ledger.core.storage.store.SqlEventStore`."""

    def _has_table(self, cur: Any, name: str) -> bool:
        cur.execute(self.sql(table_exists_sql(self.dialect)), (name,))
        return cur.fetchone() is not None

    def _has_column(self, cur: Any, name: str) -> bool:
        cur.execute(self.sql(column_exists_sql(self.dialect)), (name,))
        return cur.fetchone() is not None

    def pending_upgrade(self) -> tuple[int, int]:
        """What an upgrade has to do: the events to authenticate (every event of a ledger from before
        authenticators, else none) and the leaves the tree lacks."""
        with self._read_cursor() as cur:
            head = self._head_position(cur)
            if not self._has_column(cur, "mac"):
                return head, head
            leaves = self._tree_size(cur)
        return 0, max(0, head - leaves)

    def move_into_rows(self) -> int:
        """On a schema-2 ledger (authenticators in ``event_auth``, tree hashes in ``tlog_hashes``): in one
        transaction under the write lock, add the rows' ``mac`` and ``tree`` columns, copy each row's authenticator
        into its row, drop the side tables (the tree is derived from the chain: :meth:`build_tree` writes it again,
        checking each row's chain link and authenticator). Returns the rows moved (0: nothing to do). A ledger from
        before authenticators is left to :meth:`authenticate_existing`; an empty one gets the columns."""
        with self.write_transaction() as cur:
            if self._has_column(cur, "mac"):
                return 0
            authenticated = self._has_table(cur, "event_auth")
            head = self._head_position(cur)
            if not authenticated and head:
                return 0
            self._add_row_columns(cur)
            if authenticated:
                if self.dialect == "sqlite":
                    cur.execute(
                        "UPDATE events SET mac = (SELECT mac FROM event_auth WHERE event_auth.position = "
                        "events.position) WHERE position IN (SELECT position FROM event_auth)"
                    )
                else:
                    cur.execute("UPDATE events SET mac = a.mac FROM event_auth a WHERE a.position = events.position")
            for ddl in LEGACY_DROP[self.dialect]:
                cur.execute(ddl)
        self._forget_head()
        return head

    def _add_row_columns(self, cur: Any) -> None:
        """Add whichever of the rows' ``mac`` and ``tree`` columns is missing, and the guard on UPDATE that lets
        each be written once."""
        for column, ddl in ADD_ROW_COLUMNS[self.dialect]:
            if column is None or not self._has_column(cur, column):
                cur.execute(ddl)
        for ddl in GUARD_UPDATE[self.dialect]:
            cur.execute(ddl)

    def authenticate_existing(
        self,
        stream: str,
        vouch: Vouch,
        meta: dict[str, Any],
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """On a ledger with events and no authenticators (one from before them): in one transaction under the
        write lock, add the ``mac`` and ``tree`` columns, verify the whole chain, authenticate every row, and
        append the events ``vouch`` returns to ``stream`` (with ``meta``), authenticated too. Returns the rows
        authenticated (0 when the column already existed: then nothing is ever vouched for again). A broken chain
        or a refusal from ``vouch`` leaves nothing behind. ``progress`` gets the rows done so far."""
        self._require_key("authenticate the log's events")
        with self.write_transaction() as cur:
            if self._has_column(cur, "mac") or self._has_table(cur, "event_auth"):  # current, or schema 2 first
                return 0
            self._add_row_columns(cur)
            head = self._head_position(cur)
            if head == 0:
                return 0
            last = self._vouch_rows(cur, head, progress)
            cur.execute(
                self.sql(f"SELECT {_COLUMNS} FROM events WHERE stream = ? AND position >= 1 ORDER BY version"),
                (stream,),
            )
            events = [decode(StoredRecord(*r)) for r in cur.fetchall()]
            state = StreamState(stream, events[-1].version if events else 0, events)
            added = vouch(state, head)
            if added:
                self._append_in(cur, state, last, added, meta)
        self._forget_head()
        return head

    def _vouch_rows(self, cur: Any, head: int, progress: Callable[[int], None] | None) -> StoredRecord:
        """Verify the chain 1..``head`` and authenticate each row, a page at a time; return the last row."""
        assert self.row_key is not None
        cur.execute(self.sql("SELECT MIN(position), COUNT(*) FROM events WHERE position <= ?"), (head,))
        lowest, count = cur.fetchone()
        if (lowest is not None and int(lowest) < 1) or int(count) != head:
            raise IntegrityViolation(
                f"the events table holds {count} rows at positions up to {head}, from {lowest}: rows were forced in "
                "or removed",
                _BROKEN_HINT,
            )
        page_sql = self.sql(
            f"SELECT {_COLUMNS} FROM events WHERE position > ? AND position <= ? ORDER BY position LIMIT {AUTH_BATCH}"
        )
        auth_sql = self.sql("UPDATE events SET mac = ? WHERE position = ?")
        done, prev_hash, last = 0, GENESIS_HASH, None
        while done < head:
            cur.execute(page_sql, (done, head))
            page = [StoredRecord(*r) for r in cur.fetchall()]
            report = verify_chain(page, done + 1, prev_hash)
            if not report.ok or not page:
                position = report.first_bad_position or done + 1
                raise IntegrityViolation(
                    f"the chain breaks at position {position}: {report.reason or 'the event is missing'}",
                    _BROKEN_HINT,
                    position,
                )
            mac = self.row_key.mac
            cur.executemany(auth_sql, [(mac(bytes.fromhex(r.hash)), r.position) for r in page])
            done, prev_hash, last = page[-1].position, page[-1].hash, page[-1]
            if progress is not None:
                progress(done)
        assert last is not None
        return last

    def _append_in(
        self, cur: Any, state: StreamState, head: StoredRecord, events: Sequence[DomainEvent], meta: dict[str, Any]
    ) -> None:
        """Append ``events`` to ``state``'s stream after ``head``, authenticated, inside the open transaction."""
        assert self.row_key is not None
        rows = chain_rows(
            position=head.position,
            version=state.version,
            stream=state.stream,
            recorded_at=max(format_ts(self._clock()), head.recorded_at),
            prev_hash=head.hash,
            meta_json=encode_meta(meta),
            encoded=[encode(e) for e in events],
        )
        mac = self.row_key.mac
        self._insert_chunks(cur, [(*r, mac(bytes.fromhex(r[9])), None) for r in rows])  # the tree: build_tree
