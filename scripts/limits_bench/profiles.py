"""Where the time goes, for a row of scripts/bench_limits.py that misses its target: a sampling profile (py-spy) of
threads or of another process, an in-process cProfile, or ``python -X importtime``, each cut down to the same
summary: the functions with the most own time, our functions with the most inclusive time, and the share of a few
named stages.

A sample (py-spy) or a function's own time (cProfile) counts for the first stage that fits, in this order. By the
innermost frame (the work itself): JSON/pydantic; SQLite's BEGIN/COMMIT (C under ``write_transaction``: the lock,
the write-out, the fsync); the HTTP/ASGI stack. Then by any frame of the stack (what the work was for): imports, the
rest of an append, store read, search, projections fold, handler (our other code in ``api/``, ``ledger/``,
``projections/``), SQLAlchemy, other. A cProfile entry (one function, no stack) gets the stack of its callers: its
own time split by caller, each caller followed up its own heaviest caller.

Idle waits are left out of py-spy's samples: with ``--nonblocking`` it samples only the threads the OS shows
running or runnable (not one parked on a lock, a condition, the GIL or a selector; a process py-spy stops to sample
would show every thread running), and a sample whose innermost frame is still such a wait (``Condition.wait``,
``select``, a queue's ``get``, a join, a sleep) is dropped too.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchkit import ROOT

PY_SPY = Path(sys.executable).with_name("py-spy")
"""py-spy beside this interpreter (the ``[dev]`` extra installs it), else whatever ``py-spy`` is on PATH."""

Frame = tuple[str, str]
"""(function, file shortened to ``package/module.py``, our ``api/…`` or ``stdlib/…``)."""

_FRAME = re.compile(r"^(.*) \((.*?)(?::(\d+))?\)$")
JSON_FILES = ("pydantic/", "pydantic_core/", "stdlib/json/", "fastapi/encoders.py", "fastapi/_compat", "orjson")
OURS_JSON = ("ledger/core/mapper.py", "ledger/core/canonical.py")
HTTP_FILES = ("uvicorn/", "starlette/", "fastapi/", "anyio/", "h11/", "httptools/", "stdlib/asyncio/", "uvloop/")
APPEND_FILES = ("group_commit.py", "fair_lock.py", "tree.py")
APPEND_FUNCS = {"append", "write_transaction", "_take_write_lock", "_write", "_append_in"}
OUR_CODE = ("api/", "ledger/", "projections/")
ENTRY = ("api/__main__.py", "api/cli/")  # a process's entry frames, under every sample of its main thread
IDLE = {
    "wait",  # threading.Condition / Event / Barrier
    "select",  # selectors
    "poll",
    "get",  # queue.Queue.get of an idle worker (only when innermost in stdlib/queue.py)
    "join",
    "sleep",
    "_wait_for_tstate_lock",
    "run_forever",
    "run_until_complete",
}
STAGES = (
    "JSON/pydantic",
    "BEGIN/COMMIT (SQLite, fsync)",
    "HTTP/ASGI stack",
    "imports",
    "append (the rest: queue, encode, chain, inserts)",
    "store read",
    "search",
    "projections fold",
    "handler",
    "SQLAlchemy",
    "other",
)


def short(path: str) -> str:
    """A frame's file the way the summaries print it."""
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1]
    root = str(ROOT) + "/"
    if path.startswith(root):
        return path[len(root) :]
    if "/lib/python3" in path:
        rest = path.split("/lib/python3", 1)[1]
        return "stdlib/" + (rest.split("/", 1)[1] if "/" in rest else rest)
    return path


def _leaf_name(func: str) -> str:
    return func.rsplit(".", 1)[-1]


def stage_of(stack: Sequence[Frame]) -> str:
    """The stage a sample (root first, innermost last) counts for; see the module's docstring."""
    if not stack:
        return "other"
    func, where = stack[-1]
    if where.startswith(JSON_FILES + OURS_JSON) or "pydantic_core" in func or "_json" in func:
        return "JSON/pydantic"
    # SQLite's BEGIN IMMEDIATE and COMMIT run in C under write_transaction: its own time (py-spy sees no C
    # frames) or a C call straight under it (cProfile)
    in_commit = _leaf_name(func) == "write_transaction" and where.startswith("ledger/core/storage/")
    if in_commit or (not where and len(stack) > 1 and _leaf_name(stack[-2][0]) == "write_transaction"):
        return "BEGIN/COMMIT (SQLite, fsync)"
    if where.startswith(HTTP_FILES):
        return "HTTP/ASGI stack"
    if any(_leaf_name(f) in ("_find_and_load", "_call_with_frames_removed") for f, _ in stack):
        return "imports"
    storage = [(f, w) for f, w in stack if w.startswith("ledger/core/storage/")]
    if any(w.endswith(APPEND_FILES) or _leaf_name(f) in APPEND_FUNCS for f, w in storage):
        return "append (the rest: queue, encode, chain, inserts)"
    if storage:
        return "store read"
    if any(w.startswith(("ledger/memory/", "projections/search/")) or "search" in f for f, w in stack):
        return "search"
    if any(w.startswith("projections/") for _, w in stack):
        return "projections fold"
    if any(w.startswith(OUR_CODE) for _, w in stack):
        return "handler"
    if any(w.startswith("sqlalchemy/") for _, w in stack):
        return "SQLAlchemy"
    return "other"


