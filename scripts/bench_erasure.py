#!/usr/bin/env python3
"""Encryption and erasure (issue 26): what encrypting free text costs ``remember`` and ``search``, and how long
erasing one block takes on a large ledger.

What is timed, in one run, on real SQLite files (WAL, ``synchronous=FULL``), BM25 search alone:

* **remember** (a distinct text each call, so every call stores a new block) and **search** (in a session,
  limit 10, queries cycling over words of the stored texts) on two ledgers built alike, one encrypting free text
  under per-subject data keys (:mod:`ledger.core.data_keys`) as every ledger now does, one whose key service seals
  nothing (``PlainKeys`` below, a benchmark-only stand-in: the same keyed block ids and read path, no data key
  made and no field encrypted). Calls alternate between the two ledgers in a rotating order, call by call.
* **secure_delete's cost** (SQLite): the encrypting ledger's ``remember`` and ``search`` against a third ledger
  alike but whose connections turn ``PRAGMA secure_delete`` off again (every ledger's connections have it on).
* **erase_block** (``Ledger.erase_block``, as an administrator) on a ledger holding N encrypted blocks (100,000 by
  default), each erasure of a different block, with the time of each step of the shredding (the data key
  destroyed, the search index caught up, the snapshots dropped, the scrub: on SQLite the WAL checkpointed and
  truncated, ``secure_delete`` having zeroed what was deleted; on PostgreSQL a ``VACUUM`` of the derived tables)
  measured around the ledger's own calls; then, on SQLite, no file under the ledger's home may hold an erased
  block's text (checked, or the run fails).

The large ledger is built quickly, through the store rather than ``remember``: one ``MemoryRemembered`` appended
per block stream (sealed by the store's key service as ``remember`` would), with ``synchronous=OFF`` while it is
built, then the search index caught up; erasures run with the ledger's settings (``synchronous=FULL``).

    python scripts/bench_erasure.py                 # 100,000 blocks; writes its section of docs/BENCHMARKS.md
    python scripts/bench_erasure.py --blocks 30000  # a smaller ledger
    python scripts/bench_erasure.py --quick         # 2,000 blocks, few calls; prints only
"""

from __future__ import annotations

import argparse
import itertools
import random
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from benchkit import BENCHMARKS_MD, docs, markdown
from benchkit.env import environment
from benchkit.fmt import fmt_ms_fine
from benchkit.stats import median, percentile
from benchkit.timing import time_each
from sqlalchemy import event

from api.bootstrap import initialise
from api.settings import Settings
from ledger.core.data_keys import DataKeys
from ledger.core.events import MemoryRemembered
from ledger.memory import decisions as memory
from ledger.service import Actor, Ledger

SECTION = docs.ERASURE
WHO = Actor("bench", "cli")
ADMIN = Actor("bench-admin", "cli", admin=True)
SEARCH_LIMIT = 10
RATIO_TARGET = 0.9
ERASE_TARGET_S = 1.0
_PROSE = (
    "ledger chain anchor snapshot projection replay index vector session token stamp refusal erasure key subject "
    "release deploy rollback migration schema invoice customer address payment policy rotation witness checkpoint "
    "tree proof leaf root audit report agent memory block recall frame attention budget queue worker retry lock"
)
WORDS = _PROSE.split()


class PlainKeys(DataKeys):
    """Benchmark only: a key service that seals nothing (no data key is made, no field encrypted), so a ledger
    built with it stores free text in the clear, as before issue 26, with everything else unchanged."""

    def seal(self, stream: str, type_name: str, payload: dict[str, Any], fields: Any, *_: Any, **__: Any) -> bool:
        return False


def text_of(i: int, rng: random.Random) -> str:
    """A distinct memory of about 200 characters: pseudo-prose from WORDS plus its number."""
    words = " ".join(rng.choice(WORDS) for _ in range(24))
    return f"note {i}: {words}; decided in review {i * 7919 % 100_003}."


