#!/usr/bin/env python
"""Queryless recall at scale: the attention and task frames, which rank every live block, on a large ledger.

Run from the repository root::

    .venv/bin/python scripts/bench_recall_frames.py --ledger /path/to/ledger-home   # a copy of it is measured
    .venv/bin/python scripts/bench_recall_frames.py --events 1000000                # builds one (minutes)
    .venv/bin/python scripts/bench_recall_frames.py --quick                         # 20k events; prints only

The ledger measured is always a temporary copy (taken with SQLite's backup API, deleted afterwards): each recall
appends an event. In one process, after the memory graph has caught up (untimed), for each frame, interleaved:
  * ``Ledger.recall(frame=..., top_k=5)`` without a query, end to end (it appends its ``MemoryRecalled``);
  * the way recall ranked before (reference, in the same run): every live block built as a view and scored by
    ``recall.score_blocks``, ``recollect`` over the whole ranking and a ``RecallResult`` listing every block not
    shown in ``dropped``; no append, so it understates what a recall cost before;
  * the baseline: a raw scan of every block's row (``SELECT block_id, tags_json FROM memory_fts``) on a plain
    ``sqlite3`` connection to the same file.
Each reference is checked to show the blocks, scores and pool the new recall shows (the ledger's clock is held at
the moment the run starts, so both see the same active hours). The peak of Python
allocations during one call (``tracemalloc``) and the JSON size of the answer are measured apart from timing.
The section it writes to docs/BENCHMARKS.md is its own (replaced in place).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchkit import BENCHMARKS_MD, docs, markdown
from benchkit.env import environment
from benchkit.fmt import fmt_ratio, fmt_secs, yes_no
from benchkit.stats import median
from ledger_bench.log import build

from api.bootstrap import initialise
from api.settings import Settings
from ledger.core import clock as _clock
from ledger.memory import recall as rc
from ledger.memory.report import BlockOut, DroppedBlock, RecalledBlock, RecallResult
from ledger.memory.scoring import BlockColumns, Ranking
from ledger.service import Actor, Ledger

WHO = Actor("bench", "cli")
TOP_K = 5
RAW_SCAN = "SELECT block_id, tags_json FROM memory_fts"
TARGET_S = 1.0


def copy_ledger(source: Path, target: Path) -> None:
    """A consistent copy of ``source``'s ledger (backup API: safe while another process writes) and its keys."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ("receipt.key", "signing.key"):
        if (source / name).exists():
            shutil.copy2(source / name, target / name)
    src = sqlite3.connect(f"file:{source / 'ledger.db'}?mode=ro", uri=True)
    dst = sqlite3.connect(target / "ledger.db")
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def reference(ledger: Ledger, frame: str) -> RecallResult:
    """What a queryless recall answered before it was bounded, minus the append: every view scored, every block
    not shown listed in ``dropped``."""
    spec = rc.frame_spec(frame)
    memory = ledger.memory
    with memory._live() as (graph, clock):
        views = [b for b in graph.live_blocks(spec.tag_prefix) if rc.in_frame(b, spec)]
        ranked = rc.score_blocks(views, spec.weights, graph, clock)
    sources: dict[str, Any] = {}

    def text_of(blocks: Any) -> dict[str, str]:
        sources.update(memory.block_sources(blocks))
        return {block_id: found.content for block_id, found in sources.items()}

    shown = rc.recollect(ranked, spec, TOP_K, text_of)
    shown_ids = {s.scored.block.block_id for s in shown.shown}
    budget = [DroppedBlock(block_id=b, reason=r) for b, r in shown.dropped if r == "token_budget"]
    cut = {d.block_id for d in budget}
    dropped = [
        DroppedBlock(block_id=s.block.block_id, reason="top_k")
        for s in ranked
        if s.block.block_id not in shown_ids and s.block.block_id not in cut
    ]
    return RecallResult(
        frame=spec.name,
        query=None,
        text=shown.text,
        tokens=shown.tokens,
        token_budget=spec.token_budget,
        blocks=[
            RecalledBlock(
                **BlockOut.of(s.scored, *sources[s.scored.block.block_id]).model_dump(),
                guaranteed=s.guaranteed,
                truncated=s.truncated,
            )
            for s in shown.shown
        ],
        dropped=dropped + budget,
        dropped_beyond_pool=0,
        active_hours=round(clock.now, 6),
        session_id=None,
        token_expires_at=None,
        position=0,
    )


