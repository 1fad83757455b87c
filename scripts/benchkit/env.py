"""What a report says about where it was measured: machine, Python, SQLite, packages, commit and load."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sqlite3
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from benchkit import ROOT


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
    """The facts every report's Environment list starts from, taken at the start of a run."""
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
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "ledger", "projections", "api"],
            cwd=ROOT,
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


BM25_ONLY = {"LEDGER_SEMANTIC": "false"}
"""Environment for a ledger process that searches by BM25 alone, with the ``[semantic]`` extra installed or not.
The targets of issue 11 (serve memory, cold start, serve under load) were set for full-text search; with hybrid
search on, a process also holds the embedding model and onnxruntime (~190 MB) and embeds each query (4–12 ms):
measured on their own in the "Hybrid search" section (scripts/bench_memory.py), not mixed into these."""
