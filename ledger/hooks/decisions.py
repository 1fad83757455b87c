"""Hook decisions, pure: what the client's hook sent, where the agent's turn started, and whether it may end it.

The client's documented input (Claude Code's hooks: JSON on stdin with ``session_id``, ``hook_event_name`` and,
for ``Stop``, ``stop_hook_active``) is read leniently: unknown fields are ignored and a missing or malformed field
is recorded as an ``input_problem``, never a crash, because a hook that fails lets the agent stop unchecked.
The agent is never read from that input; it comes from the credential (the hook command's ``--agent``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ledger.core.events import RecordedEvent, StopHookDecided, StopOutcome, TurnStarted
from ledger.sessions.gate import GATE_CLOSED

CLAUDE_CODE = "claude-code"
STREAM_PREFIX = "turns:"
STOP = "Stop"
USER_PROMPT_SUBMIT = "UserPromptSubmit"
MAX_CLIENT_SESSION_CHARS = 128
_CLIENT_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
_SHOWN = 40  # characters of a bad value quoted back in a recorded problem

MSG_NO_STAMP = (
    f"{GATE_CLOSED} You have not earned a Compliance Stamp since the user's last prompt, so you may not end your "
    "turn yet. Call 'memory_search' for this task, then 'assert_compliance', and end your response with the stamp "
    "it returns."
)
NO_TURN_START = (
    " (No start of this turn was recorded — is the UserPromptSubmit hook installed? — so the turn counts from "
    "this answer.)"
)


@dataclass(frozen=True)
class HookInput:
    """What the client's hook sent, as far as the ledger uses it; ``problem`` says what was wrong, if anything."""

    client_session: str | None = None
    stop_hook_active: bool = False
    problem: str | None = None


@dataclass(frozen=True)
class Turn:
    """Where the agent's current turn started: ``start`` is the position it counts from (``None``: nothing
    recorded yet); ``prompted`` says a user prompt (``TurnStarted``) started it, rather than the last stop that
    was let through or, when neither was recorded, the first block."""

    start: int | None = None
    prompted: bool = False


def stream_for(agent: str, client_session: str | None) -> str:
    """The stream of one agent's turns in one client conversation (``-``: the client named none)."""
    return f"{STREAM_PREFIX}{agent}:{client_session or '-'}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def read_input(text: str | None, event: str) -> HookInput:
    """The hook input of ``event`` (``Stop`` or ``UserPromptSubmit``) from the client's stdin text."""
    if text is None or not text.strip():
        return HookInput(problem="no JSON on stdin")
    try:
        data = json.loads(text)
    except ValueError:
        return HookInput(problem="stdin is not JSON")
    if not isinstance(data, dict):
        return HookInput(problem=f"stdin is JSON but not an object ({type(data).__name__})")
    problems: list[str] = []
    name = data.get("hook_event_name")
    if name is not None and name != event:
        problems.append(f"hook_event_name is {_shown(name)}, not {event!r}")
    session = data.get("session_id")
    if session is None:
        problems.append("no session_id")
    elif (
        not isinstance(session, str)
        or len(session) > MAX_CLIENT_SESSION_CHARS
        or not _CLIENT_SESSION.fullmatch(session)
    ):
        problems.append(f"session_id {_shown(session)} is not an id")
        session = None
    active = False
    if event == STOP:
        raw = data.get("stop_hook_active")
        if raw is None:
            problems.append("no stop_hook_active (taken as false)")
        elif not isinstance(raw, bool):
            problems.append(f"stop_hook_active {_shown(raw)} is not true or false (taken as false)")
        else:
            active = raw
    return HookInput(client_session=session, stop_hook_active=active, problem="; ".join(problems) or None)


def current_turn(events: Iterable[RecordedEvent], agent: str) -> Turn:
    """Fold a turn stream (in order) to where ``agent``'s current turn started."""
    turn = Turn()
    for rec in events:
        if rec.agent != agent:
            continue
        e = rec.event
        if type(e) is TurnStarted:
            turn = Turn(rec.position, prompted=True)
        elif type(e) is StopHookDecided and (e.outcome != "blocked" or turn.start is None):
            turn = Turn(rec.position, prompted=False)
    return turn


def decide_turn_start(client: str, given: HookInput) -> TurnStarted:
    """The user's prompt starts a turn: recorded whatever the input looked like (it never blocks a prompt)."""
    return TurnStarted(client=client, client_session=given.client_session, input_problem=given.problem)


def decide_stop(client: str, given: HookInput, turn: Turn, stamp_position: int | None) -> StopHookDecided:
    """Allowed when the agent earned a stamp after its turn started (``stamp_position``); else let through once
    the client says it is already continuing because of a block (the loop guard); else blocked with the gate's
    message."""

    def answer(outcome: StopOutcome, stamp: int | None = None, reason: str | None = None) -> StopHookDecided:
        return StopHookDecided(
            client=client,
            outcome=outcome,
            client_session=given.client_session,
            stop_hook_active=given.stop_hook_active,
            turn_position=turn.start,
            stamp_position=stamp,
            reason=reason,
            input_problem=given.problem,
        )

    if stamp_position is not None:
        return answer("allowed", stamp=stamp_position)
    if given.stop_hook_active:
        return answer("loop_guard")
    return answer("blocked", reason=MSG_NO_STAMP + ("" if turn.start is not None else NO_TURN_START))
