"""Reading the event store: a stream for a decision, records by position, paged iteration in position order,
and the full verification of the hash chain."""

from __future__ import annotations

import datetime as _dt
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger.core.canonical import format_ts
from ledger.core.chain import GENESIS_HASH, StoredRecord
from ledger.core.events import RecordedEvent
from ledger.core.mapper import ROW_COLUMNS, decode, decode_row
from ledger.core.storage.connection import StoreConnection
from ledger.core.storage.driver_errors import translate_errors
from ledger.core.storage.schema import _COLUMNS, _META_AGENT

if TYPE_CHECKING:
    from ledger.core.data_keys import DataKeys


@dataclass(frozen=True, slots=True)
class StreamState:
    """A stream's events and its current version, loaded for a decision."""

    stream: str
    version: int
    events: list[RecordedEvent]


class StoreReads(StoreConnection):
    """The read side of :class:`~ledger.core.storage.store.SqlEventStore`: every read sees only rows on the chain's
    positions. ``cipher`` (set by the kernel) decrypts free text on read and encrypts it on append."""

    cipher: DataKeys | None = None

    def _select(
        self, conditions: str = "", params: Sequence[Any] = (), order: str = "position", limit: int | None = None
    ) -> list[StoredRecord]:
        rows = self._rows(_COLUMNS, conditions, params, order, limit, hash_at=9, content=True)
        return [StoredRecord(*r[:10]) for r in rows] if self.checker else [StoredRecord(*r) for r in rows]

    def _rows(
        self,
        columns: str,
        conditions: str = "",
        params: Sequence[Any] = (),
        order: str = "position",
        limit: int | None = None,
        *,
        after: int = 0,
        hash_at: int | None = None,
        content: bool = False,
    ) -> list[tuple[Any, ...]]:
        """Rows of ``columns`` (position first). With ``hash_at`` (where the ``hash`` column is) and a key, each
        row's authenticator (its ``mac`` column) is read beside it and checked: a row the ledger did not write raises
        :class:`~ledger.core.errors.IntegrityViolation` naming its position, and no row of the read is returned;
        the rows keep the authenticator as a last column (no copy of every row on a replay)."""
        # Every read sees only rows on the chain's positions: a row forced in at 0 or below is never obeyed.
        # ``position > max(after, 0)`` is the one lower bound: given two (``position >= 1 AND position > ?``)
        # SQLite seeked to the constant one and stepped over every row before ``after``, on every page.
        checker = self.checker if hash_at is not None else None
        source = f"{columns} FROM events" if checker is None else f"{columns}, mac FROM events"
        text = f"SELECT {source} WHERE position > ?{' AND ' + conditions if conditions else ''}"
        text += f" ORDER BY {order}"
        if limit is not None:
            text += f" LIMIT {int(limit)}"
        with self._read_cursor() as cur:
            cur.execute(self.sql(text), (max(after, 0), *params))
            rows: list[tuple[Any, ...]] = cur.fetchall()
            if rows and content and self.cipher is not None:
                # Erasures committed up to now (here or in another process): their keys are never used again,
                # whatever this process had read before; learnt after the rows were read and before they are
                # decoded, so no row read here decrypts under a key destroyed before it is returned.
                self.cipher.refresh(cur)
        if checker is not None and hash_at is not None:
            checker.check_rows(rows, hash_at, content=content)
        return rows

    def load_stream(self, stream: str, after_version: int = 0) -> StreamState:
        """Load the events of ``stream`` after ``after_version`` for a decision, with the stream's version."""
        records = self._select("stream = ? AND version > ?", (stream, after_version), order="version")
        events = [decode(r, self.cipher) for r in records]
        return StreamState(stream, events[-1].version if events else after_version, events)

    def get(self, position: int) -> StoredRecord | None:
        rows = self._select("position = ?", (position,))
        return rows[0] if rows else None

    def record_of(self, stream: str, version: int) -> StoredRecord | None:
        """The record at ``version`` of ``stream`` (e.g. a block's ``MemoryRemembered`` at version 1)."""
        rows = self._select("stream = ? AND version = ?", (stream, version))
        return rows[0] if rows else None

    def records_at(self, positions: Sequence[int]) -> dict[int, StoredRecord]:
        """The records at ``positions`` (those that exist), by position: a few rows by primary key."""
        wanted = sorted({int(p) for p in positions})
        found: dict[int, StoredRecord] = {}
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            for r in self._select(f"position IN ({', '.join('?' for _ in chunk)})", chunk):
                found[r.position] = r
        return found

    def head(self) -> tuple[int, str]:
        """Return the last position and its hash (``0`` and the genesis hash for an empty ledger)."""
        with translate_errors(self.dialect), self.engine.connect() as conn:
            row = conn.exec_driver_sql(
                "SELECT position, hash FROM events WHERE position >= 1 ORDER BY position DESC LIMIT 1"
            ).fetchone()
        return (row[0], row[1]) if row else (0, GENESIS_HASH)

    def position_as_of(self, as_of: _dt.datetime) -> int:
        """The last position recorded at or before ``as_of`` (0 if none)."""
        with translate_errors(self.dialect), self.engine.connect() as conn:
            row = conn.exec_driver_sql(
                self.sql("SELECT MAX(position) FROM events WHERE position >= 1 AND recorded_at <= ?"),
                (format_ts(as_of),),
            ).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def iter_records(
        self,
        after: int = 0,
        until: int | None = None,
        *,
        stream: str | None = None,
        types: Sequence[str] | None = None,
        agent: str | None = None,
        batch_size: int = 5000,
    ) -> Iterator[StoredRecord]:
        """Yield stored records in position order, paging by position (no long-lived cursor).

        ``agent`` keeps only events whose metadata names that agent (filtered in the database, so a page of
        one agent's events never needs the others)."""
        for page in self._pages(_COLUMNS, after, until, stream, types, agent, batch_size, hash_at=9, content=True):
            yield from (StoredRecord(*r[:10]) for r in page) if self.checker else itertools.starmap(StoredRecord, page)

    def chain_hashes(self, until: int, batch_size: int = 20_000) -> Iterator[tuple[int, str]]:
        """Every position up to ``until`` with its chain hash, as the table holds them, authenticators NOT checked:
        for recomputing tree roots to compare with checkpoints signed earlier (``verify --checkpoint``), which ask
        of the log only that its hashes still make the root they signed. Nothing is decided on these rows."""
        for page in self._pages("position, hash", 0, until, None, None, None, batch_size, hash_at=None):
            for position, hash_hex in page:
                yield int(position), str(hash_hex)

    def iter_events(
        self,
        after: int = 0,
        until: int | None = None,
        *,
        stream: str | None = None,
        types: Sequence[str] | None = None,
        agent: str | None = None,
        batch_size: int = 5000,
    ) -> Iterator[RecordedEvent]:
        """Yield typed events in position order (upcast on read), filtered and paged as :meth:`iter_records`.

        Reads only the columns an event needs and decodes each row as it is (no ``StoredRecord`` between; the
        authenticator, checked, rides along as a last column ``decode_row`` ignores)."""
        for page in self._pages(ROW_COLUMNS, after, until, stream, types, agent, batch_size, hash_at=9, content=True):
            if self.cipher is None:
                yield from itertools.starmap(decode_row, page)
            else:
                cipher = self.cipher
                yield from (decode_row(*row, cipher=cipher) for row in page)

    def _pages(
        self,
        columns: str,
        after: int,
        until: int | None,
        stream: str | None,
        types: Sequence[str] | None,
        agent: str | None,
        batch_size: int,
        *,
        hash_at: int | None,
        content: bool = False,
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Pages of rows (``columns``, position first) after ``after``, each its own query from the last
        position of the one before; each row's authenticator checked as :meth:`_rows` says."""
        while True:
            clauses: list[str] = []
            params: list[Any] = []
            if until is not None:
                clauses.append("position <= ?")
                params.append(until)
            if stream is not None:
                clauses.append("stream = ?")
                params.append(stream)
            if types:
                clauses.append(f"type IN ({', '.join('?' for _ in types)})")
                params.extend(types)
            if agent is not None:
                clauses.append(_META_AGENT[self.dialect] + " = ?")
                params.append(agent)
            where = " AND ".join(clauses)
            page = self._rows(columns, where, params, limit=batch_size, after=after, hash_at=hash_at, content=content)
            if page:
                yield page
            if len(page) < batch_size:
                return
            after = page[-1][0]
