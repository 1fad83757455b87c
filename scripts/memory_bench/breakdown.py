"""Where a search's and a recall's time goes: their steps timed inside real calls by wrappers on the product's own
methods, the SQL one index catch-up issues with its query plans, and a cProfile of recalls."""

from __future__ import annotations

import cProfile
import gc
import pstats
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType

from benchkit.stats import Series
from benchkit.timing import timed_ms
from sqlalchemy import event as sa_event

from ledger.memory import recall
from ledger.service import Actor, Ledger
from memory_bench.common import RAW_FTS, RECALL_LIMIT, SEARCH_LIMIT, TOP_K, SessionAppender, match_string


class Steps:
    """Times named calls made inside one top-level call, by wrapping them where they are looked up (instance or
    module attributes), so the code that runs is the product's own; each wrapper adds about a microsecond."""

    def __init__(self) -> None:
        self.current: dict[str, float] | None = None
        self.stack: list[str] = []
        self.undo: list[tuple[object, str, object | None]] = []

    def wrap(self, owner: object, attr: str, name: str, inside: str | None = None, outside: str | None = None) -> None:
        original = getattr(owner, attr)

        def timed(*args: object, **kwargs: object) -> object:
            cur = self.current
            if cur is None or (inside and inside not in self.stack) or (outside and outside in self.stack):
                return original(*args, **kwargs)
            self.stack.append(name)
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                cur[name] = cur.get(name, 0.0) + (time.perf_counter() - start) * 1000
                self.stack.pop()

        # Instances get an attribute that shadows the class's method (deleted afterwards); modules get theirs back.
        self.undo.append((owner, attr, original if isinstance(owner, ModuleType) else None))
        setattr(owner, attr, timed)

    def restore(self) -> None:
        for owner, attr, original in reversed(self.undo):
            if original is None:
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)
        self.undo.clear()

    def run(self, fn: Callable[[], object]) -> dict[str, float]:
        self.current = cur = {}
        start = time.perf_counter()
        try:
            fn()
        finally:
            self.current = None
        cur["total"] = (time.perf_counter() - start) * 1000
        return cur


# Parts of one call, each timed inside real calls (derived ones are differences of timed ones, per call).
SEARCH_PARTS = {
    "fts": "FTS query (`SearchIndex.search` less its catch-up)",
    "catch_up": "index catch-up",
    "append": "`SqlEventStore.append` of its event",
    "open_session": "`SessionGrants.open`",
    "rest": "the rest (deciding, building the result)",
}
RECALL_PARTS = {
    "fts": "FTS query (`SearchIndex.search` less its catch-up)",
    "catch_up": "index catch-up",
    "live": "`_live` (graph catch-up + active-hours clock)",
    "score": "`recall.score_blocks`",
    "recollect": "`recall.recollect`",
    "append": "append of its event",
    "open_session": "`SessionGrants.open`",
    "auto_curate": "`_auto_curate` (is a curate due?)",
    "rest": "the rest",
}
CATCH_UP_PARTS = {"head": "`store.head()`", "checkpoint": "`checkpoint()`", "probe": "the probe (the remainder)"}


@dataclass
class Breakdown:
    search: dict[str, Series]  # "total", SEARCH_PARTS, CATCH_UP_PARTS
    recall: dict[str, Series]  # "total", RECALL_PARTS, CATCH_UP_PARTS
    raw_10: Series  # raw query LIMIT 10, after an untimed append (the state a search meets)
    raw_20: Series
    raw_10_warm: Series  # the same raw query repeated at once on the same connection, no write between
    runs: int


