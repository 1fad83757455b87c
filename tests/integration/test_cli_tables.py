"""Every table the command line prints fits an 80-column terminal without cutting a value: long agent names,
roles, reasons and titles fold onto more lines, ids stay whole on one line, and nothing ends in "…" but a
memory block's content (which ``memory list`` clips on purpose; ``memory show`` prints it whole)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.integration.test_enforcement_report import Clock, record_history

LONG_AGENT = "a-rather-long-agent-name-for-the-reviewer-bot"
OPERATOR = Actor("operator", "cli", admin=True)

# One process renders every command at COLUMNS=80 (rich reads the width when its console is made).
RENDER = """
import json, sys
from typer.testing import CliRunner
from api.cli import app
home, url, commands = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
runner = CliRunner()
print(json.dumps([runner.invoke(app, ["--home", home, "--db", url, *c]).stdout for c in commands]))
"""


def populate(ledger: Ledger, clock: Clock) -> tuple[str, str, str]:
    """Enforcement checks, sessions of agents with long names and roles, memories, keys (one revoked with a long
    reason) and a task with a long slug and title; the block, key and session ids to look for."""
    record_history(ledger, clock)
    for agent in ("alice", LONG_AGENT, "claude-code-on-workstation-42"):
        who = Actor(agent, "cli")
        sid = ledger.clock_in(who, "developer-with-a-long-role").session_id
        ledger.assert_compliance(who, sid)
        ledger.search(who, sid, "anything about tokens")
        ledger.assert_compliance(who, sid)
        block = ledger.remember(who, f"Refresh tokens rotate on every use; {agent} revokes the old one. " * 3, [], sid)
    key = ledger.issue_api_key(OPERATOR, LONG_AGENT)
    ledger.issue_api_key(OPERATOR, "bob", admin=True)
    ledger.revoke_api_key(OPERATOR, key.key_id, "leaked in a CI log that was public for two hours, rotate all")
    ledger.task_create(OPERATOR, "memory-gate-42-with-a-long-slug", "A title long enough to need two lines or more")
    return block.block_id, key.key_id, sid


def test_every_table_fits_80_columns_and_keeps_its_ids_whole(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    clock = Clock()
    ledger = make_ledger(clock=clock)
    block_id, key_id, session_id = populate(ledger, clock)
    commands = [
        ["report", "compliance"],
        ["report", "enforcement"],
        ["memory", "list", "--all"],
        ["memory", "show", block_id],
        ["keys", "list"],
        ["task", "list"],
        ["events"],
        ["doctor"],
        ["replay", "--block", block_id],
    ]
    url = str(ledger.store.engine.url)
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    run = subprocess.run(
        [sys.executable, "-c", RENDER, str(tmp_path), url, json.dumps(commands)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    outputs = dict(zip([" ".join(c[:2]) for c in commands], json.loads(run.stdout), strict=True))
    for command, text in outputs.items():
        assert text.strip(), f"{command} printed nothing"
        wide = [line for line in text.splitlines() if len(line) > 80]
        assert not wide, f"{command}: {wide}"
        if command != "memory list":
            assert "…" not in text, f"{command} cut a value:\n{text}"
    listed = outputs["memory list"].splitlines()
    assert all("…" not in line for line in listed if "blk_" in line)  # only the content lines are clipped
    assert f"{block_id} " in outputs["memory list"] and f"{key_id} " in outputs["keys list"]
    assert session_id in outputs["replay --block"]
    first_column = "".join(line.split()[0] for line in outputs["report compliance"].splitlines() if line.strip())
    assert LONG_AGENT in first_column  # folded onto two lines, every character kept
