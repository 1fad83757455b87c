#!/usr/bin/env python3
"""Memory recall/search latency at 10,000 and 100,000 blocks next to a raw FTS5 query, and one full curate.

Measures, in one run, on a real ledger in a temporary SQLite file (WAL, ``synchronous=FULL`` as configured),
created through ``api.bootstrap.initialise`` (the normal path, so the schema and its indexes are the product's):
  * the baseline: the service's own FTS5 query (same MATCH string, same ORDER BY, same LIMIT) run on a plain
    ``sqlite3`` connection to the same file — the irreducible cost of asking the index;
  * ``Ledger.search`` (limit 10) and ``Ledger.recall`` (attention frame, top_k 5, so 20 FTS candidates) in a
    session, recall without a session, and a queryless ``recall(frame="self")``; each timed call appends one
    event (one fsync), so a bare ``SqlEventStore.append`` of the event a search appends is timed as well;
  * where a search's time goes: its steps (index catch-up and its probe, FTS query, session load, append) timed
    apart on the current code, a cProfile of recalls, and the SQL the index catch-up issues with its query plans;
  * one manual ``Ledger.curate`` at the largest size, after 500 active hours: the decision + append, the live
    graph folding the curate event, and the FTS index applying it, each timed.
Target (the issue's): recall and search p50 ≤ 3× the raw query's p50 at the matching limit.
Results go to the "Memory (scripts/bench_memory.py)" section of docs/BENCHMARKS.md (replaced on each run).

    .venv/bin/python scripts/bench_memory.py              # 10,000 and 100,000 blocks (a few minutes)
    .venv/bin/python scripts/bench_memory.py --quick      # 2,000 and 10,000 blocks; prints, writes nothing
    .venv/bin/python scripts/bench_memory.py --sizes 5000 50000 --output /tmp/b.md
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime as _dt
import gc
import pstats
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_util import environment, load_average, median, percentile  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn  # noqa: E402
from sqlalchemy import event as sa_event  # noqa: E402

from api.bootstrap import initialise, open_ledger  # noqa: E402
from api.settings import Settings  # noqa: E402
from ledger.core.canonical import format_ts  # noqa: E402
from ledger.core.chain import chain_rows  # noqa: E402
from ledger.core.events import MemoryRemembered, MemorySearched  # noqa: E402
from ledger.core.mapper import encode, encode_meta  # noqa: E402
from ledger.core.storage import SqlEventStore  # noqa: E402
from ledger.memory import decisions as memory  # noqa: E402
from ledger.memory import recall  # noqa: E402
from ledger.memory.constitution import CONSTITUTION  # noqa: E402
from ledger.service import Actor, Ledger  # noqa: E402
from projections import search_index  # noqa: E402
from projections.search_index import query_terms  # noqa: E402

console = Console(stderr=True, width=160, log_path=False)

SECTION = "## Memory (scripts/bench_memory.py)"
TARGET = 3.0
DEFAULT_SIZES = (10_000, 100_000)
QUICK_SIZES = (2_000, 10_000)
N_QUERIES = 200
TOP_K = 5
SEARCH_LIMIT = 10
RECALL_LIMIT = TOP_K * recall.CANDIDATES_PER_SLOT  # what recall asks the index for
CURATE_AFTER_HOURS = 500
FILL_BATCH = 2_000
AGENT = "bench"
COLUMNS = "position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash"
INSERT = f"INSERT INTO events ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
HEAD = "SELECT position, hash, recorded_at FROM events ORDER BY position DESC LIMIT 1"
RAW_FTS = (
    "SELECT block_id, content, tags_json, -bm25(memory_fts) AS score FROM memory_fts "
    "WHERE memory_fts MATCH ? ORDER BY score DESC, block_id LIMIT ?"
)
RAW_SELF = "SELECT block_id, content, tags_json FROM memory_fts WHERE tags_json LIKE '%\"self/%'"
# The event types SearchIndex.catch_up reads (its probe and its apply loop), from the module itself.
INDEXED_TYPES = list(search_index._INDEXED)
TYPE_POSITION_INDEX = "ix_events_type_position"
SELF_RUNS = 30
PROFILE_RUNS = 50


# --- synthetic content --------------------------------------------------------------------------------------

# Real words first (the most frequent ranks), then made-up pronounceable ones up to a few thousand.
REAL_WORDS = """
database migration schema table index query cache session token error retry timeout lock transaction commit
rollback server client request response header payload event stream projection replay ledger hash chain
verify signature receipt key agent memory block recall search curate decay archive edge graph score weight
frame budget test fixture mock assert coverage lint type check build deploy release version branch merge
conflict rebase review patch diff file path directory config setting environment variable secret password
user role permission admin policy audit log metric trace span latency throughput benchmark profile memory
leak thread process worker queue job scheduler cron backoff limit quota rate burst window bucket sqlite
postgres connection pool driver cursor row column constraint unique foreign primary sequence vacuum analyze
backup restore snapshot checkpoint wal fsync journal page disk storage bucket blob upload download stream
parser tokenizer grammar syntax encoding unicode json yaml toml csv markdown html template render view
component handler route endpoint middleware authentication authorization cookie header cors proxy gateway
network socket port host dns certificate tls encryption decrypt compress archive bundle package dependency
upgrade downgrade pin resolver lockfile wheel module import export function class method interface protocol
adapter factory builder registry plugin hook callback promise future async await loop coroutine channel
signal shutdown startup health probe readiness liveness container image kubernetes pod cluster node replica
shard partition leader follower election consensus quorum heartbeat gossip clock drift skew monotonic
timestamp timezone calendar interval duration deadline budget estimate plan milestone phase goal task issue
ticket bug regression fix workaround hotfix incident outage postmortem alert pager oncall runbook dashboard
customer invoice billing payment refund subscription plan tier discount coupon report export import sync
""".split()  # noqa: SIM905
FUNCTION_WORDS = """the a an to of in for and is on with when we it that this from by as at be not or but
after before because so if then our must should can will was were has have""".split()  # noqa: SIM905
TAGS = [
    f"{area}/{topic}"
    for area, topics in {
        "project": ["db", "api", "auth", "ui", "infra", "ci", "docs", "billing", "search", "memory"],
        "topic": ["performance", "security", "testing", "migration", "incident", "design", "tooling", "data"],
        "lang": ["python", "sql", "typescript", "rust", "go", "bash"],
        "team": ["platform", "payments", "growth", "core"],
    }.items()
    for topic in topics
]
SELF_TAGS = ["self/value", "self/goal", "self/constraint"]


def pseudo_words(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    out: list[str] = []
    while len(out) < count:
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4)))
        if rng.random() < 0.3:
            word += rng.choice("nrst")
        if word not in taken:
            taken.add(word)
            out.append(word)
    return out


@dataclass
class Corpus:
    """Seeded synthetic text: content words with Zipf-like frequencies, sentences, tags and queries."""

    seed: int = 2026
    vocabulary: int = 3_000
    words: list[str] = field(init=False)
    cum: list[float] = field(init=False)

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        real = list(dict.fromkeys(REAL_WORDS))
        rng.shuffle(real)
        taken = set(real) | set(FUNCTION_WORDS)
        self.words = real + pseudo_words(rng, self.vocabulary - len(real), taken)
        total, self.cum = 0.0, []
        for rank in range(1, len(self.words) + 1):
            total += 1.0 / rank**1.05
            self.cum.append(total)
        self.rng = random.Random(self.seed + 1)

    def sentence(self) -> str:
        rng = self.rng
        n = rng.randint(8, 22)
        content = rng.choices(self.words, cum_weights=self.cum, k=n)
        out = [w if rng.random() > 0.35 else f"{rng.choice(FUNCTION_WORDS)} {w}" for w in content]
        text = " ".join(out)
        return text[0].upper() + text[1:] + rng.choice(".....!?")

    def block(self) -> tuple[str, list[str], str]:
        rng = self.rng
        tags = rng.sample(TAGS, rng.randint(1, 3))
        if rng.random() < 0.003:
            tags.append(rng.choice(SELF_TAGS))
        r = rng.random()
        category = "observation" if r < 0.10 else "decision" if r < 0.25 else "knowledge"
        text = self.sentence() if rng.random() < 0.6 else self.sentence() + " " + self.sentence()
        return text, tags, category

    def queries(self, n: int) -> list[str]:
        """2–3 word queries: each word half the time from the 150 most frequent, else from the rest."""
        rng = random.Random(self.seed + 2)
        out = []
        for _ in range(n):
            words: list[str] = []
            while len(words) < rng.choice((2, 2, 3)):
                w = rng.choice(self.words[:150]) if rng.random() < 0.5 else rng.choice(self.words[150:])
                if w not in words:
                    words.append(w)
            out.append(" ".join(words))
        return out


# --- the ledger and its fill --------------------------------------------------------------------------------


class BenchClock:
    """Wall-clock time plus an offset the benchmark can move forward (``ledger.clock`` is injectable)."""

    def __init__(self) -> None:
        self.offset = _dt.timedelta(0)

    def __call__(self) -> _dt.datetime:
        return _dt.datetime.now(_dt.UTC) + self.offset

    def advance(self, delta: _dt.timedelta) -> None:
        self.offset += delta


def fill(ledger: Ledger, corpus: Corpus, count: int, seen: set[str], progress: Callable[[int], None]) -> int:
    """Append ``count`` new ``MemoryRemembered`` events, each on its own ``block:<id>`` stream.

    ``SqlEventStore.append`` writes one stream per call (one fsync each), so this writes ``FILL_BATCH`` blocks
    per transaction through the store's own ``write_transaction``, ``encode`` and ``chain_rows`` (the same
    hash chain ``append`` builds; ``synchronous`` stays FULL). Every stream is new (version 1), so the
    per-stream version check that ``append`` makes could not fail; ``store.verify()`` checks the chain after.
    """
    store = ledger.store
    meta_json = encode_meta({"agent": AGENT, "source": "cli"})
    written = 0
    while written < count:
        todo = min(FILL_BATCH, count - written)
        with store.write_transaction() as cur:
            cur.execute(HEAD)
            position, prev_hash, last_at = cur.fetchone()
            recorded_at = max(format_ts(ledger.clock()), last_at)
            rows = []
            for _ in range(todo):
                while True:
                    text, tags, category = corpus.block()
                    block_id = memory.block_id_for(text)
                    if block_id not in seen:
                        seen.add(block_id)
                        break
                event = MemoryRemembered(block_id=block_id, content=text, tags=tags, category=category)
                [row] = chain_rows(
                    position=position,
                    version=0,
                    stream=memory.stream_for(block_id),
                    recorded_at=recorded_at,
                    prev_hash=prev_hash,
                    meta_json=meta_json,
                    encoded=[encode(event)],
                )
                rows.append(row)
                position, prev_hash = row[0], row[9]
            cur.executemany(INSERT, rows)
        written += todo
        progress(todo)
    return written


# --- timing -------------------------------------------------------------------------------------------------


def timed_ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


@dataclass
class Series:
    samples: list[float] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return median(self.samples)

    @property
    def p99(self) -> float:
        return percentile(self.samples, 99)

    @property
    def mean(self) -> float:
        return sum(self.samples) / len(self.samples)


@dataclass
class SizeResult:
    blocks: int
    events: int
    fill_s: float
    verify_s: float
    graph_catch_up_s: float
    index_catch_up_s: float
    series: dict[str, Series]
    breakdown: Breakdown
    profile: Profile
    hits: dict[str, float]
    db_mb: float


class SessionAppender:
    """Appends the event a search appends (a ``MemorySearched``) to a session stream of its own."""

    def __init__(self, ledger: Ledger, session_id: str) -> None:
        self.ledger = ledger
        self.session_id = session_id
        self.stream = f"session:{session_id}"
        self.version = ledger.store.load_stream(self.stream).version
        self.meta = {"agent": AGENT, "source": "cli", "session_id": session_id}

    def append(self, query: str) -> None:
        event = MemorySearched(
            session_id=self.session_id, query=query, limit=SEARCH_LIMIT, result_ids=[], count=0, token_expires_at=None
        )
        self.ledger.store.append(self.stream, self.version, [event], self.meta)
        self.version += 1


def match_string(query: str) -> str:
    """The MATCH text ``SearchIndex.search`` builds: every word quoted, OR-ed."""
    return " OR ".join(f'"{t}"' for t in query_terms(query))


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
            shift = (i + p) % len(names)
            for name in names[shift:] + names[:shift]:
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


# --- where the time goes ------------------------------------------------------------------------------------


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
    "open_session": "`_open_session`",
    "rest": "the rest (deciding, building the result)",
}
RECALL_PARTS = {
    "fts": "FTS query (`SearchIndex.search` less its catch-up)",
    "catch_up": "index catch-up",
    "live": "`_live` (graph catch-up + active-hours clock)",
    "score": "`recall.score_blocks`",
    "recollect": "`recall.recollect`",
    "append": "append of its event",
    "open_session": "`_open_session`",
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
    steps.wrap(ledger, "_open_session", "open_session")
    steps.wrap(store, "append", "append", outside="auto_curate")
    steps.wrap(ledger, "_auto_curate", "auto_curate")
    steps.wrap(ledger, "_live", "live", outside="auto_curate")
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
        for s in samples:
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


def fts_rows(db_path: Path) -> int:
    raw = sqlite3.connect(db_path)
    n = int(raw.execute("SELECT COUNT(*) FROM memory_fts").fetchone()[0])
    raw.close()
    return n


# --- curate -------------------------------------------------------------------------------------------------


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


# --- profile ------------------------------------------------------------------------------------------------

PROFILED = [
    ("memory_service.py", "recall", "`Ledger.recall` in all"),
    ("search_index.py", "search", "`SearchIndex.search`"),
    ("search_index.py", "catch_up", "`SearchIndex.catch_up`"),
    ("reads.py", "iter_records", "`SqlEventStore.iter_records`"),
    ("reads.py", "head", "`SqlEventStore.head`"),
    ("group_commit.py", "append", "`SqlEventStore.append`"),
    ("memory_service.py", "_live", "`_live` (graph catch-up + active-hours clock)"),
    ("memory_service.py", "_auto_curate", "`_auto_curate`"),
    ("service_base.py", "_open_session", "`_open_session`"),
    ("recall.py", "score_blocks", "`recall.score_blocks`"),
    ("recall.py", "recollect", "`recall.recollect`"),
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
        rows = [v for (f, _l, fn), v in stats.items() if fn == func and Path(f).name == module]
        named.append((label, sum(v[3] for v in rows) * per, sum(v[1] for v in rows) / len(queries)))
    own = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:8]
    top = []
    for (filename, _line, func), v in own:
        where = f"{Path(filename).name}:" if filename != "~" else ""
        top.append((f"{where}{func}", v[2] * per))
    return Profile(named, top)


# --- the report ---------------------------------------------------------------------------------------------


def ms(x: float) -> str:
    return f"{x:.2f} ms" if x < 100 else f"{x:,.0f} ms"


def secs(x: float) -> str:
    if x < 1:
        return ms(x * 1000)
    return f"{x:.2f} s" if x < 10 else f"{x:,.0f} s"


def ratio(ours: float, base: float) -> str:
    return f"{ours / base:.2f}×" if base > 0 else "—"


def share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole > 0 else "—"


@dataclass
class Run:
    env: dict[str, str]
    sizes: list[int]
    passes: int
    quick: bool
    results: list[SizeResult]
    trace: Trace
    has_type_position_index: bool
    curate: CurateOutcome
    final_chain: int
    elapsed_s: float = 0.0


def render(run: Run) -> str:
    out = [SECTION, ""]
    out.append(
        "Generated by `scripts/bench_memory.py` in one run on the machine below: recall and search latency on "
        "a real SQLite ledger (WAL, `synchronous=FULL`) next to the service's own FTS5 query run raw on the same "
        f"file, and one full curate. Target (the issue's): recall and search p50 ≤ {TARGET:g}× the raw query's "
        "p50 at the same LIMIT. Re-run `.venv/bin/python scripts/bench_memory.py` to regenerate this section "
        "(`scripts/bench_ledger.py` and `scripts/bench_anchor.py` keep it)."
    )
    if run.quick:
        out += ["", "> **Smoke run (`--quick`)**: sizes too small for the numbers to mean much."]
    out += ["", "### Environment", ""]
    keep = ("date (UTC)", "python", "sqlite (library)", "machine", "temp files on", "code measured", "command")
    out += [f"* **{k}**: {run.env[k]}" for k in keep if k in run.env]
    out.append(
        f"* **load average (1/5/15 min)**: {run.env.get('load average (1/5/15 min) at start', '?')} at start, "
        f"{load_average()} at end"
    )
    out.append(f"* **whole run took**: {run.elapsed_s:.0f} s")

    out += ["", "### Results", ""]
    out.append(
        "| Blocks | Measurement | p50 | p99 | Raw FTS5 baseline p50 / p99 | p50 ÷ raw | p99 ÷ raw | "
        f"p50 ≤ {TARGET:g}× raw |"
    )
    out.append("|---|---|---|---|---|---|---|---|")
    for r in run.results:
        for name, label in OPS.items():
            s = r.series[name]
            base_name = BASELINE_OF.get(name)
            if base_name:
                b = r.series[base_name]
                met = "yes" if s.p50 / b.p50 <= TARGET else "**no**"
                out.append(
                    f"| {r.blocks:,} | {label} | {ms(s.p50)} | {ms(s.p99)} | {ms(b.p50)} / {ms(b.p99)} | "
                    f"{ratio(s.p50, b.p50)} | {ratio(s.p99, b.p99)} | {met} |"
                )
            elif name == "recall_self":
                b = r.series["raw_self"]
                out.append(
                    f"| {r.blocks:,} | {label} | {ms(s.p50)} | {ms(s.p99)} | {ms(b.p50)} / {ms(b.p99)} (tag scan) | "
                    f"{ratio(s.p50, b.p50)} | {ratio(s.p99, b.p99)} | no target |"
                )
            else:
                out.append(f"| {r.blocks:,} | {label} | {ms(s.p50)} | {ms(s.p99)} | — | — | — | baseline |")

    c = run.curate
    out += ["", f"### Curate at {c.blocks:,} blocks", ""]
    out.append(
        f"`Ledger.curate` (manual) after {c.active_hours:.0f} active hours (one session clocked in before the fill "
        f"and clocked out {CURATE_AFTER_HOURS} hours later), with {c.edges_before:,} co-retrieval edges made by the "
        f"recalls above. It archived {c.archived:,} blocks, pruned {c.edges_pruned:,} edges, reinforced "
        f"{c.constitutional_reinforced} constitutional and {c.reinforced} top blocks ({c.edges_after:,} edges left); "
        f"its `MemoryCurated` event carries {c.event_kb:,.0f} kB of data JSON. Each step timed once, in the order a "
        "process meets them:"
    )
    out += [
        "",
        "| Step | Time | of which in a write transaction (`BEGIN IMMEDIATE` … `COMMIT`) |",
        "|---|---|---|",
        f"| (a) `ledger.curate(who)`: the decision over the live graph + appending the event | {secs(c.decide_s)} "
        f"| {secs(c.decide_locked_s)} |",
        f"| (b) the live graph folds the event (the first `memory_stats()` after) | {secs(c.graph_apply_s)} | — |",
        "| (c) the FTS index applies it (`ledger.index.catch_up()` right after; FTS rows "
        f"{c.fts_before:,} → {c.fts_after:,}) | {secs(c.index_apply_s)} | {secs(c.index_locked_s)} |",
        f"| total | **{secs(c.total_s)}** | {secs(c.decide_locked_s + c.index_locked_s)} |",
        "",
        f"Afterwards, on the {c.fts_after:,} rows left, over the {N_QUERIES} queries: `SearchIndex.search` (limit "
        f"{SEARCH_LIMIT}, no session) p50 {ms(c.search_after.p50)}, p99 {ms(c.search_after.p99)}; the raw query p50 "
        f"{ms(c.raw_after.p50)}, p99 {ms(c.raw_after.p99)}. The hash chain verified after the curate "
        f"({run.final_chain:,} events).",
    ]

    out += ["", "### Where the time goes", ""]
    runs = run.results[0].breakdown.runs
    out.append(
        f"Measured inside real calls: one pass over the {runs} queries, each doing `Ledger.search` (limit "
        f"{SEARCH_LIMIT}) and then `Ledger.recall` (attention frame, top_k {TOP_K}) in a session, so each call "
        "follows the other's append as in use. Their steps are timed by wrappers put on the product's own methods "
        "for the pass (`Steps` in the script); derived parts are per call: FTS query = `SearchIndex.search` less its "
        "catch-up; probe = catch-up less `head()` and `checkpoint()`; rest = the call less its timed parts. Means "
        "add up to the whole call; p50s need not. Share = part mean ÷ call mean. Raw FTS5 queries on the same "
        "queries, each right after an untimed `MemorySearched` append (the state the service's query meets), are "
        "in the last rows, with the LIMIT 10 one repeated at once on the same connection (no write between) for "
        f"comparison. Then a cProfile of {PROFILE_RUNS} recalls in a session on the last {PROFILE_RUNS} queries: "
        "cumulative time and calls per recall of named steps (nested steps included in their callers; profiling "
        "inflates Python-heavy steps), and the functions with the most own time."
    )
    for r in run.results:
        bk = r.breakdown
        out += ["", f"**{r.blocks:,} blocks**", ""]
        out.append("| Part | search p50 | search mean | share | recall p50 | recall mean | share |")
        out.append("|---|---|---|---|---|---|---|")
        rows = {"total": "whole call", **{k: v for k, v in RECALL_PARTS.items() if k != "rest"}}
        rows = {**rows, "rest": "the rest (the call less its timed parts)"}
        for k, label in rows.items():
            cells = []
            for parts, series in ((SEARCH_PARTS, bk.search), (RECALL_PARTS, bk.recall)):
                if k == "total" or k in parts:
                    s = series[k]
                    cells += [ms(s.p50), ms(s.mean), share(s.mean, series["total"].mean)]
                else:
                    cells += ["—", "—", "—"]
            out.append(f"| {label} | " + " | ".join(cells) + " |")
            if k == "catch_up":
                for part, clabel in CATCH_UP_PARTS.items():
                    cs = [
                        f"{ms(x[part].p50)} | {ms(x[part].mean)} | {share(x[part].mean, x['total'].mean)}"
                        for x in (bk.search, bk.recall)
                    ]
                    out.append(f"| … of which {clabel} | " + " | ".join(cs) + " |")
        out.append(
            f"| raw FTS5 query after an append, LIMIT {SEARCH_LIMIT} / {RECALL_LIMIT} | {ms(bk.raw_10.p50)} | "
            f"{ms(bk.raw_10.mean)} | — | {ms(bk.raw_20.p50)} | {ms(bk.raw_20.mean)} | — |"
        )
        out.append(
            f"| raw FTS5 query repeated at once, LIMIT {SEARCH_LIMIT} | {ms(bk.raw_10_warm.p50)} | "
            f"{ms(bk.raw_10_warm.mean)} | — | — | — | — |"
        )
        out.append("")
        p = r.profile
        out.append(
            "* profile: " + "; ".join(f"{label} {ms(v)} ({calls:.3g}× per recall)" for label, v, calls in p.named) + "."
        )
        out.append("* most own time: " + "; ".join(f"`{name}` {ms(v)}" for name, v in p.top) + ".")
    t = run.trace
    out += [""]
    out.append(
        f"What one `SearchIndex.catch_up()` issued at {run.results[-1].blocks:,} blocks when only a `MemorySearched` "
        "was new, traced on the pool's connections (parameters inlined by SQLite), with SQLite's "
        f"`EXPLAIN QUERY PLAN`; statements other than SELECT: {', '.join(f'`{w}`' for w in t.others) or 'none'}; "
        f"checkpoint {'moved' if t.checkpoint_moved else 'not moved'}:"
    )
    out.append("")
    for statement, plan in t.selects:
        out.append(f"* `{statement}` — `{plan}`")

    out += ["", "### Method", ""]
    out.append(
        f"* One ledger file made by `api.bootstrap.initialise` (so the `events` table has its indexes from "
        f"`SqlEventStore.create_schema`; `{TYPE_POSITION_INDEX}` present: "
        f"{'yes' if run.has_type_position_index else '**no**'}), grown to each size in turn "
        f"({', '.join(f'{n:,}' for n in run.sizes)} blocks, the 10 constitutional blocks from `setup_memory` "
        "included). Blocks are `MemoryRemembered` events, each on its own `block:<id>` stream. "
        "`SqlEventStore.append` writes one stream per call (one fsync each), so the fill writes "
        f"{FILL_BATCH:,} blocks per transaction through the store's own `write_transaction`, `encode` and "
        "`chain_rows` (the hash chain `append` builds; `synchronous` stays FULL); `store.verify()` passes after "
        "each fill. "
        + "; ".join(
            f"{r.blocks:,} blocks: fill {secs(r.fill_s)}, verify {secs(r.verify_s)}, file {r.db_mb:,.0f} MB"
            for r in run.results
        )
        + "."
    )
    out.append(
        "* Content: seeded synthetic sentences (8–22 words, 60% one sentence, 40% two) from a 3,000-word "
        f"vocabulary ({len(dict.fromkeys(REAL_WORDS))} real software words, the rest made-up pronounceable words) "
        "drawn with Zipf-like frequencies (1/rank^1.05), with function words between them; 1–3 tags from "
        f"{len(TAGS)} (0.3% also get a `self/` tag); category 10% observation, 15% decision, the rest knowledge."
    )
    out.append(
        f"* Queries: {N_QUERIES} seeded 2–3 word queries from the content words, each word half the time from the "
        "150 most frequent and otherwise from the rest. Matching blocks per query (before LIMIT): "
        + "; ".join(
            f"{r.blocks:,} blocks: median {r.hits['median']:,.0f}, p90 {r.hits['p90']:,.0f}, max {r.hits['max']:,.0f} "
            f"({r.hits['none']:.0f} of {N_QUERIES} queries match nothing)"
            for r in run.results
        )
        + "."
    )
    out.append(
        "* Raw baseline: `SELECT block_id, content, tags_json, -bm25(memory_fts) AS score FROM memory_fts WHERE "
        "memory_fts MATCH ? ORDER BY score DESC, block_id LIMIT ?` on a plain `sqlite3` connection to the same "
        "file, with the MATCH string the service builds (each word quoted, OR-ed) and its LIMIT: "
        f"{SEARCH_LIMIT} for search, {RECALL_LIMIT} (top_k {TOP_K} × {recall.CANDIDATES_PER_SLOT}) for recall. "
        "It returns the same rows; the service also decodes them, scores candidates and appends one event."
    )
    out.append(
        f"* Timing: per size, {run.passes} pass(es) over the {N_QUERIES} queries after 10 untimed warm-up queries; "
        "for each query every operation runs once, in an order rotated query by query, so each sees the same cache "
        f"state ({run.passes * N_QUERIES} samples per operation; p99 is the nearest-rank 99th percentile). "
        "Search and recall in a session run in one open session (every call appends to its stream and renews its "
        "token); recall without a session appends to the `memory` stream. The queryless self-frame recall and its "
        f"raw tag scan ran {SELF_RUNS} times each. Every search and recall appends one event, so the bare append "
        "row shows what one fsync-ed append costs here; the target is against the raw query regardless."
    )
    out.append(
        "* Cache state: every search and recall follows another call's append, so each raw query is timed right "
        'after an untimed append of a `MemorySearched` too ("after an append" in the table): like the service\'s '
        "query, it runs on a database just written to. The same raw query repeated at once on the same connection, "
        'with no write between, is in the last row of each table under "Where the time goes".'
    )
    out.append(
        "* Before timing at each size: the memory graph replayed from position 0 by a freshly opened `Ledger` "
        "(what a new process pays once, on its first memory command) and the FTS index's catch-up over the new "
        "blocks: "
        + "; ".join(
            f"{r.blocks:,} blocks: graph {secs(r.graph_catch_up_s)}, index {secs(r.index_catch_up_s)}"
            for r in run.results
        )
        + "."
    )

    out += ["", "### Interpretation", ""]
    out += interpret(run)
    return "\n".join(out).rstrip() + "\n"


def largest(series: dict[str, Series], names: dict[str, str], n: int = 3) -> str:
    total = series["total"].mean
    order = sorted((k for k in names if k in series), key=lambda k: series[k].mean, reverse=True)[:n]
    return ", ".join(f"{names[k]} {ms(series[k].mean)} ({share(series[k].mean, total)})" for k in order)


def interpret(run: Run) -> list[str]:
    lines = []
    measured = ("search", "recall", "recall_nosession")
    for r in run.results:
        ratios = {n: r.series[n].p50 / r.series[BASELINE_OF[n]].p50 for n in measured}
        text = ", ".join(f"{n.replace('_nosession', ' without a session')} {v:.2f}×" for n, v in ratios.items())
        missed = [n.replace("_nosession", " without a session") for n, v in ratios.items() if v > TARGET]
        status = "target met by all three" if not missed else f"target **missed** by {', '.join(missed)}"
        lines.append(f"* {r.blocks:,} blocks, p50 ÷ raw p50: {text} — {status}.")
    for r in run.results:
        b = r.breakdown
        s, rc_ = b.search, b.recall
        lines.append(
            f"* {r.blocks:,} blocks, inside real calls (means): `Ledger.search` {ms(s['total'].mean)}, largest parts "
            f"{largest(s, SEARCH_PARTS)}; `Ledger.recall` {ms(rc_['total'].mean)}, largest parts "
            f"{largest(rc_, RECALL_PARTS)}. The FTS query through `SearchIndex` averaged {ms(s['fts'].mean)} "
            f"(limit {SEARCH_LIMIT}) and {ms(rc_['fts'].mean)} (limit {RECALL_LIMIT}) against the raw query's "
            f"{ms(b.raw_10.mean)} and {ms(b.raw_20.mean)} after an append, and {ms(b.raw_10_warm.mean)} for the raw "
            f"LIMIT {SEARCH_LIMIT} query repeated at once. The index catch-up averaged {ms(s['catch_up'].mean)} "
            f"(p99 {ms(s['catch_up'].p99)}): "
            + ", ".join(f"{lbl} {ms(s[k].mean)}" for k, lbl in CATCH_UP_PARTS.items())
            + ". In this pass `Ledger.search` p50 is "
            f"{ratio(s['total'].p50, b.raw_10.p50)} the raw LIMIT {SEARCH_LIMIT} query's p50 after an append and "
            f"{ratio(s['total'].p50, b.raw_10_warm.p50)} its p50 repeated at once"
            f" ({'within' if s['total'].p50 <= TARGET * b.raw_10_warm.p50 else 'over'} {TARGET:g}× against the latter)."
        )
    if len(run.results) > 1:
        lo, hi = run.results[0], run.results[-1]
        keys = {"fts": "FTS query", "catch_up": "catch-up", "append": "append", "rest": "rest"}
        grow = ", ".join(
            f"{lbl} {ms(lo.breakdown.search[k].mean)} → {ms(hi.breakdown.search[k].mean)}" for k, lbl in keys.items()
        )
        lines.append(
            f"* From {lo.blocks:,} to {hi.blocks:,} blocks ({hi.blocks / lo.blocks:.0f}× the blocks), means per "
            f"search: raw query {ms(lo.breakdown.raw_10.mean)} → {ms(hi.breakdown.raw_10.mean)}, {grow}."
        )
    big = run.results[-1]
    selfr, rawself = big.series["recall_self"], big.series["raw_self"]
    text = (
        f"* The queryless recall (self frame) took {ms(selfr.p50)} p50 at {big.blocks:,} blocks, "
        f"{ratio(selfr.p50, rawself.p50)} a raw SQLite scan of the same tags ({ms(rawself.p50)})"
    )
    if len(run.results) > 1:
        lo = run.results[0]
        text += (
            f"; from {lo.blocks:,} blocks it grew {selfr.p50 / lo.series['recall_self'].p50:.1f}× and the scan "
            f"{rawself.p50 / lo.series['raw_self'].p50:.1f}×"
        )
    lines.append(text + ".")
    c = run.curate
    steps = {
        "(a) the decision + append": c.decide_s,
        "(b) the graph fold": c.graph_apply_s,
        "(c) the FTS apply": c.index_apply_s,
    }
    biggest = max(steps, key=lambda k: steps[k])
    lines.append(
        f"* Curate at {c.blocks:,} blocks, archiving {c.archived:,} ({share(c.archived, c.blocks)} of the blocks): "
        f"{secs(c.total_s)} in all; the largest step is {biggest} ({secs(steps[biggest])}, "
        f"{share(steps[biggest], c.total_s)}). Write transactions, which other writers to the file wait behind, "
        f"were open for {secs(c.decide_locked_s)} of (a) and {secs(c.index_locked_s)} of (c)."
    )
    return lines


def write_section(output: Path, section: str) -> None:
    """Replace this script's section of ``output`` (or add it at the end), keeping everything else."""
    doc = output.read_text(encoding="utf-8") if output.exists() else "# Compliance Ledger — benchmarks\n"
    if SECTION in doc:
        head, _, rest = doc.partition(SECTION)
        tail = rest.split("\n## ", 1)
        doc = head + section + ("\n## " + tail[1] if len(tail) > 1 else "")
    else:
        doc = doc.rstrip("\n") + "\n\n" + section
    output.write_text(doc, encoding="utf-8")