def ranking_only(ledger: Ledger, frame: str) -> list[Any]:
    """The new ranking alone, as recall runs it (no texts, no answer, no append): to compare with the reference."""
    spec = rc.frame_spec(frame)
    with ledger.memory._live() as (graph, clock):
        columns = BlockColumns(graph, tags=spec.tag_prefix is not None)
        ranking = Ranking(graph, clock, spec.weights, columns, columns.in_frame(spec.tag_prefix))
        return ranking.best(TOP_K * rc.CANDIDATES_PER_SLOT)


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = call()
    return time.perf_counter() - t0, out


def peak_bytes(call: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def raw_scan(db: Path) -> float:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        seconds, rows = timed(lambda: conn.execute(RAW_SCAN).fetchall())
    finally:
        conn.close()
    assert rows
    return seconds


def check_same(new: RecallResult, ref: RecallResult) -> None:
    """The bounded recall shows what the reference shows, with the same scores, and lists the pool it competed in."""
    assert [(b.block_id, b.score) for b in new.blocks] == [(b.block_id, b.score) for b in ref.blocks], "shown differ"
    assert new.text == ref.text
    pool = [*[b.block_id for b in new.blocks], *[d.block_id for d in new.dropped]]
    assert len(pool) == min(TOP_K * rc.CANDIDATES_PER_SLOT, len(ref.blocks) + len(ref.dropped))
    assert new.dropped_beyond_pool == len(ref.blocks) + len(ref.dropped) - len(pool)


def measure(home: Path, rounds: int) -> dict[str, Any]:
    db = home / "ledger.db"
    moment = _clock.now()  # held: the reference and the recall after it see the same active hours
    ledger, _ = initialise(Settings(home=home, database_url=f"sqlite:///{db}"), clock=lambda: moment)
    try:
        t0 = time.perf_counter()
        stats = ledger.memory_stats()  # the graph catches up with the log: not what is measured here
        catch_up = time.perf_counter() - t0
        out: dict[str, Any] = {"blocks": stats.blocks, "edges": stats.edges, "catch_up_s": catch_up}
        out["live"] = ledger.memory_blocks(limit=1).count
        samples: dict[str, list[float]] = {"raw": []}
        for frame in ("attention", "task"):
            samples[f"new_{frame}"], samples[f"ref_{frame}"], samples[f"rank_{frame}"] = [], [], []
        for _ in range(rounds):
            samples["raw"].append(raw_scan(db))
            for frame in ("attention", "task"):
                ref_s, ref = timed(lambda f=frame: reference(ledger, f))  # type: ignore[misc]
                new_s, new = timed(lambda f=frame: ledger.recall(WHO, frame=f, top_k=TOP_K))  # type: ignore[misc]
                check_same(new, ref)
                samples[f"ref_{frame}"].append(ref_s)
                samples[f"rank_{frame}"].append(timed(lambda f=frame: ranking_only(ledger, f))[0])  # type: ignore[misc]
                samples[f"new_{frame}"].append(new_s)
                out[f"size_new_{frame}"] = len(new.model_dump_json())
                out[f"size_ref_{frame}"] = len(ref.model_dump_json())
                out[f"dropped_{frame}"] = (len(new.dropped), new.dropped_beyond_pool, len(ref.dropped))
        for frame in ("attention", "task"):
            out[f"peak_new_{frame}"] = peak_bytes(lambda f=frame: ledger.recall(WHO, frame=f, top_k=TOP_K))  # type: ignore[misc]
            out[f"peak_ref_{frame}"] = peak_bytes(lambda f=frame: reference(ledger, f))  # type: ignore[misc]
        out["curate_s"], _ = timed(lambda: ledger.memory.curate(WHO))
        out["list_s"], _ = timed(lambda: ledger.memory_blocks(limit=20))
        out.update({k: median(v) for k, v in samples.items()})
        return out
    finally:
        ledger.store.dispose()


def section(events: str, m: dict[str, Any], env: dict[str, str], rounds: int, elapsed: float) -> str:
    raw = m["raw"]
    rows = [("raw scan of every block row (`" + RAW_SCAN + "`)", fmt_secs(raw), "—", "—", "baseline", "—", "—")]
    for frame in ("attention", "task"):
        new, ref = m[f"new_{frame}"], m[f"ref_{frame}"]
        listed, beyond, before = m[f"dropped_{frame}"]
        rows.append(
            (
                f"`Ledger.recall(frame={frame!r}, top_k={TOP_K})`, no query",
                fmt_secs(new),
                f"{m[f'size_new_{frame}'] / 1024:,.1f} kB ({listed} listed, {beyond:,} counted)",
                f"{m[f'peak_new_{frame}'] / 2**20:,.1f} MB",
                fmt_ratio(new / raw),
                f"≤ {TARGET_S:.0f} s",
                yes_no(new <= TARGET_S),
            )
        )
        rows.append(
            (
                "… its ranking alone (`BlockColumns` + `Ranking.best(20)`)",
                fmt_secs(m[f"rank_{frame}"]),
                "—",
                "—",
                fmt_ratio(m[f"rank_{frame}"] / raw),
                "—",
                "—",
            )
        )
        rows.append(
            (
                "… as recall did before (reference: every view scored by `score_blocks`, all listed; no append)",
                fmt_secs(ref),
                f"{m[f'size_ref_{frame}'] / 1024:,.1f} kB ({before:,} listed)",
                f"{m[f'peak_ref_{frame}'] / 2**20:,.1f} MB",
                fmt_ratio(ref / raw),
                "—",
                f"{fmt_ratio(ref / new)} the new recall's time",
            )
        )
    header = ("Call", "p50", "answer (JSON)", "allocation peak (tracemalloc)", "÷ raw scan", "Target", "Met")
    facts = {**env, "ledger": events}
    lines = [
        docs.RECALL_FRAMES,
        "",
        "Generated by `scripts/bench_recall_frames.py`: a queryless recall in the attention and task frames ranks "
        f"every live block. Median of {rounds} interleaved rounds in one process on a copy of the ledger, after the "
        f"memory graph caught up (untimed: {m['catch_up_s']:.1f} s); {m['blocks']:,} blocks, {m['live']:,} live, "
        f"{m['edges']:,} co-retrieval edges. Every new recall was checked to show the blocks, scores and text of the "
        "reference and to list its pool (top_k × 4) and count the rest. Also timed once: a manual `Ledger.curate` "
        f"(weighs every live block the same way) {fmt_secs(m['curate_s'])}, `memory_blocks(limit=20)` "
        f"{fmt_secs(m['list_s'])}.",
        "",
        *markdown.table(header, rows),
        "",
        "### Environment",
        "",
        *markdown.bullets(facts),
        *markdown.run_footer(elapsed),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ledger", type=Path, help="the home of an existing SQLite ledger to copy and measure")
    parser.add_argument("--events", type=int, default=1_000_000, help="size of the ledger built without --ledger")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per measurement")
    parser.add_argument("--quick", action="store_true", help="20k events, 2 rounds; print instead of writing")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rounds = 2 if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="ledger-recall-frames-") as tmp_name:
        home = Path(tmp_name) / "ledger"
        env = environment(Path(tmp_name))
        if args.ledger is not None and not args.quick:
            copy_ledger(args.ledger, home)
            events = f"a copy of {args.ledger}"
        else:
            n = 20_000 if args.quick else args.events
            home.mkdir(parents=True)
            print(f"building a ledger of {n:,} events in {home}", file=sys.stderr, flush=True)
            build(home / "ledger.db", n)
            events = f"{n:,} events built by `scripts/ledger_bench/log.py`"
        with sqlite3.connect(home / "ledger.db") as conn:
            events += f" ({conn.execute('SELECT MAX(position) FROM events').fetchone()[0]:,} events)"
        m = measure(home, rounds)
    text = section(events, m, env, rounds, time.perf_counter() - started)
    if not args.quick:
        docs.write_section(BENCHMARKS_MD, docs.RECALL_FRAMES, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
