"""What the transparency-log tree and the row authenticators cost (issue 24): appends with them against the same
store built without them (``_tlog=False``, benchmarks only), 1 and 16 writer threads, interleaved round by round;
the gate's read (``load_stream`` of a session of 50 events) with the authenticator check and without; and an
inclusion proof on a tree of 1M leaves against one of 10k."""

from __future__ import annotations

import os
import random
import secrets
import time
from pathlib import Path
from typing import Any

from benchkit.stats import median, percentile

from ledger.core.events import MemorySearched, SessionStarted
from ledger.core.storage import MAX_GROUP, SqlEventStore
from ledger.core.storage.tree import EMPTY
from writers_bench.threads import META, ROW_KEY, drop_schema, open_store, slice_run

VARIANTS = (("with", True), ("without", False))
GATE_SESSIONS = 200
GATE_EVENTS = 50
PROOF_SIZES = (10_000, 1_000_000)
PROOFS = 2000


def _cpu_seconds() -> float:
    return time.process_time()


def measure_appends(backend: str, tmp: Path, seconds: float, rounds: int) -> dict[tuple[str, int], dict[str, float]]:
    """Per (variant, writers): median events/s over rounds, p50/p99 latency and CPU per append."""
    stores = {name: open_store(backend, tmp, MAX_GROUP, tlog=tlog, name=f"-tlog-{name}") for name, tlog in VARIANTS}
    rates: dict[tuple[str, int], list[float]] = {}
    lats: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], float] = {}
    try:
        for _ in range(rounds):  # interleaved: every configuration once per round
            for writers in (1, 16):
                for name, (store, _) in stores.items():
                    key = (name, writers)
                    c0 = _cpu_seconds()
                    rate, latency = slice_run(store, writers, seconds)
                    cpu[key] = cpu.get(key, 0.0) + _cpu_seconds() - c0
                    rates.setdefault(key, []).append(rate)
                    lats.setdefault(key, []).extend(latency)
        for store, _ in stores.values():
            report = store.verify()
            assert report.ok or not store.tlog, report  # the tree and authenticators the runs wrote check
    finally:
        for store, schema in stores.values():
            store.dispose()
            drop_schema(schema)
    return {
        key: {
            "rate": median(rates[key]),
            "p50_ms": percentile(lats[key], 50) * 1000,
            "p99_ms": percentile(lats[key], 99) * 1000,
            "cpu_us": cpu[key] / max(1, len(lats[key])) * 1e6,
        }
        for key in rates
    }


def measure_gate_read(backend: str, tmp: Path, rounds: int) -> dict[str, float]:
    """Median time of ``load_stream`` of a 50-event session among ``GATE_SESSIONS`` of them, by a store that checks
    every row's authenticator and by one built without (``row_key=None, _tlog=False``) on the same database."""
    writer, schema = open_store(backend, tmp, MAX_GROUP, name="-gate")
    try:
        for n in range(GATE_SESSIONS):
            sid = f"ses_{n:020d}"
            stream = f"session:{sid}"
            writer.append(stream, 0, [SessionStarted(session_id=sid, agent="bench", role="dev")], META)
            searches = [
                MemorySearched(session_id=sid, query=f"q{i}", limit=10, result_ids=[], count=0)
                for i in range(GATE_EVENTS - 1)
            ]
            writer.append(stream, 1, searches, META)
        checked = SqlEventStore(writer.engine, row_key=ROW_KEY)
        unchecked = SqlEventStore(writer.engine, row_key=None, _tlog=False)
        times: dict[str, list[float]] = {"with": [], "without": []}
        scans: dict[str, list[float]] = {"with": [], "without": []}
        order = [f"session:ses_{n:020d}" for n in range(GATE_SESSIONS)]
        events = writer.head()[0]
        for _ in range(rounds):
            random.shuffle(order)
            for name, store in (("with", checked), ("without", unchecked)):
                for stream in order:
                    t0 = time.perf_counter()
                    state = store.load_stream(stream)
                    times[name].append(time.perf_counter() - t0)
                    assert len(state.events) == GATE_EVENTS
                t0 = time.perf_counter()
                assert sum(1 for _ in store.iter_events()) == events  # a replay's read: every event, decoded
                scans[name].append((time.perf_counter() - t0) / events)
    finally:
        writer.dispose()
        drop_schema(schema)
    return {
        "with_us": median(times["with"]) * 1e6,
        "without_us": median(times["without"]) * 1e6,
        "reads": len(times["with"]),
        "events": events,
        "scan_with_us": median(scans["with"]) * 1e6,
        "scan_without_us": median(scans["without"]) * 1e6,
    }


COMMIT_LAYOUTS = (
    "events only",
    "with authenticator and hashes in two side tables (schema 2)",
    "both in one side table",
    "both in the events row (schema 3)",
)
_SIDE_TABLES = (
    "CREATE TABLE event_auth (position INTEGER PRIMARY KEY, mac BLOB NOT NULL)",
    "CREATE TABLE tlog_hashes (id INTEGER PRIMARY KEY, hash BLOB NOT NULL)",
    "CREATE TABLE tlog_rows (position INTEGER PRIMARY KEY, mac BLOB NOT NULL, hashes BLOB NOT NULL)",
)


