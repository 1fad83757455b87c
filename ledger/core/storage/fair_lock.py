"""The fair cross-process write lock of a SQLite file: ``flock`` on ``<database>.writelock`` beside it, so
writers queue in the kernel instead of in SQLite's sleeping busy handler."""

from __future__ import annotations

import errno
import functools
import os
import threading
import time
import urllib.parse
import weakref
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # not on Windows: SQLite's busy handler alone serialises writers there
    fcntl = None  # type: ignore[assignment]

from sqlalchemy.engine import Engine

from ledger.core.errors import StoreBusy
from ledger.core.storage.driver_errors import _BUSY_HINT


@functools.cache
def _libc_flock() -> tuple[Any, Any] | None:
    """libc's ``flock`` called through ctypes *without* releasing the GIL, and ctypes; ``None`` where unavailable.

    ``fcntl.flock`` releases the GIL around the system call; under concurrent writers the calling thread then
    waits for the GIL to come back behind every other runnable thread, twice per group commit. A lock request
    that cannot block (``LOCK_NB``, ``LOCK_UN``) takes a microsecond, so it keeps the GIL instead."""
    try:
        import ctypes

        function = ctypes.PyDLL(None, use_errno=True).flock
    except (ImportError, OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int)
    function.restype = ctypes.c_int
    return function, ctypes


def _flock_at_once(fd: int, operation: int) -> bool:
    """A non-blocking ``flock`` (``LOCK_EX | LOCK_NB`` or ``LOCK_UN``): ``False`` if another holder has the lock."""
    libc = _libc_flock()
    if libc is None:
        try:
            fcntl.flock(fd, operation)
        except BlockingIOError:
            return False
        return True
    function, ctypes = libc
    while function(fd, operation) != 0:
        error = ctypes.get_errno()
        if error in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        if error != errno.EINTR:
            raise OSError(error, os.strerror(error), None)
    return True


class _FairFileLock:
    """The cross-process write lock of one SQLite file: ``flock`` on ``<database>.writelock`` beside it.

    SQLite's own busy handler makes a waiting writer sleep and retry with growing pauses, so whichever process
    retries at the right moment wins and the others keep sleeping: unfair, with long tails. A writer blocked in
    ``flock`` is queued by the kernel and woken when the lock is released, without sleeping loops, and the
    kernel drops the lock when its process dies. BEGIN IMMEDIATE and the busy handler still exclude whatever
    does not take this lock (another program, an older ledger).

    Threads of one process take turns on an in-process lock first (one open file, so the kernel sees one
    owner). The wait is bounded: ``flock`` itself cannot time out, so a contended wait is handed to a helper
    thread that blocks in ``flock`` while the caller waits at most ``timeout``; if the caller gives up, the
    helper releases the lock as soon as it gets it (or hands it to the next caller of this process that waits
    by then).
    """

    _IDLE_SECONDS = 2.0  # a helper thread with nothing to wait for ends after this

    def __init__(self, path: str) -> None:
        self.path = path
        self._forget()

    def _forget(self) -> None:
        self._pid = -1
        self._fd = -1
        self._turn = threading.Lock()  # held by the thread of this process that holds or waits for the file lock
        self._state = threading.Condition()
        self._requested = False  # the helper is to block in flock (or is blocking there)
        self._wanted = False  # a caller still waits for the helper's flock
        self._granted = False  # the helper got the lock for the waiting caller
        self._helper = False  # a helper thread is alive

    def acquire(self, timeout: float) -> None:
        """Take the lock within ``timeout`` seconds, else raise :class:`StoreBusy` (nothing taken)."""
        deadline = time.monotonic() + timeout
        if self._pid not in (-1, os.getpid()):
            self._forget()  # a child after fork: the parent's locks, helper and open file are not this process's
        if not self._turn.acquire(timeout=min(max(0.0, timeout), threading.TIMEOUT_MAX)):
            raise self._busy(timeout)
        try:
            fd = self._open()
            with self._state:
                if not self._requested:
                    if _flock_at_once(fd, fcntl.LOCK_EX | fcntl.LOCK_NB):
                        return
                    self._requested = True
                    if not self._helper:
                        self._helper = True
                        threading.Thread(target=self._serve, name="ledger-writelock", daemon=True).start()
                    self._state.notify_all()
                self._wanted = True
                while not self._granted:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        self._wanted = False
                        raise self._busy(timeout)
                    self._state.wait(remaining)
                self._granted = self._wanted = False
        except BaseException:
            self._turn.release()
            raise

    def release(self) -> None:
        try:
            _flock_at_once(self._fd, fcntl.LOCK_UN)
        finally:
            self._turn.release()

    def _open(self) -> int:
        pid = os.getpid()
        if self._pid != pid:
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            except PermissionError:  # another user's lock file: flock needs no write access
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            self._pid = pid
            weakref.finalize(self, os.close, self._fd)
        return self._fd

    def _serve(self) -> None:
        """The helper: block in flock for a waiting caller; hand the lock over, or give it back if nobody waits."""
        with self._state:
            while True:
                while not self._requested:
                    if not self._state.wait(self._IDLE_SECONDS) and not self._requested:
                        self._helper = False
                        return
                fd = self._fd
                self._state.release()
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    got = True
                except OSError:  # not expected; the waiting caller then times out with StoreBusy
                    got = False
                finally:
                    self._state.acquire()
                self._requested = False
                if got and self._wanted:
                    self._granted = True
                    self._state.notify_all()
                elif got:
                    fcntl.flock(fd, fcntl.LOCK_UN)  # its caller gave up meanwhile

    def _busy(self, timeout: float) -> StoreBusy:
        return StoreBusy(
            f"SQLite store busy: another writer held the write lock ({self.path}) for over {timeout:g} s",
            _BUSY_HINT,
        )


def _write_lock_path(engine: Engine) -> str | None:
    """``<database>.writelock`` for a SQLite file; ``None`` for PostgreSQL and for in-memory or read-only SQLite."""
    if engine.dialect.name != "sqlite":
        return None
    database = engine.url.database or ""
    if database.startswith("file:"):  # a URI filename; its parameters may sit in the URL's query instead
        parsed = urllib.parse.urlsplit(database)
        mode = urllib.parse.parse_qs(parsed.query).get("mode") or engine.url.query.get("mode") or ""
        if (mode if isinstance(mode, str) else mode[-1]) in {"memory", "ro"}:
            return None
        database = urllib.parse.unquote(parsed.path)
    if not database or database == ":memory:":
        return None
    return f"{Path(database).expanduser()}.writelock"