def advance(bar: Progress, task: TaskID, n: int) -> None:
    bar.advance(task, n)


def has_index(db_path: Path, name: str) -> bool:
    raw = sqlite3.connect(db_path)
    row = raw.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)).fetchone()
    raw.close()
    return row is not None


# --- main ---------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 and 10,000 blocks; print, write nothing")
    parser.add_argument("--sizes", type=int, nargs="+", help="block counts to measure at")
    parser.add_argument("--passes", type=int, default=2, help=f"passes over the {N_QUERIES} queries per size")
    parser.add_argument("--output", type=Path, default=None, help="default docs/BENCHMARKS.md (stdout with --quick)")
    args = parser.parse_args()
    sizes = sorted(set(args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)))
    if sizes[0] <= len(CONSTITUTION):
        parser.error(f"sizes must be above the {len(CONSTITUTION)} constitutional blocks")
    output = args.output or (None if args.quick else ROOT / "docs" / "BENCHMARKS.md")

    started = time.perf_counter()
    corpus = Corpus()
    queries = corpus.queries(N_QUERIES)
    results: list[SizeResult] = []
    with tempfile.TemporaryDirectory(prefix="ledger-bench-memory-") as tmp_name:
        tmp = Path(tmp_name)
        env = environment(tmp)
        db_path = tmp / "ledger.db"
        clock = BenchClock()
        settings = Settings(home=tmp, database_url=f"sqlite:///{db_path}", project_roots=[str(tmp)])  # type: ignore[call-arg]
        ledger, _ = initialise(settings, clock=clock)
        type_position_index = has_index(db_path, TYPE_POSITION_INDEX)
        if not type_position_index:
            console.log(f"[bold red]{TYPE_POSITION_INDEX} is missing after initialise[/]")
        who = Actor(AGENT, "cli")
        blocks = len(ledger.setup_memory(who).created)
        sid = ledger.clock_in(who, role="dev").session_id
        appender = SessionAppender(ledger, ledger.clock_in(who, role="dev").session_id)
        seen: set[str] = set()
        for size in sizes:
            console.log(f"[bold]{size:,} blocks[/]: appending {size - blocks:,} more")
            t0 = time.perf_counter()
            with Progress(
                TextColumn("  fill"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
            ) as bar:
                task = bar.add_task("fill", total=size - blocks)
                blocks += fill(ledger, corpus, size - blocks, seen, partial(advance, bar, task))
            fill_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            chain = ledger.store.verify()
            verify_s = time.perf_counter() - t0
            assert chain.ok, chain
            console.log(
                f"  {FILL_BATCH:,} blocks per transaction via write_transaction + chain_rows (synchronous=FULL): "
                f"{fill_s:.1f} s; chain verified ({chain.checked:,} events) in {verify_s:.1f} s"
            )
            # What a fresh process pays once: replay the memory graph from 0; then catch the FTS index up.
            fresh = open_ledger(settings, clock=clock)
            t0 = time.perf_counter()
            stats = fresh.memory_stats()
            graph_s = time.perf_counter() - t0
            fresh.store.engine.dispose()
            assert stats.blocks == blocks, (stats.blocks, blocks)
            t0 = time.perf_counter()
            ledger.index.catch_up()
            index_s = time.perf_counter() - t0
            assert fts_rows(db_path) == blocks, (fts_rows(db_path), blocks)
            console.log(f"  memory graph replay from position 0: {graph_s:.2f} s; FTS index catch-up: {index_s:.2f} s")
            console.log(f"  timing {N_QUERIES} queries × {args.passes} passes × 6 operations")
            series = measure(ledger, db_path, who, sid, appender, queries, args.passes)
            for name, s in series.items():
                console.log(f"    {name:18} p50 {s.p50:8.2f} ms  p99 {s.p99:8.2f} ms", highlight=False)
            bd = breakdown(ledger, db_path, who, sid, appender, queries)
            for call, parts in (("search", bd.search), ("recall", bd.recall)):
                for name, s in parts.items():
                    console.log(
                        f"    {call} {name:14} p50 {s.p50:8.2f} ms  mean {s.mean:8.2f} ms  p99 {s.p99:8.2f} ms",
                        highlight=False,
                    )
            for name, s in (("raw 10", bd.raw_10), ("raw 20", bd.raw_20), ("raw 10 again", bd.raw_10_warm)):
                console.log(f"    {name:21} p50 {s.p50:8.2f} ms  mean {s.mean:8.2f} ms", highlight=False)
            console.log(f"  profiling {PROFILE_RUNS} recalls")
            profile = profile_recall(ledger, who, sid, queries[-PROFILE_RUNS:])
            results.append(
                SizeResult(
                    blocks=blocks,
                    events=ledger.store.head()[0],
                    fill_s=fill_s,
                    verify_s=verify_s,
                    graph_catch_up_s=graph_s,
                    index_catch_up_s=index_s,
                    series=series,
                    breakdown=bd,
                    profile=profile,
                    hits=hit_counts(db_path, queries),
                    db_mb=db_path.stat().st_size / 1e6,
                )
            )
        trace = trace_catch_up(ledger, db_path, appender)
        for statement, plan in trace.selects:
            console.log(f"catch-up SELECT: {statement}\n  plan: {plan}", highlight=False)
        console.log(f"catch-up other statements: {trace.others or 'none'}; checkpoint moved: {trace.checkpoint_moved}")
        curate = run_curate(ledger, db_path, clock, who, sid, queries)
        final = ledger.store.verify()
        assert final.ok, final
        ledger.store.engine.dispose()
    run = Run(
        env=env,
        sizes=sizes,
        passes=args.passes,
        quick=args.quick,
        results=results,
        trace=trace,
        has_type_position_index=type_position_index,
        curate=curate,
        final_chain=final.checked,
        elapsed_s=time.perf_counter() - started,
    )
    section = render(run)
    if output is None:
        print(section)
    else:
        write_section(output, section)
        console.log(f"wrote the memory section of {output} (run took {run.elapsed_s:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
