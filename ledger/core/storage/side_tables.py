"""The SQL database of a :class:`~.memory.MemoryStore`'s read models (search index, snapshots, data keys): one
in-memory SQLite connection shared by the store's threads one at a time, under the store's lock."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.pool import ConnectionPoolEntry, StaticPool

from ledger.core.storage.driver_errors import translate_errors
from ledger.core.storage.schema import APPEND_LOCK

# the position and type of each event, written in the append: the read models' catch-up queries ask SQL for them
LOG_INDEX = "CREATE TABLE IF NOT EXISTS events (position INTEGER PRIMARY KEY, type TEXT NOT NULL)"


def _locked_pool(lock: threading.RLock) -> type[StaticPool]:
    """A one-connection pool whose every checkout holds ``lock`` until that connection is handed back."""

    class LockedStaticPool(StaticPool):
        def _do_get(self) -> ConnectionPoolEntry:
            lock.acquire()
            try:
                return super()._do_get()
            except BaseException:
                lock.release()
                raise

        def _do_return_conn(self, record: ConnectionPoolEntry) -> None:
            try:
                super()._do_return_conn(record)
            finally:
                lock.release()

    return LockedStaticPool


class SideTables:
    """The SQL database of a memory store's read models: one in-memory SQLite connection, used by one thread at a
    time (cursors, write transactions and the engine's connections hold a lock; a write transaction inside another
    is a savepoint)."""

    dialect = "sqlite"

    def __init__(self, lock: threading.RLock | None = None) -> None:
        connection = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._raw = connection
        self._lock = lock or threading.RLock()
        # One connection behind the engine too; no rollback when the engine hands it back (a read on it may run
        # inside a write transaction of this thread). A thread holds the lock while it holds the connection, so
        # another thread's commit never ends this one's transaction.
        # The lock is taken in the pool's own get, before the pool hands the connection's one record out: taken
        # in a "checkout" listener instead, a thread waiting there has already made the shared record its own, and
        # the holder's return then fires no "checkin" for the waiter (a lock never released, every thread stuck).
        self.engine: Engine = sa.create_engine(
            "sqlite://", creator=lambda: connection, poolclass=_locked_pool(self._lock), pool_reset_on_return=None
        )

    def sql(self, text: str) -> str:
        return text

    @contextlib.contextmanager
    def _read(self) -> Iterator[Any]:
        with self._lock, translate_errors(self.dialect):
            yield self._raw.cursor()

    def read_cursor(self) -> contextlib.AbstractContextManager[Any]:
        return self._read()

    @contextlib.contextmanager
    def _write(self) -> Iterator[Any]:
        with self._lock, translate_errors(self.dialect):
            cur = self._raw.cursor()
            if self._raw.in_transaction:
                cur.execute("SAVEPOINT side_write")
                try:
                    yield cur
                except BaseException:
                    cur.execute("ROLLBACK TO SAVEPOINT side_write")
                    cur.execute("RELEASE SAVEPOINT side_write")
                    raise
                cur.execute("RELEASE SAVEPOINT side_write")
                return
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                self._raw.rollback()
                raise
            self._raw.commit()

    def write_transaction(self, lock: int = APPEND_LOCK) -> contextlib.AbstractContextManager[Any]:
        """A write transaction on the side tables (``lock`` is the SQL store's lock key; one lock serves here)."""
        return self._write()

    def dispose(self) -> None:
        self.engine.dispose()
        self._raw.close()
