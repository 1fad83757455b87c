"""``compliance-ledger init``: the schema, the keys and the constitutional memory, all safe to run again."""

from __future__ import annotations

from typing import Annotated

import typer

from api.cli.context import fail, operator, settings_of
from api.cli.output import out
from ledger.core.errors import LedgerError


def init(
    ctx: typer.Context,
    no_seed: Annotated[bool, typer.Option("--no-seed", help="skip the 10 constitutional memory blocks")] = False,
    self_text: Annotated[str | None, typer.Option("--self", help="add a self/context block: who the agent is")] = None,
) -> None:
    """Create the schema and receipt key, and seed the constitutional memory (all safe to run again)."""
    from api.bootstrap import initialise, redact

    settings = settings_of(ctx)
    try:
        ledger, report = initialise(settings)
    except LedgerError as exc:
        raise fail(exc) from exc
    try:
        setup = ledger.setup_memory(operator(), identity=self_text, seed=not no_seed)
    except LedgerError as exc:
        raise fail(exc) from exc
    finally:
        ledger.store.dispose()
    out.print(
        f"database   {redact(report.database_url)} "
        f"({'initialised' if report.ledger_created else 'already initialised'})"
    )
    out.print(
        f"receipt key {report.key_path} ({'created' if report.key_created else 'kept'}) — "
        "back it up: without it no receipt can be verified"
    )
    out.print(
        f"signing key {report.signing_key_path} ({'created' if report.signing_key_created else 'kept'}) — "
        "Ed25519: signs checkpoints and receipts; publish its public half (`compliance-ledger keys public`)"
    )
    out.print(
        f"memory     {len(setup.created)} block(s) created, {len(setup.already_present)} already present; "
        f"{setup.constitutional_blocks} constitutional"
    )


def register(app: typer.Typer) -> None:
    """Add ``init`` to the root command."""
    app.command()(init)
