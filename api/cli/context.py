"""What every command shares: the settings the root options made, the operator, the ledger opened for one
command, time arguments, and how a ledger error becomes an exit code."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.output import err
from ledger.core.errors import InvalidInput, LedgerError, StoreBusy

if TYPE_CHECKING:  # the ledger loads only when a command needs it: ``--help`` and ``--version`` stay fast
    from api.settings import Settings
    from ledger.service import Actor, Ledger

# --json on every command that prints a report: the same data as the text, for scripts.
AsJson = Annotated[bool, typer.Option("--json", help="print JSON (the whole answer) instead of text")]

# The person at the console: whoever can run this command can read the database and key anyway.
OPERATOR_NAME = "operator"


def operator() -> Actor:
    """The person at the console, as an admin actor."""
    from ledger.service import Actor

    return Actor(OPERATOR_NAME, "cli", admin=True)


def settings_problem(exc: Exception) -> InvalidInput:
    """What is wrong with the settings (``LEDGER_*`` variables and root options), said as invalid input."""
    errors = getattr(exc, "errors", None)
    first = errors()[0] if callable(errors) and errors() else None
    if first is None:
        return InvalidInput(f"the settings are not valid: {exc}", "fix the LEDGER_* environment variables")
    name = ".".join(str(part) for part in first.get("loc", ())) or "settings"
    return InvalidInput(
        f"the setting {name} is not valid: {first.get('msg', 'invalid value')}",
        f"fix LEDGER_{name.upper()} in the environment (or the option that sets it)",
    )


def settings_or_error(ctx: typer.Context) -> Settings:
    """The settings the root options made for this invocation; raises :class:`InvalidInput` when they are not
    valid (a bad ``LEDGER_*`` variable)."""
    from api.settings import Settings

    settings = ctx.obj
    if isinstance(settings, InvalidInput):
        raise settings
    assert isinstance(settings, Settings)
    return settings


def settings_of(ctx: typer.Context) -> Settings:
    """The settings the root options made for this invocation; invalid ones end the command (exit 2) with what
    to fix."""
    try:
        return settings_or_error(ctx)
    except InvalidInput as exc:
        raise fail(exc) from exc


EXIT_BUSY = 75  # EX_TEMPFAIL: the write lock was held past LEDGER_LOCK_TIMEOUT_SECONDS; nothing was recorded


def fail(exc: LedgerError, code: int = 1) -> typer.Exit:
    """Print the error and its hint on stderr; the exit to raise (2: invalid input, 75: store busy, else ``code``)."""
    err.print(f"[red]error:[/red] {exc.message}")
    if exc.hint:
        err.print(f"[dim]hint:[/dim] {exc.hint}")
    if isinstance(exc, StoreBusy):
        return typer.Exit(EXIT_BUSY)
    return typer.Exit(2 if isinstance(exc, InvalidInput) else code)


@contextmanager
def ledger_for(ctx: typer.Context) -> Iterator[Ledger]:
    """The ledger for one command, closed after it; a ledger error on the way is an exit with its message."""
    from api.bootstrap import open_ledger

    try:
        ledger = open_ledger(settings_of(ctx))
    except LedgerError as exc:
        raise fail(exc) from exc
    try:
        yield ledger
    except LedgerError as exc:
        raise fail(exc) from exc
    finally:
        ledger.snapshots.wait()  # a snapshot this command started is worth finishing: the next one starts from it
        ledger.store.dispose()


def parse_when(text: str | None) -> _dt.datetime | None:
    """An ``--as-of`` value as a time (``None`` when omitted); anything else is an invalid input."""
    from ledger.core.canonical import parse_ts

    if text is None:
        return None
    try:
        return parse_ts(text)
    except ValueError as exc:
        raise fail(
            InvalidInput(f"--as-of {text!r} is not a time", "send ISO 8601 with an offset, e.g. 2026-01-31T12:00:00Z")
        ) from exc
