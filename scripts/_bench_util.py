"""Helpers for ``scripts/bench_ledger.py``: statistics, environment facts, timing loops, the Markdown report.

Nothing here measures the ledger by itself; it only times callables and formats what was measured.
"""

from __future__ import annotations

import datetime as _dt
import gc
import math
import os
import platform
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

# --- statistics ---------------------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0..100) of ``values``."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def spread(values: Sequence[float]) -> str:
    """``min–max`` of a list of rates, for the details section."""
    return f"{fmt_rate(min(values))}–{fmt_rate(max(values))}"


# --- formatting ---------------------------------------------------------------------------------------------


def fmt_rate(per_s: float) -> str:
    """Events (or operations) per second, rounded for reading."""
    if per_s >= 100_000:
        return f"{per_s / 1000:,.0f}k"
    if per_s >= 10_000:
        return f"{per_s / 1000:,.1f}k"
    return f"{per_s:,.0f}"


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.3f} ms" if ms < 1 else f"{ms:.2f} ms"


def fmt_us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:.1f} µs" if us < 10 else f"{us:,.0f} µs"


def fmt_ratio(ratio: float | None) -> str:
    """Three significant digits, so a ratio just under its target never prints as the target itself."""
    if ratio is None:
        return "—"
    return f"{ratio:,.0f}×" if ratio >= 100 else f"{ratio:.3g}×"


# --- timing -------------------------------------------------------------------------------------------------


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
    """Rates (units/s) per round for each op; the ops take turns within each round in a rotating order.

    Rotating and interleaving means a slow patch of the disk or the machine hits every contender alike.
    """
    names = list(ops)
    for name in names:
        for _ in range(warmup):
            ops[name]()
    rates: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            elapsed = time_loop(ops[name], per_round)
            rates[name].append(per_round * units_per_op / elapsed)
        if on_round:
            on_round(r + 1)
    return rates


# --- environment --------------------------------------------------------------------------------------------


def pkg_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def filesystem_of(path: Path) -> str:
    """``device (fstype)`` of the mount holding ``path`` (Linux), else ``unknown``."""
    try:
        best = ("", "unknown", "unknown")
        target = str(path.resolve())
        for line in Path("/proc/mounts").read_text().splitlines():
            dev, mnt, fstype, *_ = line.split()
            if (target == mnt or target.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
                best = (mnt, dev, fstype)
        return f"{best[1]} ({best[2]})"
    except OSError:
        return "unknown"


def environment(temp_dir: Path) -> dict[str, str]:
    return {
        "date (UTC)": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "python": f"{platform.python_version()} ({platform.python_implementation()})",
        "sqlite (library)": sqlite3.sqlite_version,
        "machine": f"{os.cpu_count()} cores, {cpu_model()}, {platform.system()} {platform.release()}",
        "temp files on": filesystem_of(temp_dir),
        "packages": ", ".join(
            f"{p} {pkg_version(p)}" for p in ("sqlalchemy", "pydantic", "psycopg", "mcp", "eventsourcing")
        ),
        "code measured": git_revision(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "load average (1/5/15 min) at start": load_average(),
    }


def git_revision() -> str:
    """The commit of the code under test, and whether ledger/, projections/ or api/ had local changes."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "ledger", "projections", "api"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"commit {head}" + (" plus uncommitted changes in ledger/, projections/ or api/" if dirty else "")


def load_average() -> str:
    """The machine's load average, to show whether other work competed with the benchmark."""
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


# --- the report ---------------------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the results table. ``met`` is None when the row has no target or was not measured."""

    name: str
    ours: str
    baseline: str
    ratio: float | None = None
    target: str = "—"
    target_ratio: float | None = None
    why: str = ""
    measured: bool = True
    lower_is_better: bool = False  # True for latency ratios: met when ratio <= target_ratio

    @property
    def met(self) -> bool | None:
        if not self.measured or self.target_ratio is None or self.ratio is None:
            return None
        return self.ratio <= self.target_ratio if self.lower_is_better else self.ratio >= self.target_ratio

    def met_text(self) -> str:
        if not self.measured:
            return "not measured"
        return {True: "yes", False: "**no**", None: "n/a"}[self.met]


@dataclass
class Report:
    env: dict[str, str]
    rows: list[Row] = field(default_factory=list)
    details: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def render(self, quick: bool, elapsed_s: float) -> str:
        out = ["# Compliance Ledger — benchmarks", ""]
        out.append(
            "Generated by `scripts/bench_ledger.py` in one run on the machine described below; every "
            "number in this file was measured by that run and every ratio is against a baseline measured "
            "in the same run. Re-run `.venv/bin/python scripts/bench_ledger.py` to regenerate it (do not "
            "edit by hand)."
        )
        if quick:
            out += [
                "",
                "> **Smoke run (`--quick`)**: sizes are far too small for the numbers to mean anything.",
            ]
        out += ["", "## Environment", ""]
        out += [f"* **{k}**: {v}" for k, v in self.env.items()]
        out.append(f"* **load average (1/5/15 min) at end**: {load_average()}")
        out.append(f"* **whole run took**: {elapsed_s:.0f} s")
        out += ["", "## Results", ""]
        out.append("| Measurement | Ours | Baseline | Ratio | Target | Met | Why (where missed) |")
        out.append("|---|---|---|---|---|---|---|")

        def cell(text: str) -> str:
            return " ".join(text.split()).replace("|", "\\|")

        for r in self.rows:
            out.append(
                f"| {cell(r.name)} | {cell(r.ours)} | {cell(r.baseline)} | {fmt_ratio(r.ratio)} | "
                f"{cell(r.target)} | {r.met_text()} | {cell(r.why or '—')} |"
            )
        out += [
            "",
            "Ratio: for throughput rows, our events/s ÷ the baseline's (higher is better); for the MCP "
            "latency row, our median ÷ the no-op's median (lower is better). The PostgreSQL rows have no "
            "target; their raw-psycopg baseline is there for context.",
        ]
        if self.errors:
            out += ["", "## Errors during this run", ""]
            out += [f"* {e}" for e in self.errors]
        for title, body in self.details:
            out += ["", f"## {title}", "", body.rstrip()]
        return "\n".join(out) + "\n"


# --- a section of docs/BENCHMARKS.md owned by one script ------------------------------------------------------


def write_section(path: Path, marker: str, text: str) -> None:
    """Replace the section that starts with ``marker`` (a ``## `` heading) by ``text``, or append it; every other
    section of the file is kept as it is."""
    previous = path.read_text(encoding="utf-8") if path.exists() else ""
    if marker in previous:
        start = previous.index(marker)
        rest = previous[start + len(marker) :]
        nxt = rest.find("\n## ")
        previous = previous[:start] + (rest[nxt:] if nxt >= 0 else "")
    path.write_text(previous.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n", encoding="utf-8")


def free_port() -> int:
    """A free TCP port on loopback, for a server a benchmark starts."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: Any, patience_s: float = 300) -> None:
    """Wait until ``url`` answers (readiness on a loaded machine, not a measurement); fail if ``proc`` exits."""
    import httpx

    deadline = time.monotonic() + patience_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server at {url} exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=10)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"the server at {url} did not answer")
