"""Markdown pieces of a report: pipe tables, escaped cells and the Environment bullet list."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from benchkit.env import load_average


def row(cells: Iterable[object]) -> str:
    """One table line: ``| a | b |``."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """A pipe table's lines: the header, the ``|---|`` rule and one line per row (cells written as given)."""
    return [row(header), "|" + "---|" * len(header), *(row(r) for r in rows)]


def cell(text: str) -> str:
    """Text made safe for one table cell: whitespace runs folded to one space, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def bullets(facts: Mapping[str, str]) -> list[str]:
    """``* **name**: value`` per fact, in order."""
    return [f"* **{k}**: {v}" for k, v in facts.items()]


def run_footer(elapsed_s: float) -> list[str]:
    """The last two Environment bullets: the load average now and how long the run took."""
    return [f"* **load average (1/5/15 min) at end**: {load_average()}", f"* **whole run took**: {elapsed_s:.0f} s"]
