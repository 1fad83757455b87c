"""The latency table: every operation once per query in a rotating order, for each pass over the queries, with
the raw FTS5 query at the same LIMIT as the baseline; and how many blocks each query matches."""

from __future__ import annotations

import gc
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from benchkit.stats import Series, median, percentile
from benchkit.timing import rotated, timed_ms

from ledger.service import Actor, Ledger
from memory_bench.common import (
    RAW_FTS,
    RAW_SELF,
    RECALL_LIMIT,
    SEARCH_LIMIT,
    SELF_RUNS,
    TOP_K,
    SessionAppender,
    match_string,
)

OPS = {
    "raw_fts_20": f"raw FTS5 query, LIMIT {RECALL_LIMIT} (what recall asks for), after an append",
    "raw_fts_10": f"raw FTS5 query, LIMIT {SEARCH_LIMIT} (what search asks for), after an append",
    "append": "`SqlEventStore.append` of one `MemorySearched` (no search)",
    "search": f"`Ledger.search` in a session, limit {SEARCH_LIMIT}",
    "recall": f"`Ledger.recall` in a session, attention frame, top_k {TOP_K}",
    "recall_nosession": f"`Ledger.recall` without a session, attention frame, top_k {TOP_K}",
    "recall_self": f"`Ledger.recall` without a query, self frame, top_k {TOP_K}",
    "raw_self": "raw scan of the FTS table for `self/` tags (`tags_json LIKE`)",
}
BASELINE_OF = {"search": "raw_fts_10", "recall": "raw_fts_20", "recall_nosession": "raw_fts_20"}


def measure(
    ledger: Ledger, db_path: Path, who: Actor, sid: str, appender: SessionAppender, queries: list[str], passes: int
) -> dict[str, Series]:
    """Every op once per query, in a rotating order, for ``passes`` passes over the queries."""
    raw = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    raw.execute("PRAGMA busy_timeout=30000")
    ops: dict[str, Callable[[str], object]] = {
        "raw_fts_20": lambda q: raw.execute(RAW_FTS, (match_string(q), RECALL_LIMIT)).fetchall(),
        "raw_fts_10": lambda q: raw.execute(RAW_FTS, (match_string(q), SEARCH_LIMIT)).fetchall(),
        "append": appender.append,
        "search": lambda q: ledger.search(who, sid, q, limit=SEARCH_LIMIT),
        "recall": lambda q: ledger.recall(who, q, frame="attention", top_k=TOP_K, session_id=sid),
        "recall_nosession": lambda q: ledger.recall(who, q, frame="attention", top_k=TOP_K),
    }
    # Every search and recall follows another call's append; each raw query gets the same: an untimed append of
    # a MemorySearched just before it, so it too runs on a database just written to.
    before: dict[str, Callable[[str], object]] = {"raw_fts_20": appender.append, "raw_fts_10": appender.append}
    # Warm-up, not timed: the first calls catch the index and the graph up and fill SQLite's page cache.
    for q in queries[:10]:
        for name, op in ops.items():
            if name in before:
                before[name](q)
            op(q)
    series = {name: Series() for name in ops}
    names = list(ops)
    gc.collect()
    for p in range(passes):
        for i, q in enumerate(queries):
            for name in rotated(names, i + p):
                if name in before:
                    before[name](q)
                op = ops[name]
                start = time.perf_counter()
                op(q)
                series[name].samples.append((time.perf_counter() - start) * 1000)
    # Queryless self frame: every live block is a candidate until the tag filter; fewer runs.
    self_recall = Series()
    self_raw = Series()
    for _ in range(SELF_RUNS):
        self_recall.samples.append(timed_ms(lambda: ledger.recall(who, None, frame="self", top_k=TOP_K)))
        self_raw.samples.append(timed_ms(lambda: raw.execute(RAW_SELF).fetchall()))
    series["recall_self"], series["raw_self"] = self_recall, self_raw
    raw.close()
    return series


def hit_counts(db_path: Path, queries: list[str]) -> dict[str, float]:
    """How many blocks each query matches (before LIMIT): the work the FTS query does to rank."""
    raw = sqlite3.connect(db_path)
    counts = [
        raw.execute("SELECT COUNT(*) FROM memory_fts WHERE memory_fts MATCH ?", (match_string(q),)).fetchone()[0]
        for q in queries
    ]
    total = raw.execute("SELECT COUNT(*) FROM memory_fts").fetchone()[0]
    raw.close()
    return {
        "median": median(counts),
        "p90": percentile(counts, 90),
        "max": max(counts),
        "none": sum(1 for c in counts if c == 0),
        "rows": total,
    }
