"""Row 2: batches of 100 events per transaction on SQLite, ours against raw sqlite3 ``executemany`` of the same
rows, in interleaved rounds; the gap explained by the per-event Python work timed apart."""

from __future__ import annotations

import datetime as _dt
import itertools
import secrets
from pathlib import Path

from benchkit.fmt import fmt_ms, fmt_rate, spread
from benchkit.stats import median
from benchkit.timing import interleaved_rates, per_op

from ledger.core.canonical import format_ts
from ledger.core.chain import GENESIS_HASH, record_hash
from ledger.core.mapper import decode, encode, encode_meta
from ledger_bench.fixtures import (
    AGENT,
    INSERT,
    LAST,
    Sizes,
    append_does,
    console,
    new_store,
    raw_table,
    search_event,
    session_ids,
)
from ledger_bench.report import Report, Row


def bench_batch(tmp: Path, sizes: Sizes, report: Report) -> None:
    console.log("[bold]batches of 100[/]: ours vs raw sqlite3 executemany (interleaved rounds)")
    expires = _dt.datetime.now(_dt.UTC) + _dt.timedelta(minutes=30)
    sids = session_ids(8, seed=2)
    streams = [f"session:{s}" for s in sids]
    metas = [{"agent": AGENT, "source": "mcp", "session_id": s} for s in sids]
    batch = [search_event(i, sids[0], expires) for i in range(100)]

    store = new_store(tmp / "batch_ours.db")
    versions = dict.fromkeys(streams, 0)
    n_ours = itertools.count()

    def ours() -> None:
        i = next(n_ours)
        stream = streams[i % 8]
        store.append(stream, versions[stream], batch, metas[i % 8])
        versions[stream] += 100

    conn = raw_table(tmp / "batch_raw.db")
    encoded = [encode(e) for e in batch]
    meta_json = [encode_meta(m) for m in metas]
    fake_hashes = [secrets.token_hex(32) for _ in range(100)]
    raw_versions = dict.fromkeys(streams, 0)
    n_raw = itertools.count()

    def raw() -> None:
        i = next(n_raw)
        stream = streams[i % 8]
        mj = meta_json[i % 8]
        conn.execute("BEGIN IMMEDIATE")
        head = conn.execute(LAST).fetchone()
        position, prev_hash = head if head else (0, GENESIS_HASH)
        v = raw_versions[stream]
        at = format_ts(_dt.datetime.now(_dt.UTC))
        rows = []
        for k, (type_name, schema_version, data_json) in enumerate(encoded):
            rows.append(
                (
                    position + k + 1,
                    stream,
                    v + k + 1,
                    type_name,
                    schema_version,
                    data_json,
                    mj,
                    at,
                    prev_hash,
                    fake_hashes[k],
                )
            )
            prev_hash = fake_hashes[k]
        conn.executemany(INSERT, rows)
        conn.execute("COMMIT")
        raw_versions[stream] += 100

    rates = interleaved_rates(
        {"ours": ours, "raw": raw},
        per_round=sizes.batch_per_round,
        rounds=sizes.batch_rounds,
        warmup=sizes.batch_warmup,
        units_per_op=100,
        on_round=lambda r: console.log(f"  round {r}/{sizes.batch_rounds}", highlight=False),
    )
    total = 100 * (sizes.batch_warmup + sizes.batch_per_round * sizes.batch_rounds)
    assert store.head()[0] == total and conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == total

    # Pure-Python steps of one 100-event append, timed apart.
    recs = [r for r in store.iter_records(0, 100)]
    mj = encode_meta(metas[0])
    t_encode = per_op(lambda: [encode(e) for e in batch], 200)

    def hash_all() -> None:
        for r in recs:
            record_hash(
                position=r.position,
                stream=r.stream,
                version=r.version,
                type=r.type,
                schema_version=r.schema_version,
                data_json=r.data_json,
                meta_json=mj,
                recorded_at=r.recorded_at,
                prev_hash=r.prev_hash,
            )

    t_hash = per_op(hash_all, 200)
    t_decode = per_op(lambda: [decode(r) for r in recs], 200)
    decodes = append_does("decode(")
    store.engine.dispose()
    conn.close()

    ours_r, raw_r = median(rates["ours"]), median(rates["raw"])
    per_batch_ours, per_batch_raw = 100 / ours_r, 100 / raw_r
    why = ""
    if ours_r / raw_r < 0.5:
        why = (
            f"a 100-event append takes {fmt_ms(per_batch_ours)} vs {fmt_ms(per_batch_raw)} raw, and "
            f"per-event Python work timed apart explains most of the gap: encode {fmt_ms(t_encode)}, hash "
            f"chain {fmt_ms(t_hash)}"
            + (f", decoding the 100 rows just written to build the return value {fmt_ms(t_decode)}" if decodes else "")
            + " per batch."
        )
    report.rows.append(
        Row(
            "Append, batches of 100 events per transaction (SQLite)",
            f"{fmt_rate(ours_r)} ev/s",
            f"{fmt_rate(raw_r)} ev/s (raw sqlite3 executemany)",
            ours_r / raw_r,
            "≥ 0.5×",
            0.5,
            why,
        )
    )
    report.details.append(
        (
            "Batches of 100 (row 2)",
            "\n".join(
                [
                    f"* Method: {sizes.batch_rounds} interleaved rounds of {sizes.batch_per_round} batches "
                    f"per contender after {sizes.batch_warmup} warm-up batches; rate = events/s, median "
                    "over rounds.",
                    "* Ours: `SqlEventStore.append(stream, v, [100 × MemorySearched], meta)` across 8 streams.",
                    "* Raw sqlite3: `BEGIN IMMEDIATE`; read the last position and hash; `executemany` of "
                    "100 rows with the same data/meta text (precomputed hash strings, no hashing or "
                    "encoding in Python); `COMMIT`.",
                    f"* Per-round rates: ours {spread(rates['ours'])}, raw {spread(rates['raw'])} ev/s; "
                    f"one batch takes {fmt_ms(per_batch_ours)} (ours) vs {fmt_ms(per_batch_raw)} (raw).",
                    f"* Pure-Python steps of one 100-event append, timed apart: encode {fmt_ms(t_encode)}, "
                    f"hash chain {fmt_ms(t_hash)}"
                    + (f", decode of the 100 returned records {fmt_ms(t_decode)}" if decodes else "")
                    + f"; sum {fmt_ms(t_encode + t_hash + (t_decode if decodes else 0.0))} vs a measured gap "
                    f"of {fmt_ms(per_batch_ours - per_batch_raw)} per batch.",
                ]
            ),
        )
    )
