"""``compliance-ledger hook stop`` and ``hook user-prompt-submit``: Claude Code's Stop and UserPromptSubmit hooks.

The client sends its documented JSON on stdin; the answer goes to stdout and the exit code is always 0, so the
client reads our answer and never mistakes a failure for a verdict. ``stop`` answers a block with
``{"decision": "block", "reason": ...}``; an empty stdout lets the stop through. It fails closed: a ledger that
cannot be reached or does not answer within ``--deadline`` is a block, like a turn without a stamp (the loop
guard then lets the next stop through, as it would for that turn). ``user-prompt-submit`` never blocks a prompt;
when it cannot record the turn it tells the user (``systemMessage``) and lets the prompt go on.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import TYPE_CHECKING, Annotated, Any

import typer

from api.cli.context import settings_or_error
from ledger.core.errors import LedgerError, NotInitialised, StoreUnavailable

if TYPE_CHECKING:
    from ledger.hooks.report import HookInput
    from ledger.service import Ledger

group = typer.Typer(
    help="Claude Code hooks (JSON on stdin): hold an agent at the gate until it earned a stamp in its turn.",
    no_args_is_help=True,
)
DEFAULT_DEADLINE = 20.0  # seconds; `connect` gives the client a longer timeout, so our answer always comes first
PREFIX = "compliance-ledger:"

Agent = Annotated[
    str | None,
    typer.Option(
        envvar="LEDGER_AGENT", help="the agent the hook answers for (as `connect` writes it; never taken from stdin)"
    ),
]
Deadline = Annotated[
    float,
    typer.Option(min=0.1, max=3600, help="seconds to answer within, whatever the ledger does (stop: then blocked)"),
]


class _Answer:
    """The hook's one answer on stdout: the command's, or the fallback the deadline gives if it comes first."""

    def __init__(self, fallback: dict[str, Any] | None) -> None:
        self.fallback = fallback
        self._lock = threading.Lock()
        self._given = False

    def give(self, payload: dict[str, Any] | None) -> bool:
        with self._lock:
            if self._given:
                return False
            self._given = True
            if payload:
                sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
            sys.stdout.flush()
            return True

    def by(self, seconds: float) -> threading.Timer:
        """Give the fallback after ``seconds`` and end the process at once (exit 0), whatever is still running."""

        def fire() -> None:
            if self.give(self.fallback):
                os._exit(0)

        timer = threading.Timer(seconds, fire)
        timer.daemon = True
        timer.start()
        return timer


def _stdin() -> str | None:
    """The client's JSON text (``None`` at a terminal: nothing will come)."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return sys.stdin.buffer.read().decode("utf-8", errors="replace")


def _problem(exc: BaseException) -> str:
    return exc.message if isinstance(exc, LedgerError) else f"{type(exc).__name__}: {exc}"


def _blocked(reason: str, note: str | None = None) -> dict[str, Any]:
    return {"decision": "block", "reason": reason, **({"systemMessage": note} if note else {})}


def _unchecked(given: HookInput | None, problem: str, *, unreachable: bool = True) -> dict[str, Any]:
    """Fail closed when the ledger could not answer: block, unless the loop guard would let this stop through."""
    from ledger.sessions.report import GATE_CLOSED, MSG_STORE_DOWN

    what = "the ledger is unreachable" if unreachable else "the Stop hook could not check the stamp"
    if given is not None and given.stop_hook_active:
        return {
            "systemMessage": f"{PREFIX} {what} ({problem}); the loop guard let this stop through unchecked and "
            "nothing was recorded."
        }
    reason = (
        f"{MSG_STORE_DOWN} ({problem})"
        if unreachable
        else f"{GATE_CLOSED} The Stop hook could not check your stamp ({problem}), so the gate stays closed."
    )
    return _blocked(reason, f"{PREFIX} {what} ({problem}); the agent was held at the gate.")


def _open(ctx: typer.Context, agent: str | None) -> tuple[Ledger, str]:
    from api.bootstrap import open_ledger
    from ledger.core.errors import InvalidInput
    from ledger.service import check_agent

    if not agent:
        raise InvalidInput("no --agent", "reinstall the hooks with `compliance-ledger connect claude-code --hooks`")
    who = check_agent(agent)
    return open_ledger(settings_or_error(ctx)), who


def _unreachable(exc: BaseException) -> bool:
    return isinstance(exc, StoreUnavailable | NotInitialised)


@group.command("stop")
def stop(ctx: typer.Context, agent: Agent = None, deadline: Deadline = DEFAULT_DEADLINE) -> None:
    """Stop hook: block the agent's stop unless it earned a stamp since the user's last prompt."""
    from ledger.hooks import report as hooks
    from ledger.service import Actor, Ledger

    answer = _Answer(_unchecked(None, f"no answer within {deadline:g} s"))
    answer.by(deadline)
    given: HookInput | None = None
    try:
        given = Ledger.read_hook_input(_stdin(), hooks.STOP)
        answer.fallback = _unchecked(given, f"no answer within {deadline:g} s")
        ledger, who = _open(ctx, agent)
        try:
            result = ledger.stop_hook(Actor(who, "cli"), hooks.CLAUDE_CODE, given)
        finally:
            ledger.store.dispose()
    except Exception as exc:  # any failure must still answer: a hook that crashes lets the stop through
        answer.give(_unchecked(given, _problem(exc), unreachable=_unreachable(exc)))
        return
    if result.outcome == "blocked":
        answer.give(_blocked(result.reason or hooks.MSG_NO_STAMP))
    elif result.outcome == "loop_guard":
        answer.give(
            {
                "systemMessage": f"{PREFIX} {who} ended its turn without a Compliance Stamp (let through by "
                "the loop guard after one block; recorded)."
            }
        )
    else:
        answer.give(None)


@group.command("user-prompt-submit")
def user_prompt_submit(ctx: typer.Context, agent: Agent = None, deadline: Deadline = DEFAULT_DEADLINE) -> None:
    """UserPromptSubmit hook: record that the user's prompt started the agent's turn (never blocks the prompt)."""
    from ledger.hooks import report as hooks
    from ledger.service import Actor, Ledger

    def note(problem: str) -> dict[str, Any]:
        return {
            "systemMessage": f"{PREFIX} the start of this turn was not recorded ({problem}); the Stop hook "
            "counts this turn from the end of the previous one."
        }

    answer = _Answer(note(f"no answer within {deadline:g} s"))
    answer.by(deadline)
    try:
        given = Ledger.read_hook_input(_stdin(), hooks.USER_PROMPT_SUBMIT)
        ledger, who = _open(ctx, agent)
        try:
            ledger.turn_started(Actor(who, "cli"), hooks.CLAUDE_CODE, given)
        finally:
            ledger.store.dispose()
    except Exception as exc:  # a prompt is never blocked, whatever failed
        answer.give(note(_problem(exc)))
        return
    answer.give(None)


def register(app: typer.Typer) -> None:
    """Add the ``hook`` group to the root command."""
    app.add_typer(group, name="hook")