class Backend:
    """Where the ledgers live: SQLite files in the run's temporary directory, or fresh schemas of one PostgreSQL
    database (dropped at the end)."""

    def __init__(self, tmp: Path, pg_url: str | None) -> None:
        self.tmp, self.pg_url, self.schemas = tmp, pg_url, []  # type: tuple[Path, str | None, list[str]]
        self.name = "PostgreSQL" if pg_url else "SQLite"

    def url(self, name: str) -> str | None:
        if self.pg_url is None:
            return None
        schema = f"bench_erase_{name}_{secrets.token_hex(4)}"
        with psycopg.connect(self.pg_url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        self.schemas.append(schema)
        sep = "&" if "?" in self.pg_url else "?"
        return f"{self.pg_url}{sep}options={quote('-csearch_path=' + schema)}"

    def open(self, name: str, secure_delete: bool = True) -> Ledger:
        ledger, _ = initialise(Settings(home=self.tmp / name, database_url=self.url(name), semantic=False))
        if not secure_delete and self.pg_url is None:
            engine = ledger.store.engine

            def off(dbapi_conn: Any, _record: Any) -> None:
                dbapi_conn.execute("PRAGMA secure_delete=OFF")

            engine.dispose()
            event.listen(engine, "connect", off)
        return ledger

    def size_mb(self, ledger: Ledger, name: str) -> float:
        """The database's size: the SQLite file, or the schema's tables with their indexes and TOAST."""
        if self.pg_url is None:
            return (self.tmp / name / "ledger.db").stat().st_size / 1e6
        with ledger.store.engine.connect() as conn:
            total = conn.exec_driver_sql(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'"
            ).scalar()
        return float(total or 0) / 1e6

    def drop(self) -> None:
        if self.pg_url is None:
            return
        with psycopg.connect(self.pg_url, autocommit=True) as conn:
            for schema in self.schemas:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def seeded(ledger: Ledger, count: int, start: int) -> None:
    rng = random.Random(start)
    for i in range(start, start + count):
        ledger.remember(WHO, text_of(i, rng), ["bench"])


def stored_text(ledger: Ledger, content: str) -> str:
    """The stored payload of a block remembered now (to check what each ledger writes)."""
    block_id = ledger.remember(WHO, content, ["bench"]).block_id
    record = ledger.store.record_of(memory.stream_for(block_id), 1)
    assert record is not None
    return record.data_json


def remember_and_search(backend: Backend, seed: int, calls: int) -> dict[str, list[float]]:
    """Per-call seconds of remember and search on an encrypting ledger and a plain one, interleaved."""
    ledgers = {"encrypted": backend.open("enc"), "plain": backend.open("plain")}
    if backend.pg_url is None:
        ledgers["no secure_delete"] = backend.open("nosd", secure_delete=False)
    plain = ledgers["plain"]
    plain.store.cipher = PlainKeys(plain.store.engine, plain.kernel.key.secret)
    for ledger in ledgers.values():
        seeded(ledger, seed, 0)
    stored = {name: stored_text(ledger, f"probe {name}") for name, ledger in ledgers.items()}
    assert '"enc"' in stored["encrypted"] and '"enc"' not in stored["plain"], "the benchmark-only switch did not take"
    sessions = {name: ledger.clock_in(WHO, role="dev").session_id for name, ledger in ledgers.items()}
    counter = itertools.count(10 * seed + 1_000_000)
    rng = random.Random(7)
    queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(64)]

    def remember(name: str) -> Callable[[], object]:
        texts = random.Random(name)
        return lambda: ledgers[name].remember(WHO, text_of(next(counter), texts), ["bench"])

    def searches(name: str) -> list[Callable[[], object]]:
        return [
            lambda q=q: ledgers[name].search(WHO, sessions[name], q, limit=SEARCH_LIMIT)  # type: ignore[misc]
            for q in queries
        ]

    ops: dict[str, list[Callable[[], object]]] = {}
    for name in ledgers:
        ops[f"remember {name}"] = [remember(name)]
        ops[f"search {name}"] = searches(name)
    keys = ledgers["encrypted"].kernel.keys
    ops["new data key"] = [lambda: keys.make(f"block:bench-key-{next(counter)}")]
    print(f"timing {calls} calls per contender ...", file=sys.stderr)
    out = time_each(ops, calls, warmup=20)
    for ledger in ledgers.values():
        ledger.store.dispose()
    return out


