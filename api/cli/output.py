"""What the command line prints with: rich consoles made on first use, JSON lines, progress bars, the table
style every listing uses (fits the terminal, never cuts a value), the compliance table that ``replay`` and
``report compliance`` share, and the stop hooks' table."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads only when something is printed: ``--help`` and ``--version`` stay fast
    from rich.console import Console
    from rich.table import Column, Table


# Piped output has no width to fit: a record (a line of a listing, a hash, a receipt, the serve banner) stays on one
# line however long, so a script or a copy gets it whole. Rich would otherwise fold everything at 80 columns.
UNFOLDED = 1_000_000


class _Console:
    """A rich console made on first use, so commands that print nothing fancy (and ``--help``) never load rich's
    renderers; stdout is looked up when it prints (test runners swap it). On a terminal it fits the terminal's
    width; with ``COLUMNS`` set, that width; piped or redirected otherwise, it folds nothing."""

    def __init__(self, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            console = Console(stderr=self._stderr)
            if not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
                console = Console(stderr=self._stderr, width=UNFOLDED, soft_wrap=True)
            self._console = console
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)


out = _Console()
err = _Console(stderr=True)


def print_json(value: Any) -> None:
    """One JSON line on stdout."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")


@contextmanager
def progress(label: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on stderr (silent when stderr is not a terminal)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err.real(),
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.update(task, completed=n)


def table(*columns: str | Column, title: str | None = None, header: bool = True) -> Table:
    """A listing that fits the terminal (80 columns too) without cutting a value: a rule under the header and no
    side borders, and a column named by a string folds a long value onto more lines instead of ending it in
    "…" (an id that is cut cannot be copied). Pass a ``Column`` for anything else (``no_wrap`` for short ids)."""
    from rich import box
    from rich.table import Column, Table

    cols = [Column(c, overflow="fold") if isinstance(c, str) else c for c in columns]
    return Table(*cols, title=title, show_header=header, box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1, 0, 0))


def print_compliance(rows: list[Any]) -> None:
    """Per-agent searches, stamp requests, passes, fails and pass rate as a table."""
    from rich.table import Column

    numbers = [Column(name, justify="right") for name in ("searches", "stamp requests", "passes", "fails", "pass rate")]
    listing = table("agent", *numbers)
    for a in rows:
        rate = "—" if a.pass_rate is None else f"{a.pass_rate:.0%}"
        listing.add_row(a.agent, str(a.searches), str(a.stamp_requests), str(a.passes), str(a.fails), rate)
    out.print(listing)


def print_stop_hooks(rows: list[Any]) -> None:
    """Per-agent turns and Stop hook answers (``compliance-ledger hook``), when any agent has some."""
    from rich.table import Column

    hooked = [a for a in rows if any(a.stop_hook.model_dump().values())]
    if not hooked:
        return
    numbers = [Column(n, justify="right") for n in ("turns", "stops blocked", "stops allowed", "loop-guard passes")]
    listing = table("agent", *numbers, title="stop hooks")
    for a in hooked:
        h = a.stop_hook
        listing.add_row(
            a.agent, str(h.turns_started), str(h.stops_blocked), str(h.stops_allowed), str(h.loop_guard_passes)
        )
    out.print(listing)
