"""A realistic ledger to measure on: sessions of searches and stamps with some refusals, and memory blocks, in the
mix an agent fleet writes. The replay benchmark folds it; the cold-start and serve-memory benchmarks open it."""

from __future__ import annotations

import datetime as _dt
import random
from collections import Counter
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ledger.core.events import (
    ComplianceRefused,
    ComplianceStamped,
    DomainEvent,
    MemoryRemembered,
    MemorySearched,
    SessionEnded,
    SessionStarted,
)
from ledger.core.storage import EventStore
from ledger.memory import decisions as memory
from ledger.sessions import gate
from ledger_bench.fixtures import QUERIES, console


def generate_log(store: EventStore, n_target: int) -> Counter[str]:
    """Fill ``store`` with ``n_target`` events of a realistic mix; return counts per type and of sessions."""
    rng = random.Random(4)
    agents = [f"agent-{i:02d}" for i in range(16)]
    counts: Counter[str] = Counter()
    head = store.head()[0]
    made = 0
    expires = _dt.datetime.now(_dt.UTC) + _dt.timedelta(minutes=30)
    with Progress(
        TextColumn("  generating"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("gen", total=n_target)
        while made < n_target:
            agent = agents[rng.randrange(len(agents))]
            sid = f"ses_{rng.getrandbits(80):020x}"
            meta = {"agent": agent, "source": "mcp", "session_id": sid}
            events: list[DomainEvent] = [
                SessionStarted(session_id=sid, agent=agent, role="dev", working_dir="/work/repo", focus="bench replay")
            ]
            for _ in range(rng.randint(20, 28)):
                search_position = head + len(events) + 1
                found = rng.randint(0, 5)
                events.append(
                    MemorySearched(
                        session_id=sid,
                        query=QUERIES[rng.randrange(len(QUERIES))],
                        limit=10,
                        result_ids=[f"blk_{rng.getrandbits(96):024x}" for _ in range(found)],
                        count=found,
                        token_expires_at=expires,
                    )
                )
                events.append(
                    ComplianceStamped(
                        session_id=sid,
                        search_position=search_position,
                        count=found,
                        stamp=gate.stamp_text(found),
                    )
                )
                if rng.random() < 0.15:
                    events.append(ComplianceRefused(session_id=sid, reason="token_consumed", message=gate.MSG_CONSUMED))
            events.append(SessionEnded(session_id=sid))
            events = events[: n_target - made]
            recorded = store.append(f"session:{sid}", 0, events, meta)
            head = recorded[-1].position
            made += len(events)
            counts["sessions"] += 1
            counts.update(type(e).type_name for e in events)
            for _ in range(rng.randint(2, 3)):
                if made >= n_target:
                    break
                content = (
                    f"memory {counts['MemoryRemembered']}: {QUERIES[rng.randrange(len(QUERIES))]} — "
                    f"decided in session {sid}, see ADR-{rng.randrange(1000)}"
                )
                block_id = memory.block_id_for(content)
                store.append(
                    memory.stream_for(block_id),
                    0,
                    [MemoryRemembered(block_id=block_id, content=content, tags=["bench", "adr"], session_id=sid)],
                    meta,
                )
                head += 1
                made += 1
                counts["MemoryRemembered"] += 1
            progress.update(task, completed=made)
    return counts


def build(path: Path, events: int) -> None:
    """A SQLite ledger at ``path`` (created through ``initialise``, snapshots off) holding ``events`` events of the
    mix above, with its search index caught up."""
    from api.bootstrap import initialise
    from api.settings import Settings

    ledger, _ = initialise(
        Settings(home=path.parent, database_url=f"sqlite:///{path}", snapshot_every_events=0)  # type: ignore[call-arg]
    )
    generate_log(ledger.store, events)
    ledger.index.catch_up()
    ledger.store.engine.dispose()


def rebuild_snapshots(home: Path, url: str) -> int:
    """Write the projection snapshots of the ledger at ``url`` (what ``replay --rebuild`` does); how many."""
    from api.bootstrap import open_ledger
    from api.settings import Settings

    ledger = open_ledger(Settings(home=home, database_url=url))  # type: ignore[call-arg]
    try:
        return ledger.rebuild_snapshots()
    finally:
        ledger.store.engine.dispose()
