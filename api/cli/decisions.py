"""``compliance-ledger settings``: the decision settings the ledger records for every node (which settings, and why
those: ``ledger.compose.decision_settings``) — show them, and apply this node's to the whole cluster."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Annotated, Any

import typer

from api.cli.context import AsJson, fail, ledger_for, operator, settings_of
from api.cli.output import out, print_json, table
from ledger.core.errors import InvalidInput

if TYPE_CHECKING:
    from ledger.core.decision_settings import DecisionSettings, Difference
    from ledger.core.events import RecordedEvent

group = typer.Typer(
    help="The decision settings every node of this ledger must share (require-anchor, token TTL, rule and "
    "workflow files, …).",
    no_args_is_help=True,
)


def _local(ctx: typer.Context) -> DecisionSettings:
    from api.bootstrap import decision_settings
    from ledger.core.errors import LedgerError

    try:
        return decision_settings(settings_of(ctx))
    except LedgerError as exc:
        raise fail(exc) from exc


def _applied_values(applied: RecordedEvent | None) -> dict[str, Any]:
    from ledger.core.events import SettingsApplied

    if applied is None or not isinstance(applied.event, SettingsApplied):
        return {}
    return dict(applied.event.values)


def _said(applied: RecordedEvent) -> str:
    from ledger.core.events import SettingsApplied

    event = applied.event
    assert isinstance(event, SettingsApplied)
    node = f" from {event.node}" if event.node else ""
    return (
        f"applied at {applied.recorded_at:%Y-%m-%d %H:%M:%SZ} by {applied.agent or '?'}{node} "
        f"(position {applied.position}); digest {event.digest}"
    )


@group.command("show")
def settings_show(
    ctx: typer.Context,
    file: Annotated[
        str | None,
        typer.Option(
            "--file",
            help="print the exact text the ledger records for this file setting (workflow_file or "
            "enforcement_rules_file), to give a node the same file",
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """The decision settings the ledger records, and whether this node's are the same (each that differs named)."""
    from ledger.core.decision_settings import differences, digest_of, is_file, render

    local = _local(ctx)
    with ledger_for(ctx) as ledger:
        applied = ledger.applied_settings()
    recorded = _applied_values(applied)
    if file is not None:
        value = recorded.get(file)
        if not is_file(value):
            files = ", ".join(name for name, v in (recorded or local.values).items() if is_file(v))
            problem = InvalidInput(f"--file {file!r} is not a file setting the ledger records", f"send one of {files}")
            raise fail(problem)
        assert value is not None
        typer.echo(value["text"], nl=False)
        return
    found = differences(recorded, local) if applied is not None else None
    if as_json:
        print_json(
            {
                "recorded": None if applied is None else {"digest": digest_of(recorded), "values": recorded},
                "local": {"digest": local.digest, "values": dict(local.values), "sources": dict(local.sources)},
                "differences": None if found is None else [d.name for d in found],
            }
        )
        return
    if applied is None:
        out.print("the ledger records no decision settings yet: run `compliance-ledger settings apply`", markup=False)
        out.print(f"this node's digest {local.digest}", markup=False)
        return
    listing = table("setting", "the ledger's", "this node's")
    different = {d.name for d in found or ()}
    for name in dict.fromkeys([*recorded, *local.values]):
        mine = local.values.get(name)
        shown = "same" if name not in different else render(mine) if name in local.values else "(none)"
        listing.add_row(name, render(recorded[name]) if name in recorded else "(none)", shown)
    out.print(_said(applied), markup=False)
    out.print(listing)
    if found:
        out.print(
            f"this node's settings differ in {len(found)} (digest {local.digest}): serve and mcp refuse to start here "
            "until they match, or `compliance-ledger settings apply` records this node's for the whole cluster",
            markup=False,
        )
    else:
        out.print("this node's settings are the ledger's", markup=False)


@group.command("apply")
def settings_apply(
    ctx: typer.Context,
    yes: Annotated[
        bool, typer.Option("--yes", help="record them (without it: print what would change, and change nothing)")
    ] = False,
) -> None:
    """Record this node's decision settings as the ledger's, for every node: print each setting that differs from
    what the ledger records (a file's lines too), then, with --yes, record them (one SettingsApplied event). From
    then on serve and mcp refuse to start on a node whose settings are not these, and running nodes with others
    log an error until restarted with them."""
    local = _local(ctx)
    with ledger_for(ctx) as ledger:
        applied = ledger.applied_settings()
        found = _differences(applied, local)
        if applied is not None and not found:
            out.print(
                f"the ledger's decision settings are already this node's (digest {local.digest}); nothing recorded",
                markup=False,
            )
            return
        if applied is None:
            out.print("the ledger records no decision settings yet; this node's are:", markup=False)
        else:
            out.print(f"the ledger's decision settings ({_said(applied)}) differ from this node's in:", markup=False)
        for difference in found:
            out.print(f"  {difference.said()}", markup=False, highlight=False)
            for line in difference.text_diff():
                out.print(f"    {line}", markup=False, highlight=False)
        if not yes:
            out.print(
                "nothing recorded: run again with --yes to make these the settings of every node of this ledger",
                markup=False,
            )
            return
        recorded = ledger.apply_settings(operator(), local, node=socket.gethostname())
    if recorded is None:  # another operator applied these very settings meanwhile
        out.print(f"the ledger's decision settings are already this node's (digest {local.digest})", markup=False)
        return
    out.print(
        f"recorded at position {recorded.position}: digest {local.digest}. Restart the other nodes with these "
        "settings: a node whose settings differ refuses to start, and a running one logs an error.",
        markup=False,
    )


def _differences(applied: RecordedEvent | None, local: DecisionSettings) -> list[Difference]:
    """What differs from the recorded settings; with none recorded, every local setting (against nothing)."""
    from ledger.core.decision_settings import differences

    return differences(_applied_values(applied), local)


def register(app: typer.Typer) -> None:
    """Add the ``settings`` group to the root command."""
    app.add_typer(group, name="settings")
