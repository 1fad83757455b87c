"""``compliance-ledger task``: create, show, list and move workflow tasks, and set their DNA."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from api.cli.context import OPERATOR_NAME, AsJson, fail, ledger_for, parse_when
from api.cli.output import err, out, print_json, table
from ledger.core.errors import InvalidInput
from ledger.core.text import HINT as TEXT_HINT
from ledger.core.text import find_bad_text

if TYPE_CHECKING:
    from ledger.workflow.report import TaskInfo

group = typer.Typer(help="Workflow tasks with DNA gates.", no_args_is_help=True)

AgentOption = Annotated[str, typer.Option("--agent", envvar="LEDGER_AGENT", help="the agent acting")]
TaskId = Annotated[str, typer.Argument(help="the task's slug, as `task list` shows it")]
JSON_HINT = 'send a JSON object, e.g. {"blocked_reason": "waiting for the schema"}'


def _json_arg(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(InvalidInput(f"{what} is not JSON: {exc.msg}", JSON_HINT)) from exc
    if not isinstance(value, dict):
        raise fail(InvalidInput(f"{what} is not a JSON object", JSON_HINT))
    if (found := find_bad_text(value, what)) is not None:
        raise fail(InvalidInput(found.message(), TEXT_HINT))
    return value


def _print_task(task: TaskInfo) -> None:
    line = f"{task.task_id} [{task.task_type}] {task.status} (role {task.role}) — {task.title}"
    out.print(line, markup=False, soft_wrap=True)
    for name, value in sorted(task.dna.items()):
        out.print(f"  dna.{name} = {json.dumps(value, ensure_ascii=False)}", markup=False, soft_wrap=True)
    out.print(f"  next: {', '.join(task.next) or 'none'}", markup=False, soft_wrap=True)


def _show_task(task: TaskInfo, as_json: bool) -> None:
    if as_json:
        print_json(task.model_dump(mode="json"))
    else:
        _print_task(task)


@group.command("create")
def task_create(
    ctx: typer.Context,
    task_id: Annotated[str, typer.Argument(help="a slug, e.g. memory-gate-42")],
    title: Annotated[str, typer.Argument(help="one line")],
    agent: AgentOption = "operator",
    task_type: Annotated[str, typer.Option("--type", help="task | bug")] = "task",
    role: Annotated[str, typer.Option(help="the role the task is assigned to")] = "dev",
    status: Annotated[str, typer.Option(help="starting status")] = "ready",
    dna: Annotated[str, typer.Option(help="initial DNA as a JSON object")] = "{}",
    as_json: AsJson = False,
) -> None:
    """Create a task."""
    from ledger.service import Actor

    fields = _json_arg(dna, "--dna")
    with ledger_for(ctx) as ledger:
        task = ledger.task_create(
            Actor(agent, "cli"), task_id, title, task_type=task_type, role=role, status=status, dna=fields
        )
    _show_task(task, as_json)


@group.command("show")
def task_show(
    ctx: typer.Context,
    task_id: TaskId,
    as_of: Annotated[str | None, typer.Option("--as-of", help="ISO time")] = None,
    as_json: AsJson = False,
) -> None:
    """Show a task (now or as of a time)."""
    moment = parse_when(as_of)
    with ledger_for(ctx) as ledger:
        task = ledger.task_get(task_id, as_of=moment)
    _show_task(task, as_json)


@group.command("list")
def task_list(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(help="only this status")] = None,
    role: Annotated[str | None, typer.Option(help="only tasks assigned to this role")] = None,
    task_type: Annotated[str | None, typer.Option("--type", help="task | bug")] = None,
    as_json: AsJson = False,
) -> None:
    """List tasks."""
    with ledger_for(ctx) as ledger:
        tasks = ledger.task_list(status=status, role=role, task_type=task_type)
    if as_json:
        print_json([t.model_dump(mode="json") for t in tasks])
        return
    listing = table("task", "type", "status", "role", "title")
    for t in tasks:
        listing.add_row(t.task_id, t.task_type, t.status, t.role, t.title)
    out.print(listing)


@group.command("dna")
def task_dna(
    ctx: typer.Context,
    task_id: TaskId,
    fields: Annotated[str, typer.Argument(help="JSON object of fields to set")] = "{}",
    agent: AgentOption = "operator",
    remove: Annotated[list[str] | None, typer.Option("--remove", help="a field to remove")] = None,
    as_json: AsJson = False,
) -> None:
    """Set (and/or remove) DNA fields: the seed's `update-dna <slug> '<json>' <actor>`."""
    from ledger.service import Actor

    changes = _json_arg(fields, "FIELDS")
    with ledger_for(ctx) as ledger:
        task = ledger.task_update_dna(Actor(agent, "cli"), task_id, changes, remove or [])
    _show_task(task, as_json)


@group.command("transition")
def task_transition(
    ctx: typer.Context,
    task_id: TaskId,
    to_status: Annotated[str, typer.Argument(help="target status, or 'restore'")],
    role: Annotated[
        str | None, typer.Argument(help="acting role (the seed's <actor>): a session is opened for it")
    ] = None,
    agent: AgentOption = "operator",
    session: Annotated[str | None, typer.Option(help="act in this existing session (and its role)")] = None,
    as_json: AsJson = False,
) -> None:
    """Move a task: the seed's `transition <slug> <to> <actor>`. Exit 1 when refused."""
    from ledger.service import Actor

    if (role is None) == (session is None):
        raise fail(InvalidInput("give a ROLE or --session (one of them)", "e.g. `task transition t1 active dev`"))
    # The operator at this terminal is a person, which is what acting in the human role requires.
    who = Actor(agent, "cli", admin=agent == OPERATOR_NAME)
    with ledger_for(ctx) as ledger:
        sid = session or ledger.clock_in(who, role or "").session_id
        try:
            result = ledger.task_transition(who, task_id, to_status, sid)
        finally:
            if session is None:
                ledger.clock_out(who, sid)
    if as_json:
        print_json(result.model_dump(mode="json"))
    elif result.status == "transitioned":
        out.print(f"{task_id}: {result.from_status} -> {result.to_status} ({result.rule})", markup=False)
        _print_task(result.task)
    else:
        err.print(f"{task_id}: {result.from_status} -> {result.to_status} refused", markup=False)
        for reason in result.reasons:
            err.print(f"  - {reason}", markup=False, soft_wrap=True)
    raise typer.Exit(0 if result.status == "transitioned" else 1)


def register(app: typer.Typer) -> None:
    """Add the ``task`` group to the root command."""
    app.add_typer(group, name="task")
