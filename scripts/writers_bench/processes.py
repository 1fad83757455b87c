"""Worker processes (started once, ``spawn``) each running writer threads on one SQLite file, with the fair write
lock and with SQLite's busy handler alone, interleaved round by round."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import time
from pathlib import Path
from typing import Any

from benchkit.stats import median, percentile
from benchkit.timing import rotated

from ledger.core.storage import SqlEventStore, make_engine
from writers_bench.threads import ROW_KEY, GroupCount, TransactionTimes, run_writers


def process_worker(start: Any, stop: Any, conn: multiprocessing.connection.Connection) -> None:
    """A worker process: for each ``(url, fair, threads)`` it gets, open a store on ``url`` and run ``threads``
    writers between the shared ``start`` and ``stop`` events; send back the latencies and StoreBusy count."""
    while True:
        message = conn.recv()
        if message is None:
            conn.close()
            return
        url, fair, threads = message
        store = SqlEventStore(make_engine(url), _fair_lock=fair, row_key=ROW_KEY)
        transactions, groups = TransactionTimes(store), GroupCount(store)
        busy = [0] * threads
        try:
            latencies = run_writers(store, threads, lambda: conn.send("ready"), start, stop, busy)
            conn.send((latencies, sum(busy), transactions.seconds, (groups.groups, groups.appends)))
        finally:
            store.dispose()


class Workers:
    """Worker processes started once (``spawn``) and given one configuration per slice."""

    def __init__(self, size: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.start, self.stop = ctx.Event(), ctx.Event()
        self.procs: list[Any] = []
        self.conns: list[multiprocessing.connection.Connection] = []
        for _ in range(size):
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(target=process_worker, args=(self.start, self.stop, child_end), daemon=True)
            proc.start()
            child_end.close()
            self.procs.append(proc)
            self.conns.append(parent_end)

    def slice(self, url: str, fair: bool, processes: int, threads: int, seconds: float) -> dict[str, Any]:
        self.start.clear()
        self.stop.clear()
        used = self.conns[:processes]
        for conn in used:
            conn.send((url, fair, threads))
        for conn in used:
            assert conn.recv() == "ready"  # every thread of every process has its stream and waits for start
        self.start.set()
        t0 = time.perf_counter()
        time.sleep(seconds)  # the measuring window of a benchmark, not a wait for readiness
        self.stop.set()
        results = [conn.recv() for conn in used]
        elapsed = time.perf_counter() - t0
        latencies = [x for lat, _, _, _ in results for x in lat]
        return {
            "rate": len(latencies) / elapsed,
            "latencies": latencies,
            "busy": sum(b for _, b, _, _ in results),
            "transactions": [x for _, _, txn, _ in results for x in txn],
            "groups": [sum(g[0] for _, _, _, g in results), sum(g[1] for _, _, _, g in results)],
        }

    def close(self) -> None:
        for conn in self.conns:
            conn.send(None)
        for proc in self.procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
        for conn in self.conns:
            conn.close()


# (processes, threads per process); the first is the baseline
PROCESS_CONFIGS = ((1, 1), (8, 1), (4, 4))


def measure_processes(tmp: Path, seconds: float, rounds: int) -> dict[tuple[bool, int, int], dict[str, float]]:
    """Per (fair, processes, threads): median events/s over rounds, p50/p99/max of all latencies, StoreBusy, and
    the appends per commit and the median time of a write transaction."""
    urls = {}
    for fair in (True, False):
        url = f"sqlite:///{tmp / ('processes-fair.db' if fair else 'processes-busy.db')}"
        store = SqlEventStore(make_engine(url), row_key=ROW_KEY)
        store.create_schema()
        store.dispose()
        urls[fair] = url
    workers = Workers(max(p for p, _ in PROCESS_CONFIGS))
    rates: dict[tuple[bool, int, int], list[float]] = {}
    lats: dict[tuple[bool, int, int], list[float]] = {}
    busy: dict[tuple[bool, int, int], int] = {}
    transactions: dict[tuple[bool, int, int], list[float]] = {}
    groups: dict[tuple[bool, int, int], list[int]] = {}
    try:
        for r in range(rounds):  # interleaved: every configuration once per round, the order turning
            order = [(fair, p, t) for p, t in PROCESS_CONFIGS for fair in (True, False)]
            for key in rotated(order, r):
                fair, processes, threads = key
                got = workers.slice(urls[fair], fair, processes, threads, seconds)
                rates.setdefault(key, []).append(got["rate"])
                lats.setdefault(key, []).extend(got["latencies"])
                busy[key] = busy.get(key, 0) + got["busy"]
                transactions.setdefault(key, []).extend(got["transactions"])
                counted = groups.setdefault(key, [0, 0])
                counted[0] += got["groups"][0]
                counted[1] += got["groups"][1]
    finally:
        workers.close()
    return {
        key: {
            "rate": median(rates[key]),
            "p50_ms": percentile(lats[key], 50) * 1000,
            "p99_ms": percentile(lats[key], 99) * 1000,
            "max_ms": max(lats[key]) * 1000,
            "busy": busy[key],
            "txn_ms": median(transactions[key]) * 1000,
            "per_group": groups[key][1] / max(1, groups[key][0]),
        }
        for key in rates
    }
