"""Writer threads of this process appending one event per call, each to a stream of its own, through
``SqlEventStore.append``; per configuration events/s, latencies, appends per commit and CPU per append."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchkit.stats import median, percentile

from ledger.core.errors import StoreBusy
from ledger.core.events import MemorySearched, SessionStarted
from ledger.core.storage import MAX_GROUP, RowKey, SqlEventStore, make_engine

PG_URL = os.environ.get("LEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
META = {"agent": "bench", "source": "cli"}
ROW_KEY = RowKey(b"bench-row-key".ljust(32, b"."))  # one key for every store and process of a run


def run_writers(
    store: SqlEventStore,
    writers: int,
    ready: Callable[[], None],
    start: Any,
    stop: Any,
    busy: list[int] | None = None,
) -> list[float]:
    """``writers`` threads each create a stream of their own, call ``ready`` once all have, then from
    ``start.wait()`` until ``stop`` is set append one event per call; return every append's latency.

    ``busy`` (cross-process runs) counts StoreBusy refusals per thread: the append is tried again, and the
    time it waited counts in its latency."""
    latencies: list[list[float]] = [[] for _ in range(writers)]
    all_set = threading.Barrier(writers, action=ready)

    def work(n: int) -> None:
        sid = uuid.uuid4().hex
        stream = f"session:{sid}"
        store.append(stream, 0, [SessionStarted(session_id=sid, agent="bench", role="dev")], META)
        version = 1
        mine = latencies[n]
        all_set.wait()
        start.wait()
        while not stop.is_set():
            event = MemorySearched(session_id=sid, query="q", limit=10, result_ids=[], count=0)
            t0 = time.perf_counter()
            while True:
                try:
                    store.append(stream, version, [event], META)
                    break
                except StoreBusy:
                    if busy is None or stop.is_set():
                        raise
                    busy[n] += 1
            mine.append(time.perf_counter() - t0)
            version += 1

    threads = [threading.Thread(target=work, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [x for xs in latencies for x in xs]


def slice_run(store: SqlEventStore, writers: int, seconds: float) -> tuple[float, list[float]]:
    """``writers`` threads append for ``seconds``; return events/s and every append's latency."""
    ready, start, stop = threading.Event(), threading.Event(), threading.Event()
    result: list[list[float]] = []
    runner = threading.Thread(target=lambda: result.append(run_writers(store, writers, ready.set, start, stop)))
    runner.start()
    ready.wait()
    start.set()
    t0 = time.perf_counter()
    time.sleep(seconds)  # the measuring window of a benchmark, not a wait for readiness
    stop.set()
    runner.join()
    elapsed = time.perf_counter() - t0
    return len(result[0]) / elapsed, result[0]


class TransactionTimes:
    """Records how long each of a store's write transactions ran, from after BEGIN IMMEDIATE to after COMMIT (the
    time the write lock is held for the work itself; wraps the store's ``write_transaction``)."""

    def __init__(self, store: SqlEventStore) -> None:
        self.seconds: list[float] = []
        inner = store.write_transaction

        @contextlib.contextmanager
        def timed(*args: Any) -> Iterator[Any]:
            with inner(*args) as cur:
                t0 = time.perf_counter()
                yield cur
            self.seconds.append(time.perf_counter() - t0)

        store.write_transaction = timed  # type: ignore[method-assign,assignment]


def pg_schema_url(schema: str) -> str:
    return f"{PG_URL}{'&' if '?' in PG_URL else '?'}options=-csearch_path%3D{schema}"


def open_store(
    backend: str, tmp: Path, group_limit: int, *, tlog: bool = True, name: str = ""
) -> tuple[SqlEventStore, str | None]:
    """A store with a fresh schema; ``tlog=False`` (benchmarks only) appends without the tree and authenticators."""
    if backend == "sqlite":
        engine = make_engine(f"sqlite:///{tmp / f'writers-{group_limit}{name}.db'}")
        schema = None
    else:
        import psycopg

        schema = f"bench_writers_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        engine = make_engine(pg_schema_url(schema))
    store = SqlEventStore(engine, group_limit=group_limit, row_key=ROW_KEY, _tlog=tlog)
    store.create_schema()
    return store, schema


def drop_schema(schema: str | None) -> None:
    if schema:
        import psycopg

        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


class GroupCount:
    """Counts the groups a store commits and the appends in them (wraps the store's ``_commit_queued``)."""

    def __init__(self, store: SqlEventStore) -> None:
        self.groups = self.appends = 0
        inner = store._commit_queued

        def counted() -> list[Any]:
            group = inner()
            self.groups += 1
            self.appends += len(group)
            return group

        store._commit_queued = counted  # type: ignore[method-assign]


def measure(backend: str, tmp: Path, seconds: float, rounds: int) -> dict[tuple[int, int], dict[str, float]]:
    """Per (group_limit, writers): median events/s over rounds, p50/p99 of all latencies, and where the time
    went: appends per commit, and this process's CPU time per append (all threads; the GIL lets about one
    core run Python at a time)."""
    stores = {limit: open_store(backend, tmp, limit) for limit in (1, MAX_GROUP)}
    counts = {limit: GroupCount(store) for limit, (store, _) in stores.items()}
    rates: dict[tuple[int, int], list[float]] = {}
    lats: dict[tuple[int, int], list[float]] = {}
    cpu: dict[tuple[int, int], list[float]] = {}
    wall: dict[tuple[int, int], list[float]] = {}
    groups: dict[tuple[int, int], list[int]] = {}
    try:
        for _ in range(rounds):  # interleaved: every configuration once per round
            for writers in (1, 16):
                for limit, (store, _) in stores.items():
                    key = (limit, writers)
                    count, before = counts[limit], (counts[limit].groups, counts[limit].appends)
                    c0, w0 = time.process_time(), time.perf_counter()
                    rate, latency = slice_run(store, writers, seconds)
                    cpu.setdefault(key, []).append(time.process_time() - c0)
                    wall.setdefault(key, []).append(time.perf_counter() - w0)
                    rates.setdefault(key, []).append(rate)
                    lats.setdefault(key, []).extend(latency)
                    got = groups.setdefault(key, [0, 0])
                    got[0] += count.groups - before[0]
                    got[1] += count.appends - before[1]
    finally:
        for store, schema in stores.values():
            store.dispose()
            drop_schema(schema)
    return {
        key: {
            "rate": median(rates[key]),
            "p50_ms": percentile(lats[key], 50) * 1000,
            "p99_ms": percentile(lats[key], 99) * 1000,
            # the writers' own first appends (stream creation) are in the groups, not in the latencies
            "per_group": groups[key][1] / max(1, groups[key][0]),
            "cpu_us": sum(cpu[key]) / max(1, len(lats[key])) * 1e6,
            "cpu_share": sum(cpu[key]) / sum(wall[key]),
        }
        for key in rates
    }
