"""Cluster-wide exclusion for work that one node at a time should do (a lease): the periodic checkpoint and
snapshot writers, and near-duplicate consolidation at remember time.

:class:`Leases` gives :meth:`Leases.hold`: a context manager that yields whether this caller holds the lease.
``wait=False`` tries once (a background writer that finds another node at it skips its turn); ``wait=True`` waits
at most the store's lock timeout (or ``patience`` seconds) and then raises :class:`~ledger.core.errors.StoreBusy`
(nothing done).

* **PostgreSQL**: a *transaction-level* advisory lock (``pg_try_advisory_xact_lock`` / ``pg_advisory_xact_lock``)
  keyed, like the write lock, by the oid of this ledger's ``events`` table and the lease's key, on a pooled
  connection of its own whose transaction stays open while the block runs. Being transaction-scoped, a node that
  stalls (SIGSTOP, a long pause) while it holds one loses it after ``idle_in_transaction_session_timeout``
  (:class:`~ledger.core.limits.Timeouts`), as it loses the write lock: a frozen node never keeps the others from
  checkpointing or remembering for longer than that. Work that may rightly take longer (a checkpoint waits for
  its witnesses) says so with ``hold``: that lease's transaction may stay idle that long instead. A block that runs
  longer than its bound loses the lease the same way (the end of the block then finds the session gone; nothing
  else follows from it).
* **SQLite** (one host): an exclusive ``flock`` on ``<database>.lease-<key>`` beside the file, which excludes the
  other processes on that file (``serve`` and ``mcp`` side by side).
* **Everywhere**: the threads of one process take an in-process lock first, so a node asks the database once.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

from sqlalchemy.engine import Engine

from ledger.core.errors import StoreBusy
from ledger.core.limits import Timeouts
from ledger.core.storage.driver_errors import _BUSY_HINT, translate_errors
from ledger.core.storage.fair_lock import _write_lock_path, fcntl
from ledger.core.storage.schema import _LEDGER_OID

_POLL_SECONDS = 0.02  # how often a waiting SQLite lease retries its flock (flock itself cannot time out)


class Leases:
    """The leases of one store (one engine)."""

    def __init__(self, engine: Engine, timeouts: Timeouts) -> None:
        self.engine = engine
        self.timeouts = timeouts
        self.dialect = engine.dialect.name
        self._local: dict[int, threading.Lock] = {}
        self._guard = threading.Lock()

    def _in_process(self, key: int) -> threading.Lock:
        with self._guard:
            return self._local.setdefault(key, threading.Lock())

    @contextlib.contextmanager
    def hold(self, key: int, *, wait: bool, hold: float | None = None, patience: float | None = None) -> Iterator[bool]:
        """Hold the lease ``key`` while the block runs; yields whether it is held (always ``True`` with ``wait``,
        which raises :class:`StoreBusy` past ``patience`` seconds, default the lock timeout, instead). ``hold``:
        the longest the block may run before a stalled holder loses the lease (PostgreSQL; default the sessions'
        idle-in-transaction timeout)."""
        patience = self.timeouts.lock if patience is None else patience
        local = self._in_process(key)
        if not local.acquire(timeout=patience if wait else 0):
            if wait:
                raise StoreBusy(f"another thread of this process held lease {key:#x} past the lock timeout", _BUSY_HINT)
            yield False
            return
        try:
            if self.dialect == "postgresql":
                with self._postgres(key, wait, hold, patience) as held:
                    yield held
            else:
                with self._file(key, wait, patience) as held:
                    yield held
        finally:
            local.release()

    @contextlib.contextmanager
    def _postgres(self, key: int, wait: bool, hold: float | None, patience: float) -> Iterator[bool]:
        take = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
        with translate_errors(self.dialect):
            conn = self.engine.raw_connection()
        try:
            with translate_errors(self.dialect):
                cur = conn.cursor()
                cur.execute(f"SET LOCAL lock_timeout = {max(1, round(patience * 1000))}")
                if hold is not None:
                    cur.execute(f"SET LOCAL idle_in_transaction_session_timeout = {max(1, round(hold * 1000))}")
                cur.execute(f"SELECT {take}({_LEDGER_OID}, {int(key)})")
                row = cur.fetchone()
            held = wait or bool(row and row[0])
            if not held:
                conn.rollback()
            yield held
        finally:
            try:
                conn.rollback()  # ends the transaction, and the lease with it
                conn.close()
            except Exception:  # the session ended under the block (idle-in-transaction timeout): nothing to release
                conn.invalidate()

    @contextlib.contextmanager
    def _file(self, key: int, wait: bool, patience: float) -> Iterator[bool]:
        path = _write_lock_path(self.engine)
        if path is None or fcntl is None:  # in-memory or read-only SQLite: one process, the in-process lock is all
            yield True
            return
        lock_path = f"{path.removesuffix('.writelock')}.lease-{key:08x}"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:  # a directory the ledger cannot write to: no other process writes there either
            yield True
            return
        try:
            deadline = time.monotonic() + patience
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    held = True
                    break
                except BlockingIOError:
                    if not wait:
                        held = False
                        break
                    if time.monotonic() >= deadline:
                        raise StoreBusy(
                            f"another process held lease {key:#x} of {path.removesuffix('.writelock')} past the "
                            "lock timeout",
                            _BUSY_HINT,
                        ) from None
                    time.sleep(_POLL_SECONDS)
            try:
                yield held
            finally:
                if held:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


@contextlib.contextmanager
def in_process(lock: threading.Lock, *, wait: bool, timeout: float) -> Iterator[bool]:
    """A lease for a store with no database of its own to share (the in-memory store): a lock of this process."""
    if not lock.acquire(timeout=timeout if wait else 0):
        if wait:
            raise StoreBusy("another thread of this process held the lease past the lock timeout", _BUSY_HINT)
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
