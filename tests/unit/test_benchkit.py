"""The benchmark harness's pure parts: the BENCHMARKS.md section writer keeps every other section in its place,
and the percentile is nearest-rank."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from benchkit import docs, stats

DOC = """# Compliance Ledger — benchmarks

top

## Odyssean Anchor validation
anchor v1

## Serve under concurrent clients (scripts/bench_serve.py)
serve v1

## Start-up (scripts/bench_startup.py)
startup v1
"""


def test_a_section_is_replaced_where_it_stands(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(DOC, encoding="utf-8")
    docs.write_section(path, docs.SERVE, docs.SERVE + "\nserve v2\nmore\n")
    assert path.read_text(encoding="utf-8") == DOC.replace("serve v1\n", "serve v2\nmore\n")


def test_a_new_section_goes_at_the_end_and_a_heading_inside_a_line_is_not_a_heading(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(DOC + "see ## Concurrent writers (scripts/bench_writers.py) below\n", encoding="utf-8")
    docs.write_section(path, docs.WRITERS, docs.WRITERS + "\nwriters v1")
    text = path.read_text(encoding="utf-8")
    assert text.endswith("below\n\n" + docs.WRITERS + "\nwriters v1\n")
    assert text.count(docs.WRITERS) == 2


def test_the_head_is_replaced_up_to_the_first_owned_section(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(DOC, encoding="utf-8")
    docs.write_head(path, "# Compliance Ledger — benchmarks\n\nnew top\n")
    assert path.read_text(encoding="utf-8") == DOC.replace("top\n", "new top\n", 1).replace(
        "# Compliance Ledger — benchmarks\n\nnew", "# Compliance Ledger — benchmarks\n\nnew"
    )


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert stats.percentile(values, 50) == 50.0
    assert stats.percentile(values, 99) == 99.0
    assert stats.percentile([3.0, 1.0, 2.0], 100) == 3.0
    assert stats.percentile([7.0], 1) == 7.0
