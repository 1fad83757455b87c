"""The root of the ``compliance-ledger`` command: its options, the check every argument passes, and every
command group registered in the order ``--help`` lists them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import typer.core

from api.cli import (
    anchor,
    audit,
    carry,
    connect,
    decisions,
    doctor,
    helptext,
    hook,
    keys,
    memory,
    report,
    servers,
    sessions,
    setup,
    tasks,
    tlog,
)
from api.cli.context import fail, settings_problem
from ledger.core.errors import InvalidInput
from ledger.core.text import HINT as TEXT_HINT
from ledger.core.text import bad_char, find_bad_text


def argv_field(args: list[str], index: int) -> str:
    """How to name ``args[index]`` to a person: ``--opt`` for an option's value, else its position."""
    token = args[index]
    if token.startswith("--") and "=" in token:
        return token.split("=", 1)[0]
    if index > 0 and args[index - 1].startswith("-") and not token.startswith("-"):
        return args[index - 1]
    return f"argument {index + 1}"


class _CheckedGroup(typer.core.TyperGroup):
    """The root command refuses an argument or option value holding a NUL or a lone surrogate (undecodable bytes
    reach Python as lone surrogates) before any command runs: exit 2, as for any invalid input. Built with the
    whole command tree, it tidies every command's ``--help`` (``helptext``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        helptext.tidy(self)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        for i, token in enumerate(args):
            if bad_char(token) is not None:
                found = find_bad_text({argv_field(args, i): token})
                assert found is not None
                raise fail(InvalidInput(found.message("command-line value"), TEXT_HINT))
        return list(super().parse_args(ctx, args))


app = typer.Typer(
    cls=_CheckedGroup,
    name="compliance-ledger",
    help="Hash-chained audit ledger of AI coding agents' memory discipline.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _show_version(value: bool) -> None:
    if value:
        from api.version import package_version

        typer.echo(f"compliance-ledger {package_version()}")
        raise typer.Exit()


@app.callback()
def _global(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option("--db", help="database URL (default: LEDGER_DATABASE_URL or an SQLite file under --home)"),
    ] = None,
    home: Annotated[
        Path | None,
        typer.Option(help="data directory (default: LEDGER_HOME or ~/.local/share/compliance-ledger)"),
    ] = None,
    key_file: Annotated[Path | None, typer.Option(help="receipt key file (default: HOME/receipt.key)")] = None,
    signing_key_file: Annotated[
        Path | None, typer.Option(help="Ed25519 signing key file (default: HOME/signing.key)")
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="print the version and exit"),
    ] = False,
) -> None:
    overrides: dict[str, Any] = {}
    if signing_key_file:
        overrides["signing_key_file"] = signing_key_file
    if db:
        overrides["database_url"] = db
    if home:
        overrides["home"] = home
    if key_file:
        overrides["key_file"] = key_file
    from pydantic import ValidationError

    from api.settings import Settings  # pydantic-settings: not on the path of --help

    try:
        ctx.obj = Settings(**overrides)
    except ValidationError as exc:  # said by the command that needs the settings (a hook still answers)
        ctx.obj = settings_problem(exc)


# Top-level commands first, then the groups: the order --help has always shown (tests/golden/surface.json).
setup.register(app)
servers.register(app)
connect.register(app)
audit.register(app)
carry.register(app)
doctor.register(app)
keys.register(app)
decisions.register(app)
report.register(app)
anchor.register(app)
memory.register(app)
sessions.register(app)
tasks.register(app)
hook.register(app)
tlog.register(app)


def main() -> None:
    """The ``compliance-ledger`` console script."""
    app()
