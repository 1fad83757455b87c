"""How ``--help`` reads: a flag shows no ``<bool>`` type, a docstring's paragraph is one paragraph (not lines cut
where the source wrapped), and a bound that only guards the database (2**63 - 1) is not printed as a range."""

from __future__ import annotations

import inspect
from typing import Any

import typer.core

from ledger.core.limits import MAX_INT64


def _flags_take_no_value() -> None:
    """typer's rich help prints a ``<bool>`` type after every flag (its plain help does not): a flag takes no
    value, so it shows none. Every option class typer builds, ``--help`` included, gets this, once."""
    option = typer.core.TyperOption
    shown = option.display_type_rich
    if getattr(shown, "flags_take_no_value", False):
        return

    def display_type_rich(self: typer.core.TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display_type_rich.flags_take_no_value = True  # type: ignore[attr-defined]
    setattr(option, "display_type_rich", display_type_rich)  # noqa: B010 (mypy refuses assigning a method)


def _paragraphs(text: str) -> str:
    """A docstring's paragraphs with each one's lines joined: typer's rich help keeps the source's line breaks
    (a paragraph wrapped at 120 columns in the source would break mid-sentence on an 80-column terminal). A
    paragraph starting with ``\\b`` keeps its lines, as in click."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split("\n")) for p in paragraphs)


def tidy(command: Any) -> None:
    """Apply the above to ``command`` and every command under it (the root command calls this once)."""
    _flags_take_no_value()
    if command.help:
        command.help = _paragraphs(command.help)
    for param in command.params:
        if getattr(param, "max", None) == MAX_INT64:
            param.max = None  # still enforced (typer checks the annotation's bounds); just not printed
    for sub in getattr(command, "commands", {}).values():
        tidy(sub)
