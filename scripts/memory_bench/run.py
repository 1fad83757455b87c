"""The command line of ``scripts/bench_memory.py``: grow one ledger to each size, measure there, curate once at
the largest, then print the section or write it into docs/BENCHMARKS.md in place."""

from __future__ import annotations

import argparse
import tempfile
import time
from functools import partial
from pathlib import Path

from benchkit import BENCHMARKS_MD, docs
from benchkit.env import environment
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from api.bootstrap import initialise, open_ledger
from api.settings import Settings
from ledger.memory.constitution import CONSTITUTION
from ledger.service import Actor
from memory_bench.breakdown import breakdown, profile_recall, trace_catch_up
from memory_bench.common import (
    AGENT,
    DEFAULT_SIZES,
    FILL_BATCH,
    N_QUERIES,
    PROFILE_RUNS,
    QUICK_SIZES,
    SECTION,
    TYPE_POSITION_INDEX,
    BenchClock,
    SessionAppender,
    console,
    fts_rows,
    has_index,
)
from memory_bench.corpus import Corpus, fill
from memory_bench.curate import run_curate
from memory_bench.measure import hit_counts, measure
from memory_bench.render import Run, SizeResult, render
from memory_bench.vectors import SAMPLE, fill_vectors


def advance(bar: Progress, task: TaskID, n: int) -> None:
    bar.advance(task, n)


def main(argv: list[str] | None = None, description: str | None = None) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="2,000 and 10,000 blocks; print, write nothing")
    parser.add_argument("--sizes", type=int, nargs="+", help="block counts to measure at")
    parser.add_argument("--passes", type=int, default=2, help=f"passes over the {N_QUERIES} queries per size")
    parser.add_argument("--output", type=Path, default=None, help="default docs/BENCHMARKS.md (stdout with --quick)")
    args = parser.parse_args(argv)
    sizes = sorted(set(args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)))
    if sizes[0] <= len(CONSTITUTION):
        parser.error(f"sizes must be above the {len(CONSTITUTION)} constitutional blocks")
    output = args.output or (None if args.quick else BENCHMARKS_MD)

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
            if ledger.index.semantic is not None:
                # The embedding table filled with stand-in vectors (memory_bench/vectors.py says why), then the
                # process loads the int8 matrix. Searches below pay the probe, the query's embedding and the cosine.
                fill_vec_s, per_block_ms = fill_vectors(ledger, [corpus.block()[0] for _ in range(SAMPLE)])
                t0 = time.perf_counter()
                ledger.index.semantic.sync()
                console.log(
                    f"  embedding table filled (stand-in vectors) in {fill_vec_s:.1f} s, matrix loaded in "
                    f"{time.perf_counter() - t0:.1f} s; the real model: {per_block_ms:.1f} ms per block "
                    f"(a real catch-up of {blocks:,} blocks: {per_block_ms * blocks / 60000:.0f} min)"
                )
            console.log(f"  search is {ledger.index.retrieval}")
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
        docs.write_section(output, SECTION, section)
        console.log(f"wrote the memory section of {output} (run took {run.elapsed_s:.0f} s)")
    return 0