def measure_commit_pages(tmp: Path, rounds: int, commits: int = 500) -> dict[str, float]:
    """What the authenticator and the leaf's hashes cost a commit on a SQLite file in each layout, outside the
    ledger's code: raw sqlite3 on the store's own events table (WAL, ``synchronous=FULL``, its indexes and
    triggers), one row per transaction, interleaved (each round starting with the next layout); median µs per
    commit. Alone (NULL ``mac`` and ``tree``); with an ``event_auth`` row and two ``tlog_hashes`` rows (schema 2's
    layout); with one side-table row holding both; and with both in the row's own ``mac`` and ``tree`` columns
    (schema 3's, what the ledger writes)."""
    import sqlite3

    from ledger.core.chain import GENESIS_HASH

    store, _ = open_store("sqlite", tmp, MAX_GROUP, name="-pages")
    path = store.engine.url.database
    store.dispose()
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    for ddl in _SIDE_TABLES:
        conn.execute(ddl)
    columns = "position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash, mac, tree"
    insert = f"INSERT INTO events ({columns}) VALUES (?, ?, ?, 'MemorySearched', 1, ?, '{{}}', ?, ?, ?, ?, ?)"
    position, prev = 0, GENESIS_HASH
    ids = 0
    times: dict[str, list[float]] = {name: [] for name in COMMIT_LAYOUTS}
    for r in range(rounds):
        for name in COMMIT_LAYOUTS[r % 4 :] + COMMIT_LAYOUTS[: r % 4]:  # each round starts with the next layout
            t0 = time.perf_counter()
            for _ in range(commits):
                position += 1
                digest = secrets.token_hex(32)
                conn.execute("BEGIN IMMEDIATE")
                row = (position, f"session:{position % 50}", position, "x" * 300, f"{position:020d}", prev, digest)
                in_row = name == COMMIT_LAYOUTS[3]
                conn.execute(insert, (*row, *((os.urandom(32), os.urandom(64)) if in_row else (None, None))))
                if name == COMMIT_LAYOUTS[1]:
                    conn.execute("INSERT INTO event_auth (position, mac) VALUES (?, ?)", (position, os.urandom(32)))
                    conn.execute(
                        "INSERT INTO tlog_hashes (id, hash) VALUES (?, ?), (?, ?)",
                        (ids, os.urandom(32), ids + 1, os.urandom(32)),
                    )
                    ids += 2
                elif name == COMMIT_LAYOUTS[2]:
                    conn.execute("INSERT INTO tlog_rows VALUES (?, ?, ?)", (position, os.urandom(32), os.urandom(64)))
                conn.execute("COMMIT")
                prev = digest
            times[name].append((time.perf_counter() - t0) / commits * 1e6)
    conn.close()
    return {name: median(values) for name, values in times.items()}


def synthetic_tree(backend: str, tmp: Path, leaves: int) -> tuple[SqlEventStore, str | None]:
    """A store of ``leaves`` chained rows with random hashes, each holding its leaf's tree hashes as an append
    writes them (no authenticators, no payloads: the benchmark marks its size as checked, the one check
    :meth:`tree_size` makes once per size)."""
    from ledger.core.chain import GENESIS_HASH

    store, schema = open_store(backend, tmp, MAX_GROUP, name=f"-proof-{leaves}")
    tree, prev = EMPTY, GENESIS_HASH
    while tree.size < leaves:
        batch = [secrets.token_hex(32) for _ in range(min(50_000, leaves - tree.size))]
        first = tree.size + 1
        tree, stored = tree.extend_raw([bytes.fromhex(h) for h in batch])
        rows = []
        for k, (digest, hashes) in enumerate(zip(batch, stored, strict=True)):
            p = first + k
            rows.append((p, "s", p, "X", 1, "{}", "{}", "2026-01-01T00:00:00.000000Z", prev, digest, None, hashes))
            prev = digest
        with store.write_transaction() as cur:
            store._insert_chunks(cur, rows)
    if store.dialect == "postgresql":
        with store.read_cursor() as cur:
            cur.execute("ANALYZE events")
    store._verified = leaves
    return store, schema


def measure_proofs(backend: str, tmp: Path, rounds: int) -> dict[int, dict[str, float]]:
    """Per tree size: median time of ``prove_inclusion`` of a random leaf (interleaved between the sizes), the
    longest proof, and the statements one proof ran."""
    built = {n: synthetic_tree(backend, tmp, n) for n in PROOF_SIZES}
    times: dict[int, list[float]] = {n: [] for n in PROOF_SIZES}
    longest: dict[int, int] = dict.fromkeys(PROOF_SIZES, 0)
    try:
        for _ in range(rounds):
            for n, (store, _) in built.items():
                for _ in range(PROOFS // rounds):
                    index = random.randrange(n)
                    t0 = time.perf_counter()
                    proof = store.prove_inclusion(index, n)
                    times[n].append(time.perf_counter() - t0)
                    longest[n] = max(longest[n], len(proof))
        statements = {n: _statements_of_a_proof(store, n) for n, (store, _) in built.items()}
    finally:
        for store, schema in built.values():
            store.dispose()
            drop_schema(schema)
    return {
        n: {
            "p50_us": median(times[n]) * 1e6,
            "p99_us": percentile(times[n], 99) * 1e6,
            "longest": longest[n],
            "statements": statements[n],
            "bound": (n - 1).bit_length(),
        }
        for n in PROOF_SIZES
    }


def _statements_of_a_proof(store: SqlEventStore, size: int) -> int:
    """How many statements one ``prove_inclusion`` at ``size`` runs (counted on its cursors)."""
    import contextlib
    from collections.abc import Iterator

    ran: list[str] = []
    inner = store._read_cursor

    class Spy:
        def __init__(self, cur: Any) -> None:
            self.cur = cur

        def execute(self, sql: str, params: Any = ()) -> Any:
            ran.append(sql)
            return self.cur.execute(sql, params)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.cur, name)

    @contextlib.contextmanager
    def spying() -> Iterator[Any]:
        with inner() as cur:
            yield Spy(cur)

    store._read_cursor = spying  # type: ignore[method-assign]
    try:
        store.prove_inclusion(size // 2, size)
    finally:
        del store._read_cursor  # type: ignore[attr-defined]
    return len(ran)


def load_average() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3
