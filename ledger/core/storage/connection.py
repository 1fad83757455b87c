"""The store's connection to its database: the dialect's paramstyle, serialised write transactions (the fair
lock, BEGIN IMMEDIATE or an advisory lock) and pooled cursors for reads."""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Iterator
from typing import Any

from sqlalchemy import event as sa_event
from sqlalchemy.engine import Engine

from ledger.core.limits import Timeouts
from ledger.core.storage.authenticator import RowKey
from ledger.core.storage.driver_errors import translate_errors
from ledger.core.storage.fair_lock import _FairFileLock, _write_lock_path, fcntl
from ledger.core.storage.leases import Leases
from ledger.core.storage.schema import _LEDGER_OID, APPEND_LOCK


class StoreConnection:
    """The engine of one store, its write transactions and its read cursors; the base of the store's parts."""

    def __init__(
        self,
        engine: Engine,
        timeouts: Timeouts | None = None,
        *,
        fair_lock: bool = True,
        row_key: RowKey | None = None,
        tlog: bool = True,
    ) -> None:
        self.engine = engine
        self.row_key = row_key
        # Whether appends keep the tree and write authenticators (False: benchmarks only, see SqlEventStore).
        self.tlog = tlog
        # What reads check every row's authenticator with: None when this store has no key, or no tree.
        self.checker = row_key if tlog else None
        self.timeouts = timeouts or Timeouts()
        self.dialect = engine.dialect.name
        self._ph = "?" if self.dialect == "sqlite" else "%s"
        lock_path = _write_lock_path(engine) if fair_lock and fcntl is not None else None
        self._write_lock = _FairFileLock(lock_path) if lock_path else None
        self._leases = Leases(engine, self.timeouts)
        # SQLite with the fair lock: the connection its holder writes on, kept between transactions (the lock lets
        # one thread of this process write at a time). Taking one from the pool and giving it back (with the pool's
        # rollback) cost a single writer's append about a tenth of its time. (pid, connection); dropped on error.
        self._writer: tuple[int, Any] | None = None
        if self._write_lock is not None:
            # Whoever disposes of the engine means every connection closed (a copy of the file taken next, say):
            # the held one too. A weak reference: the engine's listener does not keep the store alive.
            ref = weakref.ref(self)
            sa_event.listen(engine, "engine_disposed", lambda _engine: _close_held(ref))

    def lease(
        self, key: int, *, wait: bool = False, hold: float | None = None, patience: float | None = None
    ) -> contextlib.AbstractContextManager[bool]:
        """Hold the lease ``key`` (:mod:`.leases`) of this ledger, shared by every process on its database, while
        the block runs; yields whether it is held (``wait``: waits up to ``patience``, default the lock timeout,
        then StoreBusy). ``hold``: how long the block may rightly run (default: the idle-in-transaction timeout)."""
        return self._leases.hold(key, wait=wait, hold=hold, patience=patience)

    def sql(self, text: str) -> str:
        """Adapt a statement written with ``?`` placeholders to the driver's paramstyle."""
        return text if self._ph == "?" else text.replace("?", "%s")

    @contextlib.contextmanager
    def write_transaction(self, lock: int = APPEND_LOCK) -> Iterator[Any]:
        """Yield a DBAPI cursor inside a serialised write transaction; commit on success, roll back on error.

        The wait for the lock is bounded (``timeouts.lock``): past it :class:`StoreBusy`, nothing written. On a
        SQLite file, writers of every process first queue for its fair lock (:class:`_FairFileLock`), held until
        the transaction has committed or rolled back.
        """
        write_lock = self._take_write_lock()
        try:
            with translate_errors(self.dialect):
                held = write_lock is not None and self.dialect == "sqlite"
                conn = self._held_writer() if held else self.engine.raw_connection()
                kept = False
                try:
                    cur = conn.cursor()
                    try:
                        if self.dialect == "sqlite":
                            cur.execute("BEGIN IMMEDIATE")
                        else:
                            # One round trip (simple protocol: no parameters); an advisory lock wait honours
                            # lock_timeout. LOCAL: these limits end with the transaction.
                            cur.execute(
                                f"SET LOCAL lock_timeout = {self.timeouts.lock_ms}; "
                                f"SET LOCAL statement_timeout = {self.timeouts.statement_ms}; "
                                f"SELECT pg_advisory_xact_lock({_LEDGER_OID}, {int(lock)})"
                            )
                        yield cur
                    except BaseException:
                        conn.rollback()
                        raise
                    conn.commit()
                    kept = held
                finally:
                    if not kept:  # a failed transaction's connection goes back (a held one is dropped with it)
                        if held:
                            self._writer = None
                        conn.close()
        finally:
            if write_lock is not None:
                write_lock.release()

    def _held_writer(self) -> Any:
        """The connection the fair lock's holder writes on in this process (taken from the pool once)."""
        pid = os.getpid()
        if self._writer is None or self._writer[0] != pid:  # after fork, the parent's is not this process's
            self._writer = (pid, self.engine.raw_connection())
        return self._writer[1]

    def _drop_writer(self, *, invalidate: bool = False) -> None:
        """Give the held write connection back to the pool (before the engine is disposed), or with
        ``invalidate`` close its database connection (the engine was disposed of: the pool it came from is gone)."""
        writer, self._writer = self._writer, None
        if writer is not None and writer[0] == os.getpid():
            with contextlib.suppress(Exception):
                if invalidate:
                    writer[1].invalidate()
                else:
                    writer[1].close()

    def _take_write_lock(self) -> _FairFileLock | None:
        """Take the SQLite file's fair lock, if it has one; ``None`` when there is none to take."""
        write_lock = self._write_lock
        if write_lock is None:
            return None
        try:
            write_lock.acquire(self.timeouts.lock)
        except OSError:
            # The lock file cannot be created (a read-only directory, say): SQLite's busy handler alone serialises
            # this store's writers, as it did before the fair lock.
            self._write_lock = None
            return None
        return write_lock

    @contextlib.contextmanager
    def _read_cursor(self) -> Iterator[Any]:
        """A DBAPI cursor for reads (cheaper than SQLAlchemy result rows on the replay path)."""
        with translate_errors(self.dialect):
            conn = self.engine.raw_connection()
            try:
                yield conn.cursor()
            finally:
                conn.close()  # the pool rolls back whatever read transaction the driver opened

    def read_cursor(self) -> contextlib.AbstractContextManager[Any]:
        """A DBAPI cursor on a pooled connection for reads (derived read models use it too); driver errors are
        translated into the ledger's own."""
        return self._read_cursor()


def _close_held(ref: weakref.ref[StoreConnection]) -> None:
    store = ref()
    if store is not None:
        store._drop_writer(invalidate=True)