def breakdown(
    ledger: Ledger, db_path: Path, who: Actor, sid: str, appender: SessionAppender, queries: list[str]
) -> Breakdown:
    """Where a search's and a recall's time goes, measured inside real calls on the current code.

    For each query, in the order real use gives (every call follows another call's append): ``Ledger.search``
    (limit 10) and ``Ledger.recall`` in a session (attention frame), with their steps timed by wrappers; and the raw
    FTS5 queries, each after an untimed ``MemorySearched`` append, then the LIMIT 10 one repeated at once.
    """
    raw = sqlite3.connect(db_path, isolation_level=None)
    steps = Steps()
    index, store = ledger.index, ledger.store
    steps.wrap(index, "search", "index")
    steps.wrap(index, "catch_up", "catch_up")
    steps.wrap(store, "head", "head", inside="catch_up")
    steps.wrap(index, "checkpoint", "checkpoint", inside="catch_up")
    steps.wrap(ledger.grants, "open", "open_session")
    steps.wrap(store, "append", "append", outside="auto_curate")
    steps.wrap(ledger.memory, "_auto_curate", "auto_curate")
    steps.wrap(ledger.memory, "_live", "live", outside="auto_curate")
    steps.wrap(recall, "score_blocks", "score", outside="auto_curate")
    steps.wrap(recall, "recollect", "recollect")
    search_samples: list[dict[str, float]] = []
    recall_samples: list[dict[str, float]] = []
    raw_10, raw_20, raw_10_warm = Series(), Series(), Series()
    gc.collect()
    try:
        for q in queries:
            search_samples.append(steps.run(partial(ledger.search, who, sid, q, limit=SEARCH_LIMIT)))
            recall_samples.append(
                steps.run(partial(ledger.recall, who, q, frame="attention", top_k=TOP_K, session_id=sid))
            )
            for limit, series in ((RECALL_LIMIT, raw_20), (SEARCH_LIMIT, raw_10)):
                appender.append(q)
                params = (match_string(q), limit)
                series.samples.append(timed_ms(lambda: raw.execute(RAW_FTS, params).fetchall()))  # noqa: B023
            raw_10_warm.samples.append(timed_ms(lambda: raw.execute(RAW_FTS, params).fetchall()))  # noqa: B023
    finally:
        steps.restore()
        raw.close()

    def parts(samples: list[dict[str, float]], names: dict[str, str]) -> dict[str, Series]:
        out: dict[str, Series] = {k: Series() for k in ("total", *names, *CATCH_UP_PARTS)}
        for sample in samples:
            # a step the current code does not take on this path (say, the index caught up at append time
            # rather than in the search) took no time in it
            s = {k: sample.get(k, 0.0) for k in ("index", "catch_up", "head", "checkpoint")} | sample
            derived = dict(s)
            derived["fts"] = s["index"] - s["catch_up"]
            derived["probe"] = s["catch_up"] - s["head"] - s["checkpoint"]
            derived["catch_up"] = s["catch_up"]
            derived["rest"] = (
                s["total"]
                - sum(derived.get(k, 0.0) for k in names if k not in ("rest", "fts", "catch_up"))
                - s["index"]
            )
            for k in out:
                out[k].samples.append(derived.get(k, 0.0))
        return out

    return Breakdown(
        search=parts(search_samples, SEARCH_PARTS),
        recall=parts(recall_samples, RECALL_PARTS),
        raw_10=raw_10,
        raw_20=raw_20,
        raw_10_warm=raw_10_warm,
        runs=len(queries),
    )


@dataclass
class Trace:
    """The statements one ``SearchIndex.catch_up()`` issued when only an ignored event was new."""

    selects: list[tuple[str, str]]  # (statement, EXPLAIN QUERY PLAN)
    others: list[str]  # every other statement it issued (BEGIN, INSERT, COMMIT, ...)
    checkpoint_moved: bool


def trace_catch_up(ledger: Ledger, db_path: Path, appender: SessionAppender) -> Trace:
    """Trace, on fresh pool connections, what the index catch-up runs after a non-memory event was appended."""
    traced: list[str] = []
    engine = ledger.store.engine

    def trace(dbapi_conn: sqlite3.Connection, _record: object) -> None:
        dbapi_conn.set_trace_callback(traced.append)

    appender.append("trace")
    before = ledger.index.checkpoint()
    engine.dispose()
    sa_event.listen(engine, "connect", trace)
    try:
        ledger.index.catch_up()
    finally:
        sa_event.remove(engine, "connect", trace)
        engine.dispose()
    statements = [" ".join(t.split()) for t in traced]
    selects = [t for t in statements if t.upper().startswith("SELECT")]
    others = [t for t in statements if not t.upper().startswith("SELECT")]
    raw = sqlite3.connect(db_path)
    plans = ["; ".join(r[-1] for r in raw.execute("EXPLAIN QUERY PLAN " + s).fetchall()) for s in selects]
    raw.close()
    return Trace(list(zip(selects, plans, strict=True)), others, ledger.index.checkpoint() != before)


PROFILED = [
    ("ledger/memory/", "recall", "`MemoryCommands.recall` in all"),
    ("projections/search/index", "search", "`SearchIndex.search`"),
    ("projections/search/index", "catch_up", "`SearchIndex.catch_up`"),
    ("ledger/core/storage", "iter_records", "`SqlEventStore.iter_records`"),
    ("ledger/core/storage", "head", "`SqlEventStore.head`"),
    ("ledger/core/storage", "append", "`SqlEventStore.append`"),
    ("ledger/memory/", "_live", "`_live` (graph catch-up + active-hours clock)"),
    ("ledger/memory/", "_auto_curate", "`_auto_curate`"),
    ("ledger/sessions/grants", "open", "`SessionGrants.open`"),
    ("ledger/memory/recall", "score_blocks", "`recall.score_blocks`"),
    ("ledger/memory/recall", "recollect", "`recall.recollect`"),
]


@dataclass
class Profile:
    named: list[tuple[str, float, float]]  # label, cumulative ms per recall, calls per recall
    top: list[tuple[str, float]]  # function, own ms per recall


def profile_recall(ledger: Ledger, who: Actor, sid: str, queries: list[str]) -> Profile:
    """cProfile over recalls in a session: cumulative ms and calls per recall of named steps, and the functions
    with the most own time."""
    prof = cProfile.Profile()
    prof.enable()
    for q in queries:
        ledger.recall(who, q, frame="attention", top_k=TOP_K, session_id=sid)
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    per = 1000 / len(queries)
    named = []
    for module, func, label in PROFILED:
        rows = [v for (f, _l, fn), v in stats.items() if fn == func and module in Path(f).as_posix()]
        named.append((label, sum(v[3] for v in rows) * per, sum(v[1] for v in rows) / len(queries)))
    own = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:8]
    top = []
    for (filename, _line, func), v in own:
        where = f"{Path(filename).name}:" if filename != "~" else ""
        top.append((f"{where}{func}", v[2] * per))
    return Profile(named, top)
