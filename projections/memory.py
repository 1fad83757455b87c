"""Memory blocks as the ledger knows them (the SQL full-text index is built from the same events)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from ledger.events import MemoryDuplicateRejected, MemoryRemembered, RecordedEvent
from projections._copy import with_changes


@dataclass(frozen=True, slots=True)
class BlockView:
    """One memory block."""

    block_id: str
    content: str
    tags: tuple[str, ...]
    created_at: _dt.datetime
    created_by: str | None
    duplicates_rejected: int = 0


def block_key(rec: RecordedEvent) -> str | None:
    e = rec.event
    return e.block_id if isinstance(e, MemoryRemembered | MemoryDuplicateRejected) else None


def evolve(view: BlockView | None, rec: RecordedEvent) -> BlockView | None:
    e = rec.event
    if isinstance(e, MemoryRemembered):
        return BlockView(e.block_id, e.content, tuple(e.tags), rec.recorded_at, rec.agent)
    if isinstance(e, MemoryDuplicateRejected) and view is not None:
        return with_changes(view, duplicates_rejected=view.duplicates_rejected + 1)
    return view
