"""Rows 6 and 7: PostgreSQL appends with 1 and 4 concurrent writers, ours against a minimal raw psycopg append
under the same advisory lock (for context, no target), in interleaved slices on fresh schemas."""

from __future__ import annotations

import datetime as _dt
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from benchkit.fmt import fmt_ms, fmt_rate
from benchkit.stats import median, percentile
from benchkit.timing import rotated

from ledger.core.canonical import format_ts
from ledger.core.chain import GENESIS_HASH
from ledger.core.mapper import encode, encode_meta
from ledger.core.storage import SqlEventStore, make_engine, normalise_url
from ledger_bench.fixtures import AGENT, INSERT, LAST, PG_URL, ROW_KEY, Sizes, console, search_event
from ledger_bench.report import Report, Row


def _pg_raw_append(conn: Any, stream: str, version: int, row: tuple[str, int, str, str], lock_key: int) -> None:
    """The minimal hash-chained append on psycopg: advisory lock (this schema's, as the store takes it), read the
    head, insert, commit."""
    type_name, schema_version, data_json, meta_json = row
    with conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock('events'::regclass::oid::int4, %s)", (lock_key,))
        cur.execute(LAST)
        head = cur.fetchone()
        position, prev_hash = head if head else (0, GENESIS_HASH)
        cur.execute(
            INSERT.replace("?", "%s"),
            (
                position + 1,
                stream,
                version,
                type_name,
                schema_version,
                data_json,
                meta_json,
                format_ts(_dt.datetime.now(_dt.UTC)),
                prev_hash,
                secrets.token_hex(32),
            ),
        )
    conn.commit()


def run_slice(appends: list[Callable[[], None]], seconds: float) -> tuple[int, float, list[float]]:
    """One thread per appender, released together, each appending for ``seconds``.

    Returns (events appended, wall time from the first start to the last finish, per-append latencies).
    """
    barrier = threading.Barrier(len(appends))
    results: list[tuple[float, float, list[float]] | BaseException | None] = [None] * len(appends)

    def worker(idx: int) -> None:
        try:
            barrier.wait()
            start = time.perf_counter()
            end = start + seconds
            lat: list[float] = []
            now = start
            while now < end:
                appends[idx]()
                t = time.perf_counter()
                lat.append(t - now)
                now = t
            results[idx] = (start, now, lat)
        except BaseException as exc:
            barrier.abort()
            results[idx] = exc

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(appends))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        if isinstance(r, BaseException):
            raise r
    done = [r for r in results if isinstance(r, tuple)]
    lat = [x for r in done for x in r[2]]
    return len(lat), max(r[1] for r in done) - min(r[0] for r in done), lat


def pg_schema_url(schema: str) -> str:
    sep = "&" if "?" in PG_URL else "?"
    return f"{PG_URL}{sep}options={quote('-csearch_path=' + schema)}"


def pg_not_measured(report: Report, reason: str) -> None:
    report.env["postgresql"] = reason
    for writers in (1, 4):
        report.rows.append(
            Row(
                f"PostgreSQL append, {writers} concurrent writer{'s' if writers > 1 else ''}",
                "not measured",
                "not measured",
                target="none",
                why=reason,
                measured=False,
            )
        )


