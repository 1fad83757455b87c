"""``compliance-ledger keys``: issue, list, revoke and rotate HTTP API keys, and print the public signing key."""

from __future__ import annotations

import datetime as _dt
import sys
from typing import Annotated

import typer

from api.cli.context import AsJson, fail, ledger_for, operator
from api.cli.output import err, out, print_json, table
from ledger.core.errors import InvalidInput

group = typer.Typer(help="Manage HTTP API keys.", no_args_is_help=True)


@group.command("add")
def keys_add(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option(help="agent this key identifies")],
    admin: Annotated[
        bool, typer.Option("--admin", help="role admin: everything, plus unlock, keys and human roles")
    ] = False,
    auditor: Annotated[bool, typer.Option("--auditor", help="role auditor: reads everything, changes nothing")] = False,
) -> None:
    """Issue an API key for an agent (role agent: acts, and reads only its own). Printed once; only its hash is
    stored."""
    if admin and auditor:
        raise fail(InvalidInput("--admin and --auditor were both given", "choose one role (or neither: agent)"))
    with ledger_for(ctx) as ledger:
        created = ledger.issue_api_key(operator(), agent, role="admin" if admin else "auditor" if auditor else "agent")
    err.print(
        f"API key {created.key_id} for agent {created.agent!r} (role {created.role}) — shown once, store it now:",
        markup=False,
    )
    out.print(created.api_key, highlight=False)


@group.command("list")
def keys_list(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Every key ever issued: id, agent, role, issued at, and revoked at / by / why."""
    from rich.table import Column

    with ledger_for(ctx) as ledger:
        listed = ledger.api_key_list(operator())
    if as_json:
        print_json([k.model_dump(mode="json") for k in listed])
        return
    listing = table(Column("key id", no_wrap=True), "agent", "role", Column("issued at", no_wrap=True), "revoked")
    for k in listed:
        revoked = "-"
        if k.revoked_at is not None:
            revoked = f"{_minute(k.revoked_at)} by {k.revoked_by or '?'}" + (f": {k.reason}" if k.reason else "")
            revoked += f" (replaced by {k.replaced_by})" if k.replaced_by else ""
        listing.add_row(k.key_id, k.agent, k.role, _minute(k.issued_at), revoked)
    out.print(listing if listed else "no API keys issued")


def _minute(moment: _dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%MZ")


@group.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(help="the key's id, as `keys list` shows it")],
    reason: Annotated[str | None, typer.Option(help="why (recorded in the ledger)")] = None,
) -> None:
    """Revoke a key. Every server on this database refuses it from its next request on."""
    with ledger_for(ctx) as ledger:
        revoked = ledger.revoke_api_key(operator(), key_id, reason)
    out.print(f"revoked {revoked.key_id} (agent {revoked.agent!r}, role {revoked.role})", markup=False)


@group.command("rotate")
def keys_rotate(
    ctx: typer.Context, key_id: Annotated[str, typer.Argument(help="the key to replace, as `keys list` shows it")]
) -> None:
    """Issue a new key for the same agent and role and revoke the old one (one event append). The new key is
    printed once."""
    with ledger_for(ctx) as ledger:
        created = ledger.rotate_api_key(operator(), key_id)
    err.print(
        f"revoked {key_id}; new API key {created.key_id} for agent {created.agent!r} (role {created.role}) — "
        "shown once, store it now:",
        markup=False,
    )
    out.print(created.api_key, highlight=False)


@group.command("public")
def keys_public(
    ctx: typer.Context,
    fmt: Annotated[str, typer.Option("--format", help="pem | jwk | json (both, with the key id)")] = "pem",
) -> None:
    """Print the ledger's public signing key: give it to whoever checks receipts and checkpoints."""
    from ledger.core import signing

    if fmt not in {"pem", "jwk", "json"}:
        raise fail(InvalidInput(f"--format {fmt!r} is not known", "use pem, jwk or json"))
    with ledger_for(ctx) as ledger:
        public = ledger.public_key()
    if fmt == "pem":
        sys.stdout.write(public.pem)
    else:
        print_json(public.jwk if fmt == "jwk" else signing.public_key_document(public))


def register(app: typer.Typer) -> None:
    """Add the ``keys`` group to the root command."""
    app.add_typer(group, name="keys")
