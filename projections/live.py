"""A read model kept live: one long-lived :class:`~projections.runner.ProjectionRunner` per process, restored
from its newest snapshot the first time, caught up with the log's tail before each read, and read under a lock
(HTTP requests run on a thread pool and share it); or a fresh runner replayed to a past position.

The capabilities that read the log this way (the compliance report and its series, the memory graph, the
brain's thought traffic) each hold one :class:`LiveProjection` and say what they read from it (the *view*).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar

from ledger.core.storage import LedgerStore
from projections.runner import AggregateProjection, Projection, ProjectionRunner
from projections.snapshots import Snapshots

V = TypeVar("V")


class Log(Protocol):
    """Where a live projection reads: the store and its snapshots (the kernel), looked up at each read."""

    @property
    def store(self) -> LedgerStore: ...

    @property
    def snapshots(self) -> Snapshots: ...


class LiveProjection(Generic[V]):
    """Some projections kept caught up with the log, read through ``view(runner)`` under a lock.

    ``types``: the event types the tail is read for (``None``: every event); a replay to a past position reads
    every event up to it."""

    def __init__(
        self,
        log: Log,
        projections: Sequence[Projection | AggregateProjection],
        view: Callable[[ProjectionRunner], V],
        *,
        types: Sequence[str] | None = None,
    ) -> None:
        self.log = log
        self.projections = tuple(projections)
        self.view = view
        self.types = None if types is None else list(types)
        self.runner = ProjectionRunner(self.projections)
        self._lock = threading.Lock()

    @contextmanager
    def read(self) -> Iterator[V]:
        """The view of the runner caught up to the head of the log, held under the lock while in use."""
        store = self.log.store
        with self._lock:
            if self.types is None:
                self.log.snapshots.catch_up(self.runner, lambda after: store.iter_events(after))
            else:
                types = self.types
                self.log.snapshots.catch_up(self.runner, lambda after: store.iter_events(after, types=types))
            yield self.view(self.runner)

    def current(self) -> V:
        """The view caught up to the head, taken under the lock (for a view that copies what it reads)."""
        with self.read() as view:
            return view

    def replay_to(self, until: int) -> ProjectionRunner:
        """A fresh runner of the same projections folded to position ``until`` (its newest snapshot at or before
        it, then the gap); the live runner and its lock are not touched."""
        return self.log.snapshots.replay_to(ProjectionRunner(self.projections), self.log.store.iter_events, until)
