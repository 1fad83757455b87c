"""scripts/bench_limits.py's profile summaries, on text of the formats py-spy and ``python -X importtime`` write: the
stacks parsed, idle waits dropped, own and inclusive shares, stages, and imports summed per top-level package."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from benchkit import ROOT, docs
from limits_bench.profiles import import_packages, importtime_summary, parse_raw, stage_of, summarise_stacks

SITE = "/venv/lib/python3.11/site-packages"
STDLIB = "/usr/lib/python3.11"
MAIN = f"<module> ({ROOT}/api/__main__.py:3)"
ROUTE = f"{MAIN};run ({SITE}/starlette/routing.py:10)"
SEARCH = f"{ROUTE};search ({ROOT}/ledger/sessions/handlers.py:90)"
APPEND = f"{SEARCH};append ({ROOT}/ledger/core/storage/group_commit.py:140)"
RAW = "\n".join(
    [
        f"{MAIN};serve ({SITE}/uvicorn/server.py:60);select ({STDLIB}/selectors.py:468) 50",
        f"{APPEND};write_transaction ({ROOT}/ledger/core/storage/connection.py:80) 30",
        f"{APPEND};_insert ({ROOT}/ledger/core/storage/group_commit.py:350) 10",
        f"{ROUTE};dumps ({STDLIB}/json/__init__.py:231) 6",
        f"{ROUTE} 4",
        f"_bootstrap ({STDLIB}/threading.py:995);_worker ({STDLIB}/concurrent/futures/thread.py:81);"
        f"get ({STDLIB}/queue.py:171);wait ({STDLIB}/threading.py:324) 40",
    ]
)


def test_py_spy_raw_stacks_are_parsed_root_first_with_files_shortened() -> None:
    stacks = parse_raw(RAW)
    assert len(stacks) == 6
    stack, count = stacks[1]
    assert count == 30
    assert stack[0] == ("<module>", "api/__main__.py")
    assert stack[1] == ("run", "starlette/routing.py")
    assert stack[-1] == ("write_transaction", "ledger/core/storage/connection.py")
    assert stacks[0][0][-1] == ("select", "stdlib/selectors.py")


def test_stages_go_by_the_innermost_work_then_by_what_it_was_for() -> None:
    stages = [stage_of(stack) for stack, _ in parse_raw(RAW)]
    assert stages[1] == "BEGIN/COMMIT (SQLite, fsync)"
    assert stages[2] == "append (the rest: queue, encode, chain, inserts)"
    assert stages[3] == "JSON/pydantic"
    assert stages[4] == "HTTP/ASGI stack"
    assert stage_of([("fold", "projections/sessions.py")]) == "projections fold"
    assert stage_of([("_rank_sqlite", "projections/search/ranking.py")]) == "search"
    assert stage_of([("_find_and_load", "<frozen importlib._bootstrap>"), ("f", "ledger/x.py")]) == "imports"


def test_idle_waits_are_dropped_and_the_shares_are_of_the_rest() -> None:
    summary = summarise_stacks(parse_raw(RAW), "py-spy", "a test")
    assert summary.total == 50  # 30 + 10 + 6 + 4; the select (50) and the queue wait (40) dropped
    own = dict(summary.own)
    assert own["ledger/core/storage/connection.py:write_transaction"] == 30 / 50
    assert own["starlette/routing.py:run"] == 4 / 50
    inclusive = dict(summary.inclusive)
    assert inclusive["ledger/core/storage/group_commit.py:append"] == 40 / 50
    assert "api/__main__.py:<module>" not in inclusive  # the entry frame, under every sample of the main thread
    assert dict(summary.stages)["HTTP/ASGI stack"] == 4 / 50
    assert summary.notes[0].startswith("140 samples of running threads")
    assert "of them 64% had an idle wait innermost" in summary.notes[0]


IMPORTTIME = """\
import time: self [us] | cumulative | imported package
import time:       120 |        120 |   _io
import time:      3000 |       5000 | sqlalchemy.engine
import time:      2000 |       2000 |   sqlalchemy
import time:      1000 |       1000 | ledger.core
not an import line
"""


def test_importtime_is_summed_per_top_level_package_and_compared_with_a_baseline() -> None:
    assert import_packages(IMPORTTIME) == {"_io": 120, "sqlalchemy": 5000, "ledger": 1000}
    summary = importtime_summary(IMPORTTIME, "ours", baseline="import time:      2500 |  2500 | sqlalchemy\n")
    assert summary.total == 6.12  # ms
    assert summary.own[0] == ("sqlalchemy 5 ms", 5000 / 6120)
    assert "sqlalchemy +2 ms" in summary.notes[-1] and "ledger +1 ms" in summary.notes[-1]


def test_the_limits_section_is_kept_when_bench_ledger_rewrites_the_head(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(docs.TITLE + "\n\nold head\n\n" + docs.LIMITS + "\nlimits v1\n", encoding="utf-8")
    docs.write_head(path, docs.TITLE + "\n\nnew head\n")
    assert path.read_text(encoding="utf-8") == docs.TITLE + "\n\nnew head\n\n" + docs.LIMITS + "\nlimits v1\n"
