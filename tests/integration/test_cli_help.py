"""Every ``--help`` of the command line, at 80 columns: each option and argument says what it is for, a flag
shows no ``<bool>`` type, no line is wider than the terminal and no paragraph breaks where its source wrapped."""

from __future__ import annotations

from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from api.cli import app


def commands() -> list[tuple[list[str], Any]]:
    """Every command and group, root first, as (its path, its click command)."""
    found: list[tuple[list[str], Any]] = []

    def walk(command: Any, path: list[str]) -> None:
        found.append((path, command))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


COMMANDS = commands()


def help_at_80(path: list[str]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=80, env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) or "(root)" for p, _ in COMMANDS])
def test_each_help_fits_80_columns_describes_every_parameter_and_shows_flags_as_flags(
    path: list[str], command: Any
) -> None:
    text = help_at_80(path)
    wide = [line for line in text.splitlines() if len(line) > 80]
    undescribed = [p.opts or [p.name] for p in command.params if not (p.help or "").strip()]
    assert "<bool>" not in text
    assert not wide, wide
    assert not undescribed, f"{' '.join(path) or 'the root command'}: no help for {undescribed}"
    assert "Show this message and exit." in text


def test_the_commands_panel_joins_a_docstring_paragraph_wrapped_in_the_source() -> None:
    # `keys add`'s docstring wraps after "only its hash is": one sentence on screen, not a line cut short.
    text = help_at_80(["keys"])
    assert "Printed once; only its hash is stored." in " ".join(text.replace("│", " ").split())
    assert not any(line.rstrip(" │").endswith("only its hash is") for line in text.splitlines())


def test_a_position_shows_its_floor_and_not_the_databases_integer_bound() -> None:
    text = help_at_80(["events"])
    assert "[x>=0]" in text and "9223372036854775807" not in text
    refused = CliRunner().invoke(app, ["events", "--after", str(2**63)])
    assert refused.exit_code == 2  # the bound is still enforced
