"""One manual curate at the largest size after 500 active hours: the decision and append, the live graph folding
the event and the FTS index applying it, each timed with the time spent holding the write lock."""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from benchkit.stats import Series
from benchkit.timing import timed_ms

from ledger.core.storage import SqlEventStore
from ledger.service import Actor, Ledger
from memory_bench.common import CURATE_AFTER_HOURS, RAW_FTS, SEARCH_LIMIT, BenchClock, console, fts_rows, match_string


@dataclass
class CurateOutcome:
    blocks: int
    edges_before: int
    active_hours: float
    archived: int
    edges_pruned: int
    constitutional_reinforced: int
    reinforced: int
    edges_after: int
    event_kb: float  # the MemoryCurated event's data JSON
    decide_s: float  # ledger.curate: decision + append
    graph_apply_s: float  # first memory_stats() after: the live graph folds the event
    index_apply_s: float  # ledger.index.catch_up() right after: FTS drops the archived blocks
    fts_before: int
    fts_after: int
    search_after: Series  # SearchIndex.search over the queries on the curated index
    raw_after: Series  # the raw LIMIT 10 query on the same
    decide_locked_s: float  # time inside write transactions (BEGIN IMMEDIATE .. COMMIT) during (a)
    index_locked_s: float  # ... during (c)

    @property
    def total_s(self) -> float:
        return self.decide_s + self.graph_apply_s + self.index_apply_s


class WriteLockTimer:
    """Times from after ``BEGIN IMMEDIATE`` to after ``COMMIT`` in every ``store.write_transaction`` while active
    (an instance attribute shadowing the store's method; the transaction itself is the store's own)."""

    def __init__(self, store: SqlEventStore) -> None:
        self.store = store
        self.held: list[float] = []

    def __enter__(self) -> WriteLockTimer:
        original = self.store.write_transaction
        held = self.held

        @contextlib.contextmanager
        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            start: float | None = None
            try:
                with original(*args, **kwargs) as cur:
                    start = time.perf_counter()
                    yield cur
            finally:
                if start is not None:
                    held.append(time.perf_counter() - start)

        self.store.write_transaction = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        del self.store.write_transaction

    @property
    def seconds(self) -> float:
        return sum(self.held)


def run_curate(
    ledger: Ledger, db_path: Path, clock: BenchClock, who: Actor, sid: str, queries: list[str]
) -> CurateOutcome:
    """Clock the session out 500 hours after it clocked in, then time one manual curate and what applies it."""
    before = ledger.memory_stats()
    clock.advance(_dt.timedelta(hours=CURATE_AFTER_HOURS))
    ledger.clock_out(who, sid)
    hours = ledger.memory_stats().active_hours  # catches the graph up to the clock-out: not part of the curate
    fts_before = fts_rows(db_path)
    console.log(f"curate at {before.blocks:,} blocks, {before.edges:,} edges, {hours:.1f} active hours")
    gc.collect()
    with WriteLockTimer(ledger.store) as decide_lock:
        t0 = time.perf_counter()
        result = ledger.curate(who)
        decide_s = time.perf_counter() - t0
    console.log(f"  (a) curate took {decide_s:.2f} s: archived {result.archived:,}, pruned {result.edges_pruned:,}")
    t0 = time.perf_counter()
    after = ledger.memory_stats()
    graph_apply_s = time.perf_counter() - t0
    console.log(f"  (b) the live graph folded the curate event in {graph_apply_s:.2f} s")
    with WriteLockTimer(ledger.store) as index_lock:
        t0 = time.perf_counter()
        ledger.index.catch_up()
        index_apply_s = time.perf_counter() - t0
    fts_after = fts_rows(db_path)
    console.log(f"  (c) the FTS index applied it in {index_apply_s:.2f} s ({fts_before:,} → {fts_after:,} rows)")
    assert after.archived == result.archived, (after.archived, result.archived)
    assert fts_after == fts_before - result.archived, (fts_before, fts_after, result.archived)
    assert ledger.index.checkpoint() == ledger.store.head()[0]
    [rec] = list(ledger.store.iter_records(result.position - 1, result.position))
    # Searches on the curated index (SearchIndex.search: the session above is clocked out), next to the raw query.
    search_after, raw_after = Series(), Series()
    raw = sqlite3.connect(db_path)
    for q in queries:
        search_after.samples.append(timed_ms(partial(ledger.index.search, q, SEARCH_LIMIT)))
        params = (match_string(q), SEARCH_LIMIT)
        raw_after.samples.append(timed_ms(lambda: raw.execute(RAW_FTS, params).fetchall()))  # noqa: B023
    raw.close()
    return CurateOutcome(
        blocks=before.blocks,
        edges_before=before.edges,
        active_hours=result.active_hours,
        archived=result.archived,
        edges_pruned=result.edges_pruned,
        constitutional_reinforced=result.constitutional_reinforced,
        reinforced=result.reinforced,
        edges_after=after.edges,
        event_kb=len(rec.data_json.encode()) / 1000,
        decide_s=decide_s,
        graph_apply_s=graph_apply_s,
        index_apply_s=index_apply_s,
        fts_before=fts_before,
        fts_after=fts_after,
        search_after=search_after,
        raw_after=raw_after,
        decide_locked_s=decide_lock.seconds,
        index_locked_s=index_lock.seconds,
    )
