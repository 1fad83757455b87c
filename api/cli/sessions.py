"""``compliance-ledger session``: erase a session's free text (its focus, search and recall queries, proofs)."""

from __future__ import annotations

from typing import Annotated

import typer

from api.cli.context import AsJson, ledger_for, operator
from api.cli.memory import print_erasure

group = typer.Typer(help="Ledger sessions: erase one's free text.", no_args_is_help=True)


@group.command("erase")
def session_erase(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="the session id (ses_...)")],
    reason: Annotated[str, typer.Option(help="why it is erased, kept readable in the log (name no personal data)")],
    as_json: AsJson = False,
) -> None:
    """Erase a session's free text for good: its data key is destroyed and derived copies purged; the session's
    facts (searches, stamps, counts) stay, and the log keeps who, when and why."""
    with ledger_for(ctx) as ledger:
        result = ledger.erase_session(operator(), session_id, reason)
    print_erasure(result, as_json, f"session {session_id} erased")


def register(app: typer.Typer) -> None:
    """Add the ``session`` group to the root command."""
    app.add_typer(group, name="session")
