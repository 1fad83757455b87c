"""``compliance-ledger connect CLIENT``: the client's MCP configuration for this ledger, printed or merged into the
client's own file (``--write``), and for Claude Code its Stop and UserPromptSubmit hooks (``--hooks``)."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer

from api.cli import clients, config_files
from api.cli.context import fail, settings_of
from ledger.core.errors import InvalidInput, LedgerError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
DEFAULT_NAME = "compliance-ledger"
SCOPES: tuple[clients.Scope, ...] = ("project", "user")


def _say(text: str, *, err: bool = False) -> None:
    typer.echo(text, err=err)  # plain: rich would wrap long paths at the terminal's width


def _choose(client_name: str, scope: str | None, name: str, hooks: bool) -> tuple[clients.Client, clients.Scope]:
    """The client and scope asked for, or the error that says what to send instead."""
    client = clients.CLIENTS.get(client_name)
    if client is None:
        raise InvalidInput(f"unknown client {client_name!r}", f"send one of: {', '.join(clients.CLIENTS)}")
    if not NAME.fullmatch(name):
        raise InvalidInput(f"server name {name!r} is not valid", "send letters, digits, '-' or '_' (at most 64)")
    chosen = scope or client.default_scope
    if chosen not in SCOPES:
        raise InvalidInput(f"scope {chosen!r} is not a scope", "send --scope project or --scope user")
    if chosen not in client.paths:
        raise InvalidInput(f"{client.title} has no {chosen} configuration", f"send --scope {client.default_scope}")
    if hooks and client.name != clients.HOOK_CLIENT:
        raise InvalidInput(f"{client.title} has no stop hooks", f"--hooks is for {clients.HOOK_CLIENT}")
    return client, chosen  # type: ignore[return-value]  # checked against SCOPES above


def connect(
    ctx: typer.Context,
    client: Annotated[str, typer.Argument(help="claude-code, claude-desktop, cursor, vscode or codex")],
    agent: Annotated[
        str | None,
        typer.Option(help="the agent the client acts as (default: LEDGER_AGENT, else the client's name)"),
    ] = None,
    scope: Annotated[
        str | None,
        typer.Option(
            help="project or user (default: user for claude-desktop and codex, else project)", show_default=False
        ),
    ] = None,
    project: Annotated[
        Path | None, typer.Option(help="the project directory of project scope (default: the current directory)")
    ] = None,
    name: Annotated[str, typer.Option(help="the server's name in the client's configuration")] = DEFAULT_NAME,
    write: Annotated[bool, typer.Option("--write", help="merge into the client's file (a backup is kept)")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="with --write: replace an entry of the same name that differs")
    ] = False,
    hooks: Annotated[
        bool,
        typer.Option("--hooks", help="claude-code: also the Stop and UserPromptSubmit hooks (.claude/settings.json)"),
    ] = False,
) -> None:
    """Print a client's MCP configuration for this ledger, or merge it into the client's file with --write."""
    from ledger.service import check_agent

    settings = settings_of(ctx)
    try:
        target, chosen = _choose(client, scope, name, hooks)
        who = check_agent(agent or os.environ.get("LEDGER_AGENT") or target.name)
    except LedgerError as exc:
        raise fail(exc) from exc
    where = (project or Path.cwd()).expanduser().absolute()
    ledger = clients.ledger_options(settings.home.expanduser().absolute(), settings.database_url)
    base = clients.launcher()
    entry = target.entry(clients.server_command(base, ledger, who))
    path = target.path(chosen, where, Path.home())
    wanted: dict[str, tuple[str, dict[str, Any]]] = {
        event: (sub, clients.hook_entry(clients.hook_command(base, ledger, who, sub)))
        for event, sub in clients.HOOK_EVENTS.items()
    }
    hook_path = clients.HOOK_SETTINGS[chosen](where, Path.home())
    if settings.database_url and urlsplit(settings.database_url).password:
        _say("note: the database URL, password included, goes into the client's configuration", err=True)
    if not write:
        # Each document whole on stdout (with --hooks, two, a blank line apart, so each can be copied alone); on
        # stderr before each, the file it belongs to.
        of = " (1 of 2)" if hooks else ""
        _say(f"# {target.title}{of}: merge this into {path} (or run again with --write)", err=True)
        _say(config_files.server_snippet(target.key, name, entry, toml=target.toml))
        if hooks:
            _say("")
            _say(f"# {target.title} hooks (2 of 2): merge this into {hook_path} (or run again with --write)", err=True)
            snippet = {"hooks": {event: [{"hooks": [hook]}] for event, (_, hook) in wanted.items()}}
            _say(json.dumps(snippet, indent=2, ensure_ascii=False))
        return
    try:
        merge = config_files.merge_toml_server if target.toml else config_files.merge_json_server
        changes = [merge(path, target.key, name, entry, force=force)]
        if hooks:
            changes.append(config_files.merge_hooks(hook_path, wanted, force=force))
    except LedgerError as exc:
        raise fail(exc) from exc
    except OSError as exc:
        problem = LedgerError(f"could not write the configuration: {exc}", "check the path and its permissions")
        raise fail(problem) from exc
    for change in changes:
        _say(f"{change.status} {change.path}" + (f" (backup: {change.backup})" if change.backup else ""))
    _say(f"{target.title} runs: {shlex.join([entry['command'], *entry['args']])}")
    if target.after:
        _say(target.after)
    if not settings.key_path.exists():
        _say(
            f"The ledger at {settings.home} is not initialised yet: the MCP server creates it on its first start "
            f"(or run `compliance-ledger --home {shlex.quote(str(settings.home))} init`)."
        )


def register(app: typer.Typer) -> None:
    """Add ``connect`` to the root command."""
    app.command()(connect)
