"""``compliance-ledger anchor``: get a challenge, submit an Odyssean Anchor proof, and lift a session's anchor
lock."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from api.cli.context import AsJson, fail, ledger_for, operator
from api.cli.output import out, print_json
from ledger.core.errors import InvalidInput
from ledger.core.text import HINT as TEXT_HINT
from ledger.core.text import find_bad_text

group = typer.Typer(help="Odyssean Anchor proofs.", no_args_is_help=True)


@group.command("challenge")
def anchor_challenge(
    ctx: typer.Context,
    session: Annotated[str, typer.Option("--session", help="the session to anchor")],
    agent: Annotated[str, typer.Option(envvar="LEDGER_AGENT", help="the agent that owns the session")],
    as_json: AsJson = False,
) -> None:
    """Ask for a challenge: the line of a tracked file the next proof must quote under CONTEXT."""
    from ledger.service import Actor

    with ledger_for(ctx) as ledger:
        issued = ledger.anchor_challenge(Actor(agent, "cli"), session)
    if as_json:
        print_json(issued.model_dump(mode="json"))
        return
    out.print(f"quote line {issued.line} of {issued.path} (until {issued.expires_at.isoformat()}):", highlight=False)
    out.print(issued.answer_format, highlight=False)


@group.command("validate")
def anchor_validate(
    ctx: typer.Context,
    proof_file: Annotated[Path, typer.Argument(help="file holding the proof ('-' for standard input)")],
    session: Annotated[str, typer.Option("--session", help="the session to anchor")],
    agent: Annotated[str, typer.Option(envvar="LEDGER_AGENT", help="the agent that owns the session")],
    role: Annotated[str | None, typer.Option(help="role to claim (default: the session's role)")] = None,
    tier: Annotated[str, typer.Option(help="quick | default | deep")] = "default",
    as_json: AsJson = False,
) -> None:
    """Submit an anchor proof for a session. Exit 0 when validated, 1 when not."""
    from ledger.service import Actor

    try:
        text = sys.stdin.read() if str(proof_file) == "-" else proof_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise fail(InvalidInput(f"cannot read {proof_file}: {exc.strerror}", "give a readable file")) from exc
    except UnicodeDecodeError as exc:
        raise fail(InvalidInput(f"{proof_file} is not UTF-8 text", "save the proof as UTF-8")) from exc
    if (found := find_bad_text({str(proof_file): text})) is not None:
        raise fail(InvalidInput(found.message("file"), TEXT_HINT))
    with ledger_for(ctx) as ledger:
        claimed = role or ledger.session_state(session).role
        result = ledger.anchor(Actor(agent, "cli"), session, claimed, text, tier)
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        e = result.enforcement
        out.print(
            ("[green]VALIDATED[/green]" if result.validated else "[red]NOT VALIDATED[/red]")
            + f" (attempt {e.attempt}, retries left {e.retries_left}{', LOCKED' if e.locked else ''})"
        )
        if result.challenge is not None:
            c = result.challenge
            out.print(f"challenge {c.challenge_id} answered: line {c.line} of {c.path}", highlight=False)
        for line in result.warnings:
            out.print(f"[yellow]warning:[/yellow] {line}")
        out.print(result.canonical_proof if result.validated else result.guidance, highlight=False)
        if result.template:
            out.print("\ntemplate:\n" + result.template, highlight=False)
    raise typer.Exit(0 if result.validated else 1)


@group.command("unlock")
def anchor_unlock(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the locked session")],
    reason: Annotated[str, typer.Option(help="why it may try again (recorded in the ledger)")],
) -> None:
    """Lift a session's anchor lock (recorded as an event naming the operator and the reason)."""
    with ledger_for(ctx) as ledger:
        state = ledger.unlock_anchor(operator(), session, reason)
    out.print(f"unlocked {state.session_id}: {state.anchor.total_attempts} attempts so far, retries start again")


def register(app: typer.Typer) -> None:
    """Add the ``anchor`` group to the root command."""
    app.add_typer(group, name="anchor")
