"""``compliance-ledger hook stop`` / ``hook user-prompt-submit`` as Claude Code runs them: a subprocess of the real
command line, the client's documented JSON on stdin, a real ledger behind it, the answer read from stdout."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner

from api.cli import app
from api.settings import Settings
from ledger.core.events import StopHookDecided, TurnStarted
from ledger.hooks.decisions import MSG_NO_STAMP, read_input
from ledger.hooks.report import StopHookCounts
from ledger.service import Actor, Ledger
from ledger.sessions.gate import MSG_STORE_DOWN
from tests.conftest import LedgerFactory
from tests.e2e.test_http import running

ROOT = Path(__file__).resolve().parents[2]
ALICE = Actor("alice", "mcp")
PROMPT = {
    "session_id": "abc123",
    "transcript_path": "/home/u/.claude/projects/p/00893aaf.jsonl",
    "cwd": "/home/u/p",
    "permission_mode": "default",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "Write a function to calculate the factorial of a number",
}
STOP = {
    "session_id": "abc123",
    "transcript_path": "~/.claude/projects/p/00893aaf.jsonl",
    "permission_mode": "default",
    "hook_event_name": "Stop",
    "stop_hook_active": False,
}
CONTINUING = {**STOP, "stop_hook_active": True}


def hook(
    home: Path,
    url: str,
    which: str,
    stdin: dict[str, Any] | str,
    *extra: str,
    agent: str | None = "alice",
    environment: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any] | None]:
    """Run the hook as the client does; its exit code and the JSON answer on stdout (``None``: empty stdout)."""
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_AGENT"} | (environment or {})
    env["PYTHONPATH"] = str(ROOT)
    args = ["--home", str(home), "--db", url, "hook", which, *(["--agent", agent] if agent else []), *extra]
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    done = subprocess.run(
        [sys.executable, "-m", "api", *args], input=text.encode(), capture_output=True, cwd=ROOT, env=env, timeout=120
    )
    out = done.stdout.decode().strip()
    assert done.stderr.decode() == "", done.stderr.decode()
    return done.returncode, json.loads(out) if out else None


def stamp(ledger: Ledger, who: Actor = ALICE) -> None:
    sid = ledger.clock_in(who, "dev").session_id
    ledger.search(who, sid, "factorial")
    assert ledger.assert_compliance(who, sid).status == "PASS"


def counts(ledger: Ledger, agent: str = "alice") -> StopHookCounts:
    [row] = ledger.compliance_report(agent).agents
    return row.stop_hook


def test_a_stop_is_blocked_until_the_agent_earns_a_stamp_after_the_users_prompt(
    make_ledger: LedgerFactory, tmp_path: Path, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    stamp(ledger)  # earned before the turn: it does not count for it
    prompted = hook(tmp_path, db_url, "user-prompt-submit", PROMPT)
    held = hook(tmp_path, db_url, "stop", STOP)
    stamp(ledger)
    allowed = hook(tmp_path, db_url, "stop", CONTINUING)
    assert prompted == (0, None)
    assert held == (0, {"decision": "block", "reason": MSG_NO_STAMP})
    assert allowed == (0, None)
    assert counts(ledger) == StopHookCounts(turns_started=1, stops_blocked=1, stops_allowed=1)
    recorded = list(ledger.store.iter_events(types=[TurnStarted.type_name, StopHookDecided.type_name]))
    assert {(r.stream, r.agent, r.meta["source"]) for r in recorded} == {("turns:alice:abc123", "alice", "cli")}
    assert [getattr(r.event, "outcome", "turn") for r in recorded] == ["turn", "blocked", "allowed"]


def test_the_loop_guard_lets_the_next_stop_through_without_a_stamp_and_records_it(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    url = str(ledger.store.engine.url)
    hook(tmp_path, url, "user-prompt-submit", PROMPT)
    stamp(ledger, Actor("bob", "mcp"))  # another agent's stamp opens no gate for alice
    held = hook(tmp_path, url, "stop", STOP)
    code, guarded = hook(tmp_path, url, "stop", CONTINUING)
    assert held[1] is not None and held[1]["decision"] == "block"
    assert code == 0 and guarded is not None and "decision" not in guarded and "loop guard" in guarded["systemMessage"]
    assert counts(ledger) == StopHookCounts(turns_started=1, stops_blocked=1, loop_guard_passes=1)


def test_the_agent_comes_from_the_command_line_never_from_the_hooks_json(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    url = str(ledger.store.engine.url)
    stamp(ledger, Actor("mallory", "mcp"))
    hook(tmp_path, url, "user-prompt-submit", {**PROMPT, "agent": "mallory"})
    held = hook(tmp_path, url, "stop", {**STOP, "agent": "mallory", "agent_name": "mallory"})
    assert held[1] is not None and held[1]["decision"] == "block"
    assert counts(ledger) == StopHookCounts(turns_started=1, stops_blocked=1)
    assert counts(ledger, "mallory") == StopHookCounts()


def test_extra_missing_and_malformed_input_always_gets_an_answer_and_is_recorded(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    url = str(ledger.store.engine.url)
    newer = {**STOP, "cwd": "/p", "last_assistant_message": "Done.", "background_tasks": [], "session_crons": []}
    inputs: list[dict[str, Any] | str] = [newer, "{not json", "", "[1]", {"hook_event_name": "Stop"}]
    stops = [hook(tmp_path, url, "stop", given) for given in inputs]
    prompts = [hook(tmp_path, url, "user-prompt-submit", given) for given in ("{not json", {"prompt": "hi"})]
    assert all(code == 0 and out is not None and out["decision"] == "block" for code, out in stops)
    assert prompts == [(0, None), (0, None)]
    problems = [
        r.event.input_problem
        for r in ledger.store.iter_events(types=[TurnStarted.type_name, StopHookDecided.type_name])
        if isinstance(r.event, TurnStarted | StopHookDecided)
    ]
    assert problems == [
        None,
        "stdin is not JSON",
        "no JSON on stdin",
        "stdin is JSON but not an object (list)",
        "no session_id; no stop_hook_active (taken as false)",
        "stdin is not JSON",
        "no session_id",
    ]


def test_an_unreachable_store_fails_closed_for_a_stop_and_never_blocks_a_prompt(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    make_ledger()  # the keys exist; the database named below does not answer
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens on it: connections are refused
    down = f"postgresql://postgres@127.0.0.1:{port}/ledger"
    held = hook(tmp_path, down, "stop", STOP)
    guarded = hook(tmp_path, down, "stop", CONTINUING)
    prompted = hook(tmp_path, down, "user-prompt-submit", PROMPT)
    assert held[0] == 0 and held[1] is not None and held[1]["decision"] == "block"
    assert held[1]["reason"].startswith(MSG_STORE_DOWN) and "unreachable" in held[1]["systemMessage"]
    assert guarded[0] == 0 and guarded[1] is not None and "decision" not in guarded[1]
    assert "nothing was recorded" in guarded[1]["systemMessage"]
    assert prompted[0] == 0 and prompted[1] is not None and set(prompted[1]) == {"systemMessage"}


def test_a_ledger_that_does_not_answer_by_the_deadline_is_a_block(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    make_ledger()
    with socket.socket() as silent:  # accepts the connection (backlog) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"postgresql://postgres@127.0.0.1:{silent.getsockname()[1]}/ledger"
        code, answer = hook(tmp_path, url, "stop", STOP, "--deadline", "0.5")
    assert code == 0 and answer is not None and answer["decision"] == "block"
    assert "no answer within 0.5 s" in answer["reason"]


def test_a_hook_without_an_agent_holds_the_stop_and_lets_the_prompt_through(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    url = str(ledger.store.engine.url)
    held = hook(tmp_path, url, "stop", STOP, agent=None)
    prompted = hook(tmp_path, url, "user-prompt-submit", PROMPT, agent=None)
    assert held[1] is not None and held[1]["decision"] == "block" and "--agent" in held[1]["reason"]
    assert prompted[0] == 0 and prompted[1] is not None and "--agent" in prompted[1]["systemMessage"]


def test_settings_that_are_not_valid_hold_the_stop_and_let_the_prompt_through(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    url, broken = str(ledger.store.engine.url), {"LEDGER_PORT": "not-a-port"}
    held = hook(tmp_path, url, "stop", STOP, environment=broken)
    prompted = hook(tmp_path, url, "user-prompt-submit", PROMPT, environment=broken)
    assert held[0] == 0 and held[1] is not None and held[1]["decision"] == "block"
    assert "port" in held[1]["reason"]
    assert prompted[0] == 0 and prompted[1] is not None and "port" in prompted[1]["systemMessage"]


def test_the_compliance_report_shows_hook_decisions_over_rest_and_the_cli(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    who = Actor("alice", "cli")
    ledger.turn_started(who, "claude-code", read_input(json.dumps(PROMPT), "UserPromptSubmit"))
    ledger.stop_hook(who, "claude-code", read_input(json.dumps(STOP), "Stop"))
    ledger.stop_hook(who, "claude-code", read_input(json.dumps(CONTINUING), "Stop"))
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base) as http:
        rest = http.get("/reports/compliance", params={"agent": "alice"}).json()
    table = CliRunner().invoke(
        app, ["--home", str(tmp_path), "report", "compliance"], terminal_width=80, env={"NO_COLOR": "1"}
    )
    assert rest["agents"][0]["stop_hook"] == {
        "turns_started": 1,
        "stops_blocked": 1,
        "stops_allowed": 0,
        "loop_guard_passes": 1,
    }
    assert "stop hooks" in table.stdout and "loop-guard" in table.stdout
    row = [line for line in table.stdout.splitlines() if "alice" in line][-1]
    assert row.split()[-4:] == ["1", "1", "0", "1"]
