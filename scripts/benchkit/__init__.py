"""The harness every ``scripts/bench_*.py`` stands on: environment capture, interleaved rounds, statistics and
formatting, Markdown tables, the docs/BENCHMARKS.md section writer, and loopback servers.

Importing it puts the repository root first on ``sys.path``, so a benchmark run from a checkout measures that
checkout's code and not another installed copy of it.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS_MD = ROOT / "docs" / "BENCHMARKS.md"

sys.path.insert(0, str(ROOT))
