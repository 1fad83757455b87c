"""Timing loops: back-to-back loops, interleaved rounds in a rotating order, per-call samples, and a profile.

Interleaving contenders round by round (and rotating who goes first) means a slow patch of the disk or the
machine hits every contender alike; every benchmark that compares against a baseline times them this way.
"""

from __future__ import annotations

import cProfile
import gc
import pstats
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

K = TypeVar("K")


def rotated(items: Sequence[K], shift: int) -> list[K]:
    """``items`` starting at ``shift`` (modulo their number) and wrapping round: the order of one round."""
    shift %= len(items)
    return [*items[shift:], *items[:shift]]


def interleave(items: Sequence[K], count: int, *, rotate: bool = True) -> Iterator[tuple[int, K]]:
    """``(round, item)`` for ``count`` rounds, every item once per round; the order turns round by round unless
    ``rotate`` is false."""
    for r in range(count):
        for item in rotated(items, r) if rotate else items:
            yield r, item


def time_loop(op: Callable[[], object], count: int) -> float:
    """Run ``op`` ``count`` times back to back and return the elapsed seconds (perf_counter)."""
    gc.collect()
    start = time.perf_counter()
    for _ in range(count):
        op()
    return time.perf_counter() - start


def interleaved_rates(
    ops: dict[str, Callable[[], object]],
    *,
    per_round: int,
    rounds: int,
    warmup: int,
    units_per_op: int = 1,
    on_round: Callable[[int], None] | None = None,
) -> dict[str, list[float]]:
    """Rates (units/s) per round for each op; the ops take turns within each round in a rotating order."""
    names = list(ops)
    for name in names:
        for _ in range(warmup):
            ops[name]()
    rates: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in rotated(names, r):
            elapsed = time_loop(ops[name], per_round)
            rates[name].append(per_round * units_per_op / elapsed)
        if on_round:
            on_round(r + 1)
    return rates


def time_each(
    ops: Mapping[str, Sequence[Callable[[], object]]], runs: int, warmup: int = 200
) -> dict[str, list[float]]:
    """Seconds per call for each named list of calls; the names take turns (rotating), cycling through their
    calls, with the garbage collector paused while timing (a collection inside one timed call would be charged
    to whichever op it hit) and run every 500 rounds."""
    names = list(ops)
    for name in names:
        for i in range(warmup):
            ops[name][i % len(ops[name])]()
    out: dict[str, list[float]] = {name: [] for name in names}
    clock = time.perf_counter
    gc.collect()
    gc.disable()
    try:
        for r in range(runs):
            for name in rotated(names, r):
                op = ops[name][r % len(ops[name])]
                start = clock()
                op()
                out[name].append(clock() - start)
            if r % 500 == 499:
                gc.collect()
    finally:
        gc.enable()
    return out


def timed_ms(fn: Callable[[], object]) -> float:
    """Milliseconds one call of ``fn`` took."""
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def samples_ms(fn: Callable[[], object], runs: int, warmup: int = 5) -> list[float]:
    """Milliseconds per call of ``fn`` over ``runs`` calls, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    return [timed_ms(fn) for _ in range(runs)]


def per_op(fn: Callable[[], object], n: int) -> float:
    """Seconds per call of a pure-Python step (no I/O), after up to 100 untimed calls."""
    for _ in range(min(n, 100)):
        fn()
    return time_loop(fn, n) / n


def profile_top(fn: Callable[[], object], k: int) -> list[tuple[str, float]]:
    """Run ``fn`` under cProfile; return the ``k`` functions with the most own time and their share of it."""
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    stats = pstats.Stats(prof)
    total = sum(v[2] for v in stats.stats.values()) or 1.0  # type: ignore[attr-defined]
    ranked = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:k]  # type: ignore[attr-defined]
    out = []
    for (filename, _line, func), v in ranked:
        where = Path(filename).name if filename != "~" else ""
        out.append((f"{where}:{func}" if where else func, v[2] / total))
    return out
