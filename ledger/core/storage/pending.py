"""One append waiting in a group commit's queue (:mod:`.group_commit`): what to write, then its rows or its error,
and the few helpers the queue needs (the waiter's lock, an error copied per waiter)."""

from __future__ import annotations

import copy
import datetime as _dt
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ledger.core.events import DomainEvent, RecordedEvent
from ledger.core.sealed import NewKey


def _copy_error(exc: BaseException) -> BaseException:
    try:
        twin = copy.copy(exc)
    except Exception:  # an exception class that cannot be rebuilt from its args: share the one instance
        return exc
    twin.__cause__ = exc.__cause__
    return twin


def _held_lock() -> Any:
    lock = threading.Lock()
    lock.acquire()
    return lock


class _MemberRefused(Exception):
    """The database refused a row of a group written at once: write the group again, one member at a time."""


MAX_GROUP = 64
"""Most appends one group commit takes (each keeps its own version check, result and error)."""


@dataclass(slots=True)
class _Pending:
    """One append waiting for a group commit: what to write, then its rows or its error."""

    stream: str
    expected_version: int
    events: Sequence[DomainEvent]
    encoded: list[tuple[str, int, str]]
    meta: dict[str, Any]
    meta_json: str
    keys: list[NewKey]  # data keys made for it: written with its rows
    rows: list[tuple[Any, ...]] | None = None
    recorded_at: _dt.datetime | None = None
    error: BaseException | None = None
    done: bool = False
    # Held while the append waits in the queue; the leader releases it when the append is done or leads next.
    # One lock per waiter wakes exactly that thread (a shared condition woke every waiter for every group).
    wake: Any = None

    def outcome(self) -> list[RecordedEvent]:
        if self.error is not None:
            raise self.error
        assert self.rows is not None and self.recorded_at is not None
        # Build the result from the typed events already in hand instead of decoding the rows again.
        at = self.recorded_at
        meta = MappingProxyType(dict(self.meta))
        return [
            RecordedEvent(r[0], self.stream, r[2], at, meta, e, r[9])
            for r, e in zip(self.rows, self.events, strict=True)
        ]