@contextmanager
def unsynced(ledger: Ledger) -> Iterator[None]:
    """Commits not waiting for the disk while a bulk build runs: SQLite ``synchronous=OFF``, PostgreSQL
    ``synchronous_commit=off`` (fresh connections both ways)."""
    engine = ledger.store.engine
    setting = "PRAGMA synchronous=OFF" if engine.dialect.name == "sqlite" else "SET synchronous_commit = off"

    def off(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute(setting)
        cur.close()
        if engine.dialect.name != "sqlite":
            dbapi_conn.commit()

    engine.dispose()
    event.listen(engine, "connect", off)
    try:
        yield
    finally:
        event.remove(engine, "connect", off)
        engine.dispose()


def build_blocks(ledger: Ledger, n: int) -> dict[str, str]:
    """``n`` encrypted blocks appended through the store (one stream each), the index caught up; their texts by
    id."""
    rng = random.Random(11)
    meta = {"agent": WHO.agent, "source": WHO.source}
    ids: dict[str, str] = {}
    started = time.perf_counter()
    with unsynced(ledger):
        for i in range(n):
            content = text_of(i, rng)
            block_id = ledger.kernel.block_id(content)
            ledger.store.append(
                memory.stream_for(block_id),
                0,
                [MemoryRemembered(block_id=block_id, content=content, tags=["bench"], session_id=None)],
                meta,
            )
            ids[block_id] = content
            if i % 10_000 == 9_999:
                print(f"  {i + 1:,} blocks, {time.perf_counter() - started:.0f} s", file=sys.stderr)
        ledger.index.catch_up()
    print(f"  built and indexed in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return ids


STEP_NOTES = {
    "SQLite": "Every connection has `secure_delete` on, so what an erasure deletes (the key's row, the block's "
    "FTS5 row, the pages a merge frees, the snapshots) is zeroed as it goes and no `VACUUM` of the file is needed; "
    "the index step deletes the block's FTS5 row by its rowid (the position of its `MemoryRemembered`), then merges "
    "every segment (`optimize`, the one step that grows with the index) so the erased words leave it at once; the "
    "scrub checkpoints the WAL into the file and truncates it.",
    "PostgreSQL": "Destroying the key deletes its row, then a plain `VACUUM data_keys` frees it and compacts its "
    "page (no `VACUUM FULL` rewriting the table; the vacuum still scans the table's primary-key index, which grows "
    "with the ledger); the scrub is a plain `VACUUM` of the search index, vectors and snapshots tables (a scan of "
    "each); the index step deletes one row by its key.",
}
STEPS = ("destroy key", "index catch-up", "drop snapshots", "scrub")


def timed_erasures(ledger: Ledger, block_ids: list[str]) -> tuple[list[float], dict[str, list[float]]]:
    """Seconds of each ``erase_block`` and of each step of its shredding, measured around the ledger's calls."""
    kernel = ledger.kernel
    steps: dict[str, list[float]] = {s: [] for s in STEPS}
    current: dict[str, float] = dict.fromkeys(STEPS, 0.0)
    targets = (
        (kernel.keys, "destroy", "destroy key"),
        (kernel.index, "catch_up", "index catch-up"),
        (kernel.snapshots, "drop", "drop snapshots"),
        (kernel.keys, "scrub", "scrub"),
    )
    for obj, attr, label in targets:
        original = getattr(obj, attr)

        def wrapped(*a: Any, _f: Any = original, _label: str = label, **kw: Any) -> Any:
            start = time.perf_counter()
            try:
                return _f(*a, **kw)
            finally:
                current[_label] += time.perf_counter() - start

        setattr(obj, attr, wrapped)
    totals = []
    try:
        for block_id in block_ids:
            current.update(dict.fromkeys(STEPS, 0.0))
            start = time.perf_counter()
            ledger.erase_block(ADMIN, block_id, "bench: erasure request")
            totals.append(time.perf_counter() - start)
            for label in STEPS:
                steps[label].append(current[label])
    finally:
        for obj, attr, _label in targets:
            delattr(obj, attr)
    return totals, steps


def leaked(home: Path, texts: list[str]) -> list[bool]:
    """For each text, whether a file under ``home`` holds it (its UTF-8 bytes, as FTS5's content table does)."""
    blobs = [f.read_bytes() for f in home.rglob("*") if f.is_file()]
    return [any(t.encode() in b for b in blobs) for t in texts]


def erasure_at(backend: Backend, n: int, erasures: int) -> dict[str, Any]:
    ledger = backend.open(f"big{n}")
    texts = build_blocks(ledger, n)
    ledger.search(WHO, ledger.clock_in(WHO, role="dev").session_id, "ledger chain", limit=SEARCH_LIMIT)
    size_mb = backend.size_mb(ledger, f"big{n}")
    picks = random.Random(3).sample(sorted(texts), erasures)
    if backend.pg_url is None:
        assert all(leaked(backend.tmp / f"big{n}", [texts[picks[0]]])), "the control: the text is in the file"
    totals, steps = timed_erasures(ledger, picks)
    gone = ledger.store.load_stream(memory.stream_for(picks[0]))
    assert any(type(r.event).__name__ == "MemoryErased" for r in gone.events)
    ledger.store.dispose()
    if backend.pg_url is None:
        found = leaked(backend.tmp / f"big{n}", [texts[p] for p in picks])
        assert not any(found), f"an erased block's text is still in a file under the ledger's home: {found}"
    return {"n": n, "size_mb": size_mb, "totals": totals, "steps": steps}


def run_backend(backend: Backend, args: argparse.Namespace, sizes: list[int]) -> dict[str, Any]:
    print(f"{backend.name}: remember and search ...", file=sys.stderr)
    try:
        per_call = remember_and_search(backend, args.seed, args.calls)
        big = []
        for n in sizes:
            print(f"{backend.name}: building {n:,} blocks ...", file=sys.stderr)
            big.append(erasure_at(backend, n, args.erasures))
    finally:
        backend.drop()
    return {"name": backend.name, "per_call": per_call, "big": big}


def result_rows(run: dict[str, Any]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    per_call, db = run["per_call"], run["name"]
    rows = []
    for op in ("remember", "search"):
        ratio = median(per_call[f"{op} plain"]) / median(per_call[f"{op} encrypted"])
        for name in ("encrypted", "plain"):
            s = per_call[f"{op} {name}"]
            speed = f"{ratio:.2f}× plain" if name == "encrypted" else "—"
            verdict = ("met" if ratio >= RATIO_TARGET else "**missed**") if name == "encrypted" else ""
            rows.append((db, f"`{op}`, {name}", fmt_ms_fine(median(s)), fmt_ms_fine(percentile(s, 95)), speed, verdict))
        if f"{op} no secure_delete" in per_call:
            s = per_call[f"{op} no secure_delete"]
            cost = median(s) / median(per_call[f"{op} encrypted"])
            rows.append(
                (
                    db,
                    f"`{op}`, encrypted, `secure_delete` off",
                    fmt_ms_fine(median(s)),
                    fmt_ms_fine(percentile(s, 95)),
                    f"on runs at {cost:.2f}× off",
                    "",
                )
            )
    key = per_call["new data key"]
    rows.append(
        (
            db,
            "a new block's data key alone (`DataKeys.make`: made and wrapped; its row rides the append)",
            fmt_ms_fine(median(key)),
            fmt_ms_fine(percentile(key, 95)),
            "",
            "",
        )
    )
    erase_rows = []
    for b in run["big"]:
        t = b["totals"]
        erase_rows.append(
            (
                db,
                f"{b['n']:,}",
                f"{b['size_mb']:.0f} MB",
                f"{median(t):.3f} s",
                f"{min(t):.3f}–{max(t):.3f} s",
                *(f"{median(b['steps'][s]):.3f} s" for s in STEPS),
                "met" if median(t) <= ERASE_TARGET_S else "**missed**",
            )
        )
    return rows, erase_rows


def where_time_goes(run: dict[str, Any]) -> list[str]:
    """What the numbers say about the misses, from this run's own measurements."""
    per_call, db = run["per_call"], run["name"]
    enc, plain = median(per_call["remember encrypted"]), median(per_call["remember plain"])
    key = median(per_call["new data key"])
    out = [
        f"* **{db}, `remember`**: encrypted minus plain is {(enc - plain) * 1e3:+.2f} ms at p50; making and "
        f"wrapping the new block's data key takes {fmt_ms_fine(key)} (`DataKeys.make`), and its row is inserted in "
        "the append's own transaction (group commit), so no commit of its own; AES-GCM on the text itself is a few "
        "microseconds."
    ]
    if "remember no secure_delete" in per_call:
        on = {op: median(per_call[f"{op} encrypted"]) for op in ("remember", "search")}
        off = {op: median(per_call[f"{op} no secure_delete"]) for op in ("remember", "search")}
        out.append(
            f"* **{db}, `secure_delete`**: on (as every ledger now runs) against off, `remember` "
            f"{(on['remember'] - off['remember']) * 1e3:+.2f} ms at p50 ({off['remember'] / on['remember']:.2f}×), "
            f"`search` {(on['search'] - off['search']) * 1e3:+.2f} ms ({off['search'] / on['search']:.2f}×): appends "
            "delete nothing; what it zeroes is the space of rows updated or deleted (the index's checkpoint, "
            "snapshots)."
        )
    if run["big"]:
        b = run["big"][-1]
        total = median(b["totals"])
        shares = ", ".join(f"{s} {median(b['steps'][s]) / total:.0%}" for s in STEPS)
        out.append(
            f"* **{db}, `erase_block` at {b['n']:,} blocks** ({total:.2f} s at p50): {shares}; the rest (load the "
            f"stream, append `MemoryErased`) is milliseconds. {STEP_NOTES[db]}"
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, nargs="+", default=[100_000], help="ledger sizes for erase_block")
    parser.add_argument("--calls", type=int, default=400, help="timed calls per remember/search contender")
    parser.add_argument("--seed", type=int, default=2_000, help="blocks remembered before timing remember/search")
    parser.add_argument("--erasures", type=int, default=5, help="erasures timed per ledger size")
    parser.add_argument("--postgres", metavar="URL", help="also measure on PostgreSQL (fresh schemas, dropped after)")
    parser.add_argument("--pg-blocks", type=int, nargs="+", help="ledger sizes on PostgreSQL (default: --blocks)")
    parser.add_argument("--quick", action="store_true", help="2,000 blocks, few calls; print, do not write")
    parser.add_argument("--output", type=Path, default=BENCHMARKS_MD)
    args = parser.parse_args()
    if args.quick:
        args.blocks, args.calls, args.seed, args.erasures = [2_000], 40, 200, 2
        args.pg_blocks = [2_000] if args.postgres else None
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = environment(tmp)
        runs = [run_backend(Backend(tmp, None), args, args.blocks)]
        if args.postgres:
            runs.append(run_backend(Backend(tmp, args.postgres), args, args.pg_blocks or args.blocks))
    rows = [r for run in runs for r in result_rows(run)[0]]
    erase_rows = [r for run in runs for r in result_rows(run)[1]]
    lines = [
        SECTION,
        "",
        "Generated by `scripts/bench_erasure.py` in one run on the machine below (issue 26). Remember and search:",
        "per-call times on two ledgers alike but for encryption (one seals free text under per-subject data keys, the",
        "other's key service seals nothing: a benchmark-only stand-in defined in the script), "
        f"{args.calls} calls per contender,",
        f"interleaved call by call in a rotating order, after {args.seed:,} blocks remembered in each; BM25 search,"
        f" limit {SEARCH_LIMIT}.",
        f"Speed ratio = plain p50 ÷ encrypted p50 (target ≥ {RATIO_TARGET}).",
        "",
        *markdown.table(("database", "measurement", "p50", "p95", "speed vs plain", "target"), rows),
        "",
        f"`erase_block` on a ledger of N encrypted blocks (built through the store, then indexed), {args.erasures} "
        "erasures of different blocks,",
        "with the time of each step of the shredding, measured around the ledger's own calls (target ≤ 1 s):",
        "",
        *markdown.table(("database", "blocks", "size", "p50", "range", *STEPS, "target"), erase_rows),
        "",
        "Where the time goes:",
        "",
        *(line for run in runs for line in where_time_goes(run)),
        "",
        "### Environment",
        "",
        *markdown.bullets(env),
        *markdown.run_footer(time.perf_counter() - began),
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if not args.quick:
        docs.write_section(args.output, SECTION, report)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