def bench_pg(sizes: Sizes, report: Report) -> None:
    import psycopg
    import sqlalchemy as sa

    from ledger.core.storage import APPEND_LOCK

    console.log("[bold]PostgreSQL appends[/]: 1 and 4 concurrent writers")
    try:
        with psycopg.connect(PG_URL, connect_timeout=3) as conn:
            server_version, sync_commit, fsync = (
                str(conn.execute(f"SHOW {name}").fetchone()[0])  # type: ignore[index]
                for name in ("server_version", "synchronous_commit", "fsync")
            )
    except Exception as exc:
        message = f"PostgreSQL at {PG_URL} is unreachable: {' '.join(str(exc).split())}"
        console.print(f"[yellow]{message} — PostgreSQL rows are marked 'not measured'[/]")
        pg_not_measured(report, message)
        return
    report.env["postgresql"] = f"{server_version} (synchronous_commit={sync_commit}, fsync={fsync}) at {PG_URL}"

    # Ours and the raw baseline each get their own fresh schema (the raw rows carry fake hashes).
    schemas = {"ours": "bench_" + secrets.token_hex(6), "raw": "bench_raw_" + secrets.token_hex(6)}
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        for schema in schemas.values():
            conn.execute(f"CREATE SCHEMA {schema}")
    engines: list[Any] = []
    raw_conns: list[Any] = []
    rounds = 3
    slice_s = sizes.pg_seconds / rounds
    try:
        store = SqlEventStore(make_engine(pg_schema_url(schemas["ours"])), row_key=ROW_KEY)
        engines.append(store.engine)
        store.create_schema()
        store_pre_ping = bool(getattr(store.engine.pool, "_pre_ping", False))
        raw_setup = SqlEventStore(make_engine(pg_schema_url(schemas["raw"])), row_key=ROW_KEY)
        engines.append(raw_setup.engine)
        raw_setup.create_schema()
        no_ping = SqlEventStore(
            sa.create_engine(normalise_url(pg_schema_url(schemas["ours"])), connect_args={"connect_timeout": 5}),
            row_key=ROW_KEY,
        )
        engines.append(no_ping.engine)
        expires = _dt.datetime.now(_dt.UTC) + _dt.timedelta(minutes=30)

        def ours_append(s: SqlEventStore, idx: int) -> Callable[[], None]:
            sid = f"ses_{secrets.token_hex(10)}"
            stream, meta = f"session:{sid}", {"agent": AGENT, "source": "mcp", "session_id": sid}
            ev = search_event(idx, sid, expires)
            version = [0]

            def append() -> None:
                s.append(stream, version[0], [ev], meta)
                version[0] += 1

            return append

        def raw_append(idx: int) -> Callable[[], None]:
            conn = psycopg.connect(pg_schema_url(schemas["raw"]))
            raw_conns.append(conn)
            sid = f"ses_{secrets.token_hex(10)}"
            stream = f"session:{sid}"
            type_name, schema_version, data_json = encode(search_event(idx, sid, expires))
            row = (
                type_name,
                schema_version,
                data_json,
                encode_meta({"agent": AGENT, "source": "mcp", "session_id": sid}),
            )
            version = [0]

            def append() -> None:
                version[0] += 1
                _pg_raw_append(conn, stream, version[0], row, APPEND_LOCK)

            return append

        configs: dict[str, list[Callable[[], None]]] = {
            "ours1": [ours_append(store, 0)],
            "noping1": [ours_append(no_ping, 1)],
            "raw1": [raw_append(0)],
            "ours4": [ours_append(store, 10 + i) for i in range(4)],
            "raw4": [raw_append(10 + i) for i in range(4)],
        }
        for appends in configs.values():
            for append in appends:
                for _ in range(sizes.pg_warmup):
                    append()
        totals: dict[str, list[Any]] = {k: [0, 0.0, []] for k in configs}
        groups = [["ours1", "noping1", "raw1"], ["ours4", "raw4"]]
        for r in range(rounds):
            for group in groups:
                for name in rotated(group, r):
                    count, elapsed, lat = run_slice(configs[name], slice_s)
                    totals[name][0] += count
                    totals[name][1] += elapsed
                    totals[name][2].extend(lat)
            console.log(f"  round {r + 1}/{rounds}", highlight=False)
        measured = {k: (v[0] / v[1], v[2]) for k, v in totals.items()}
        for name, (rate, lat) in measured.items():
            console.log(f"  {name}: {rate:,.0f} ev/s, median {fmt_ms(median(lat))}", highlight=False)
        chain = store.verify()
        assert chain.ok, f"the benchmark broke the PostgreSQL hash chain: {chain}"
        expected = (
            sum(sizes.pg_warmup + len(totals[k][2]) for k in ("ours1", "noping1", "ours4")) + 3 * sizes.pg_warmup
        )  # the ours4 config has 4 writers, each with its own warm-up
        assert store.head()[0] == expected, (store.head()[0], expected)
    finally:
        for c in raw_conns:
            c.close()
        for engine in engines:
            engine.dispose()
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            for schema in schemas.values():
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")

    def cell(key: str) -> str:
        rate, lat = measured[key]
        return f"{fmt_rate(rate)} ev/s; latency median {fmt_ms(median(lat))}, p95 {fmt_ms(percentile(lat, 95))}"

    for w in (1, 4):
        ours_rate, raw_rate = measured[f"ours{w}"][0], measured[f"raw{w}"][0]
        report.rows.append(
            Row(
                f"PostgreSQL append, {w} concurrent writer{'s' if w > 1 else ''} (1 event per transaction)",
                cell(f"ours{w}"),
                cell(f"raw{w}") + " (raw psycopg, for context)",
                ours_rate / raw_rate,
                "none",
            )
        )
    report.details.append(
        (
            "PostgreSQL (rows 6 and 7)",
            "\n".join(
                [
                    "* Fresh schemas (search_path set through `options=-csearch_path=…`), one for ours "
                    "and one for the raw baseline, dropped afterwards; our hash chain was verified after "
                    "the run.",
                    "* Writers are threads in this process; ours share one `SqlEventStore` engine (its "
                    "pool holds up to 15 connections). Each writer appends one `MemorySearched` at a time "
                    f"to its own stream. Every configuration ran for {sizes.pg_seconds:g} s in total, as "
                    f"{rounds} slices taken in turn with the other configurations of the same writer "
                    f"count, after {sizes.pg_warmup} warm-up appends per writer. Events/s counts all "
                    "writers; latency is per append call.",
                    "* Raw psycopg (context only, no target): one connection per writer; "
                    "`pg_advisory_xact_lock` on the same key, read the head, `INSERT` one row with the "
                    "same data/meta text, `COMMIT`.",
                    "* Appends are serialised by one advisory lock held to commit (one hash chain), so "
                    "more writers add queueing latency rather than throughput.",
                    "* Diagnostic: ours with 1 writer on an engine built without `pool_pre_ping` "
                    + (
                        "(the store's own engine sets it, which costs a `SELECT 1` round trip on every "
                        "pool checkout, i.e. every append)"
                        if store_pre_ping
                        else "(the store's own engine does not set it either, so this only shows run-to-run noise)"
                    )
                    + f": {cell('noping1')}.",
                ]
            ),
        )
    )