def is_idle(stack: Sequence[Frame]) -> bool:
    """Whether a sample is a thread waiting for work (dropped from the shares)."""
    if not stack:
        return True
    func, where = stack[-1]
    name = _leaf_name(func)
    if name == "get":
        return where.startswith("stdlib/queue.py")
    return name in IDLE and (where.startswith("stdlib/") or where.startswith(("uvicorn/", "anyio/")))


@dataclass
class Summary:
    """A profile cut down to what the report prints; shares are of ``total`` (samples or seconds)."""

    tool: str
    what: str
    total: float
    unit: str
    own: list[tuple[str, float]] = field(default_factory=list)
    inclusive: list[tuple[str, float]] = field(default_factory=list)
    stages: list[tuple[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        def shares(items: list[tuple[str, float]]) -> str:
            return ", ".join(f"`{name}` {share:.0%}" for name, share in items if share >= 0.005) or "—"

        total = f"{self.total:,.0f}" if self.total >= 100 else f"{self.total:.2f}"
        out = [f"* Profile: {self.tool} — {self.what} ({total} {self.unit})."]
        out += [f"* {note}" for note in self.notes]
        out.append(f"* Stages: {shares(self.stages)}.")
        out.append(f"* Own time, top functions: {shares(self.own)}.")
        if self.inclusive:
            out.append(f"* Inclusive time, our functions: {shares(self.inclusive)}.")
        return out


def _label(func: str, where: str) -> str:
    return f"{where}:{func}" if where else func


def summarise_stacks(stacks: Sequence[tuple[Sequence[Frame], int]], tool: str, what: str, top: int = 10) -> Summary:
    """Own time (innermost frame), inclusive time (our functions anywhere in the stack) and stages of samples."""
    busy = [(stack, n) for stack, n in stacks if not is_idle(stack)]
    idle = sum(n for stack, n in stacks if is_idle(stack))
    total = sum(n for _, n in busy)
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    stages: Counter[str] = Counter()
    for stack, n in busy:
        own[_label(*stack[-1])] += n
        for label in {_label(f, w) for f, w in stack if w.startswith(OUR_CODE) and not w.startswith(ENTRY)}:
            inclusive[label] += n
        stages[stage_of(stack)] += n
    whole = max(1, total)
    summary = Summary(
        tool,
        what,
        total,
        "samples",
        [(k, v / whole) for k, v in own.most_common(top)],
        [(k, v / whole) for k, v in inclusive.most_common(top)],
        [(k, stages[k] / whole) for k in STAGES if stages[k]],
    )
    all_samples = total + idle
    summary.notes.append(
        f"{all_samples:,} samples of running threads (all threads; py-spy leaves out those the OS shows waiting); "
        f"of them {idle / max(1, all_samples):.0%} had an idle wait innermost (Condition/Event wait, select, queue "
        "get, join, sleep) and are dropped; the shares are of the rest"
    )
    return summary


def parse_raw(text: str) -> list[tuple[list[Frame], int]]:
    """py-spy's ``-f raw`` output (``frame;frame;… count``, root first) as stacks of (function, short file)."""
    out: list[tuple[list[Frame], int]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        frames_text, _, count = line.rpartition(" ")
        stack: list[Frame] = []
        for frame in frames_text.split(";") if frames_text else []:
            m = _FRAME.match(frame.strip())
            stack.append((m.group(1), short(m.group(2))) if m else (frame.strip(), ""))
        out.append((stack, int(count)))
    return out


@contextmanager
def py_spy(pid: int, rate: int = 250) -> Iterator[list[str]]:
    """Sample process ``pid`` (all its running threads) with py-spy while the ``with`` body runs; the yielded list
    holds py-spy's raw output afterwards (empty with a note in ``[1:]`` when py-spy failed)."""
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ledger-pyspy-") as tmp:
        path = Path(tmp) / "raw.txt"
        command = [str(PY_SPY if PY_SPY.exists() else "py-spy"), "record", "-p", str(pid), "-f", "raw"]
        command += ["-o", str(path), "-r", str(rate), "--full-filenames", "--nonblocking"]
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)  # py-spy attaching; what it misses of the start is only fewer samples, not wrong ones
        try:
            yield out
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            if path.exists():
                out.append(path.read_text())
            else:
                out += ["", f"py-spy wrote nothing (exit {proc.returncode}): {err.strip()[-300:]}"]


def py_spy_summary(raw: list[str], what: str) -> Summary:
    if not raw or not raw[0]:
        return Summary("py-spy", what, 0, "samples", notes=[raw[1] if len(raw) > 1 else "py-spy gave no samples"])
    return summarise_stacks(parse_raw(raw[0]), "py-spy record --nonblocking (sampling, 250 Hz)", what)


def cprofile_summary(fn: Callable[[], object], what: str, top: int = 10) -> Summary:
    """Run ``fn`` under cProfile in this process; own time per function and the stage of each function's file."""
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    return pstats_summary(pstats.Stats(prof), what, top)


def _frame(key: tuple[str, int, str]) -> Frame:
    filename, _line, func = key
    return (func, short(filename) if filename != "~" else "")


def pstats_summary(stats: pstats.Stats, what: str, top: int = 10) -> Summary:
    raw = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in raw.values()) or 1e-9
    walked: dict[Any, list[Frame]] = {}

    def callers_stack(key: Any) -> list[Frame]:
        """``key`` and its heaviest caller, that one's, and so on up (root first)."""
        if key not in walked:
            path, seen = [key], {key}
            for _ in range(60):
                callers = raw.get(path[-1], (0, 0, 0, 0, {}))[4]
                if not callers:
                    break
                up = max(callers, key=lambda c: callers[c][3])
                if up in seen:
                    break
                path.append(up)
                seen.add(up)
            walked[key] = [_frame(k) for k in reversed(path)]
        return walked[key]

    own: Counter[str] = Counter()
    stages: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for key, v in raw.items():
        frame = _frame(key)
        own[_label(*frame)] += v[2]
        callers = v[4]
        if callers:
            for caller, cv in callers.items():
                stages[stage_of([*callers_stack(caller), frame])] += cv[2]
        else:
            stages[stage_of([frame])] += v[2]
        if frame[1].startswith(OUR_CODE):
            inclusive[_label(*frame)] += v[3]
    whole = sum(stages.values()) or 1e-9
    return Summary(
        "cProfile (deterministic; it slows Python calls, so the shares matter, not the total)",
        what,
        total,
        "s of own time profiled",
        [(k, v / total) for k, v in own.most_common(top)],
        [(k, min(1.0, v / total)) for k, v in inclusive.most_common(top)],
        [(k, stages[k] / whole) for k in STAGES if stages[k]],
        ["stages: each function's own time split by its callers, each followed up its heaviest callers"],
    )


def import_packages(stderr: str) -> Counter[str]:
    """``python -X importtime`` output as own (self) microseconds summed per top-level package."""
    per_package: Counter[str] = Counter()
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        parts = line.split("|")
        try:
            own_us = int(parts[0].split(":")[1])
        except (IndexError, ValueError):
            continue
        per_package[parts[2].strip().split(".")[0]] += own_us
    return per_package


def importtime_summary(stderr: str, what: str, top: int = 10, baseline: str | None = None) -> Summary:
    """Imports by top-level package; with ``baseline`` (another process's ``-X importtime`` output), also the
    packages this one imports beyond it."""
    per_package = import_packages(stderr)
    total = sum(per_package.values())
    whole = max(1, total)
    summary = Summary(
        "python -X importtime",
        what,
        total / 1000,
        "ms of imports, self time summed",
        [(f"{k} {v / 1000:.0f} ms", v / whole) for k, v in per_package.most_common(top)],
    )
    ours = sum(v for k, v in per_package.items() if k in ("api", "ledger", "projections"))
    summary.stages = [
        ("our packages (api, ledger, projections)", ours / whole),
        ("third-party and stdlib", 1 - ours / whole),
    ]
    summary.notes.append(f"{len(per_package)} top-level packages imported")
    if baseline is not None:
        base = import_packages(baseline)
        extra = Counter({k: v - base.get(k, 0) for k, v in per_package.items() if v - base.get(k, 0) > 0})
        summary.notes.append(
            f"the baseline imported {sum(base.values()) / 1000:,.0f} ms (self time summed, "
            f"{len(base)} packages); imported here beyond it, by package: "
            + ", ".join(f"{k} +{v / 1000:.0f} ms" for k, v in extra.most_common(top))
        )
    return summary


def cprofile_process(argv: list[str], env: dict[str, str], what: str) -> Summary:
    """Run ``python -m cProfile -o … *argv`` (a script and its arguments, or ``-m module …``) in a fresh process;
    summarise its profile."""
    with tempfile.TemporaryDirectory(prefix="ledger-cprofile-") as tmp:
        out = Path(tmp) / "profile.out"
        subprocess.run(
            [sys.executable, "-m", "cProfile", "-o", str(out), *argv], env=env, check=True, capture_output=True
        )
        return pstats_summary(pstats.Stats(str(out)), what)


def cprofile_child(script: str, args: list[str], env: dict[str, str], what: str) -> Summary:
    """Run ``script`` (Python source) under cProfile in a fresh process; summarise its profile."""
    with tempfile.TemporaryDirectory(prefix="ledger-child-") as tmp:
        src = Path(tmp) / "child.py"
        src.write_text(script)
        return cprofile_process([str(src), *args], env, what)


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without ``PYTHONDONTWRITEBYTECODE`` (a process started with it compiles every
    module it imports, each time), with this checkout first on ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **(extra or {})}
