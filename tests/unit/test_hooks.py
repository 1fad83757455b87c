"""The hook decisions without a database: reading the client's JSON, folding a turn, and the Stop hook's answer."""

from __future__ import annotations

import datetime as _dt
import json

import pytest

from ledger.core.events import DomainEvent, RecordedEvent, StopHookDecided, TurnStarted
from ledger.hooks import decisions
from ledger.hooks.decisions import STOP, USER_PROMPT_SUBMIT, HookInput, Turn
from ledger.sessions.gate import GATE_CLOSED

T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)
STOP_INPUT = {
    "session_id": "abc123",
    "transcript_path": "~/.claude/projects/x.jsonl",
    "permission_mode": "default",
    "hook_event_name": "Stop",
    "stop_hook_active": True,
}


def rec(position: int, event: DomainEvent, agent: str | None = "alice") -> RecordedEvent:
    return RecordedEvent(position, "turns:alice:abc123", position, T0, {"agent": agent} if agent else {}, event, "h")


def test_the_documented_stop_input_is_read_with_its_session_and_loop_guard_flag() -> None:
    given = decisions.read_input(json.dumps(STOP_INPUT), STOP)
    assert given == HookInput(client_session="abc123", stop_hook_active=True, problem=None)


def test_unknown_fields_are_ignored_and_the_agent_is_never_read_from_the_input() -> None:
    text = json.dumps({**STOP_INPUT, "agent": "mallory", "last_assistant_message": "done", "background_tasks": []})
    assert decisions.read_input(text, STOP) == HookInput("abc123", True, None)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "no JSON on stdin"),
        ("  ", "no JSON on stdin"),
        ("{not json", "stdin is not JSON"),
        ("[1, 2]", "stdin is JSON but not an object (list)"),
        ('{"session_id": "abc"}', "no stop_hook_active (taken as false)"),
        ('{"session_id": "abc", "stop_hook_active": "yes"}', "stop_hook_active 'yes' is not true or false"),
        ('{"stop_hook_active": false}', "no session_id"),
        ('{"session_id": "../../etc", "stop_hook_active": false}', "session_id '../../etc' is not an id"),
        ('{"session_id": 7, "stop_hook_active": false}', "session_id 7 is not an id"),
        ('{"session_id": "abc", "stop_hook_active": false, "hook_event_name": "UserPromptSubmit"}', "not 'Stop'"),
    ],
)
def test_missing_or_malformed_input_is_a_recorded_problem_and_the_loop_guard_stays_off(
    text: str | None, problem: str
) -> None:
    given = decisions.read_input(text, STOP)
    assert given.problem is not None and problem in given.problem
    assert given.stop_hook_active is False


def test_the_prompt_hook_needs_no_stop_hook_active() -> None:
    text = json.dumps({"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "hi", "cwd": "/x"})
    assert decisions.read_input(text, USER_PROMPT_SUBMIT) == HookInput("s1", False, None)


def test_a_long_bad_value_is_cut_short_in_the_problem() -> None:
    given = decisions.read_input(json.dumps({"session_id": "x" * 500, "stop_hook_active": False}), STOP)
    assert given.problem is not None and len(given.problem) < 100


def test_the_turn_starts_at_the_last_prompt_of_the_agent() -> None:
    events = [
        rec(3, TurnStarted(client="claude-code", client_session="abc123")),
        rec(5, StopHookDecided(client="claude-code", outcome="allowed")),
        rec(8, TurnStarted(client="claude-code", client_session="abc123")),
        rec(9, StopHookDecided(client="claude-code", outcome="blocked")),
        rec(10, TurnStarted(client="claude-code"), agent="bob"),
    ]
    assert decisions.current_turn(events, "alice") == Turn(8, prompted=True)


def test_without_a_prompt_the_turn_starts_at_the_last_stop_let_through_or_else_the_first_block() -> None:
    let_through = [
        rec(2, StopHookDecided(client="claude-code", outcome="blocked")),
        rec(4, StopHookDecided(client="claude-code", outcome="loop_guard")),
        rec(6, StopHookDecided(client="claude-code", outcome="blocked")),
    ]
    blocks = [let_through[0], rec(3, StopHookDecided(client="claude-code", outcome="blocked"))]
    assert decisions.current_turn(let_through, "alice") == Turn(4, prompted=False)
    assert decisions.current_turn(blocks, "alice") == Turn(2, prompted=False)
    assert decisions.current_turn([], "alice") == Turn()


def test_a_stamp_in_the_turn_allows_the_stop() -> None:
    decided = decisions.decide_stop("claude-code", HookInput("abc123"), Turn(8, True), stamp_position=11)
    assert (decided.outcome, decided.stamp_position, decided.turn_position, decided.reason) == ("allowed", 11, 8, None)


def test_no_stamp_blocks_with_the_gates_message() -> None:
    decided = decisions.decide_stop("claude-code", HookInput("abc123"), Turn(8, True), stamp_position=None)
    assert decided.outcome == "blocked" and decided.reason == decisions.MSG_NO_STAMP
    assert decided.reason.startswith(GATE_CLOSED) and "assert_compliance" in decided.reason


def test_no_stamp_with_the_client_already_continuing_is_let_through_by_the_loop_guard() -> None:
    given = HookInput("abc123", stop_hook_active=True)
    decided = decisions.decide_stop("claude-code", given, Turn(8, True), stamp_position=None)
    assert (decided.outcome, decided.stop_hook_active, decided.reason) == ("loop_guard", True, None)


def test_a_stamp_wins_over_the_loop_guard() -> None:
    given = HookInput("abc123", stop_hook_active=True)
    assert decisions.decide_stop("claude-code", given, Turn(8, True), stamp_position=9).outcome == "allowed"


def test_a_stop_with_no_recorded_turn_says_the_prompt_hook_is_missing() -> None:
    decided = decisions.decide_stop("claude-code", HookInput(problem="no session_id"), Turn(), stamp_position=None)
    assert decided.reason is not None and "UserPromptSubmit" in decided.reason
    assert decided.input_problem == "no session_id" and decided.turn_position is None


def test_the_turn_start_is_recorded_whatever_the_input_was() -> None:
    event = decisions.decide_turn_start("claude-code", HookInput(problem="stdin is not JSON"))
    assert event == TurnStarted(client="claude-code", client_session=None, input_problem="stdin is not JSON")


def test_each_agent_and_conversation_has_its_own_turn_stream() -> None:
    assert decisions.stream_for("alice", "abc123") == "turns:alice:abc123"
    assert decisions.stream_for("alice", None) == "turns:alice:-"
