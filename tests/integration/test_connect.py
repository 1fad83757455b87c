"""``compliance-ledger connect``: each client's documented file, printed and merged into real files under a
temporary HOME and project, idempotently, with backups, and refusing what it must not overwrite."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from api.cli import app
from ledger.hooks.decisions import MSG_NO_STAMP

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ("claude-code", "claude-desktop", "cursor", "vscode", "codex")
# Where each client keeps its servers (Linux), written out here rather than taken from the code under test.
FILES = {
    ("claude-code", "project"): "project/.mcp.json",
    ("claude-code", "user"): "home/.claude.json",
    ("claude-desktop", "user"): "home/.config/Claude/claude_desktop_config.json",
    ("cursor", "project"): "project/.cursor/mcp.json",
    ("cursor", "user"): "home/.cursor/mcp.json",
    ("vscode", "project"): "project/.vscode/mcp.json",
    ("vscode", "user"): "home/.config/Code/User/mcp.json",
    ("codex", "user"): "home/.codex/config.toml",
    ("codex", "project"): "project/.codex/config.toml",
}
KEYS = {"vscode": "servers", "codex": "mcp_servers"}


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME and a project directory of their own (the current directory), and a ledger home beside them."""
    for name in ("home", "project", "ledger"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("XDG_CONFIG_HOME", "CODEX_HOME", "APPDATA", "LEDGER_AGENT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path / "project")
    return tmp_path


def said(text: str, err: str) -> bool:
    """Whether ``err`` says ``text`` (rich wraps long lines on stderr, paths included)."""
    return "".join(text.split()) in "".join(err.split())


def connect(place: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--home", str(place / "ledger"), "connect", *args])
    return result.exit_code, result.stdout, result.stderr


def servers(path: Path, client: str) -> dict[str, Any]:
    text = path.read_text()
    doc = tomllib.loads(text) if client == "codex" else json.loads(text)
    return dict(doc[KEYS.get(client, "mcpServers")])


def assert_our_entry(entry: dict[str, Any], client: str, place: Path, agent: str) -> None:
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists()
    assert entry["args"][-5:] == ["--home", str(place / "ledger"), "mcp", "--agent", agent]
    assert entry.get("type") == ("stdio" if client in ("claude-code", "vscode") else None)


@pytest.mark.parametrize("client", CLIENTS)
def test_without_write_the_config_is_printed_and_no_file_is_touched(place: Path, client: str) -> None:
    code, out, err = connect(place, client, "--agent", "ada")
    doc = tomllib.loads(out) if client == "codex" else json.loads(out)
    [(name, entry)] = doc[KEYS.get(client, "mcpServers")].items()
    assert code == 0 and name == "compliance-ledger"
    assert_our_entry(entry, client, place, "ada")
    assert "--write" in err
    assert not [p for p in (place / "home").rglob("*")] and not [p for p in (place / "project").rglob("*")]


@pytest.mark.parametrize(("client", "scope"), sorted(FILES))
def test_write_creates_the_clients_file_and_a_second_run_changes_nothing(place: Path, client: str, scope: str) -> None:
    path = place / FILES[(client, scope)]
    first = connect(place, client, "--scope", scope, "--write")
    written = path.read_bytes()
    second = connect(place, client, "--scope", scope, "--write")
    assert first[0] == 0 and f"created {path}" in first[1]
    assert_our_entry(servers(path, client)["compliance-ledger"], client, place, client)
    assert second[0] == 0 and f"unchanged {path}" in second[1]
    assert path.read_bytes() == written and sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_the_default_scope_is_the_project_file_or_the_only_one(place: Path) -> None:
    for client, scope in (("claude-code", "project"), ("cursor", "project"), ("vscode", "project"), ("codex", "user")):
        assert connect(place, client, "--write")[0] == 0
        assert (place / FILES[(client, scope)]).exists(), client
    assert connect(place, "claude-desktop", "--write")[0] == 0
    assert (place / FILES[("claude-desktop", "user")]).exists()


def test_other_servers_and_keys_stay_and_the_old_file_is_kept_as_a_backup(place: Path) -> None:
    path = place / "home/.claude.json"
    before = {
        "numStartups": 41,
        "projects": {"/srv/app": {"mcpServers": {"local-one": {"command": "x"}}, "allowedTools": []}},
        "mcpServers": {"other": {"type": "stdio", "command": "npx", "args": ["-y", "other"], "env": {"K": "v"}}},
        "théme": "dark",
    }
    path.write_text(json.dumps(before))
    path.chmod(0o600)
    code, out, _ = connect(place, "claude-code", "--scope", "user", "--write", "--agent", "ada")
    after = json.loads(path.read_text())
    backup = path.with_name(".claude.json.bak")
    assert code == 0 and f"backup: {backup}" in out
    assert {k: v for k, v in after.items() if k != "mcpServers"} == {
        k: v for k, v in before.items() if k != "mcpServers"
    }
    assert after["mcpServers"]["other"] == before["mcpServers"]["other"]
    assert list(after["mcpServers"]) == ["other", "compliance-ledger"]
    assert json.loads(backup.read_text()) == before
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_codex_keeps_every_other_line_comments_included(place: Path) -> None:
    path = place / "home/.codex/config.toml"
    path.parent.mkdir(parents=True)
    before = (
        '# my settings\nmodel = "o3"  # the default model\n\n[mcp_servers.other]\ncommand = "npx"\n'
        'args = ["-y", "other"]\n\n[mcp_servers.other.env]\nK = "v"\n\n[profiles.fast]\nmodel = "o4-mini"\n'
    )
    path.write_text(before)
    code, _, _ = connect(place, "codex", "--write", "--agent", "ada")
    text = path.read_text()
    doc = tomllib.loads(text)
    assert code == 0 and text.startswith(before.rstrip("\n").split("[profiles.fast]")[0])
    assert "# the default model" in text and doc["profiles"] == {"fast": {"model": "o4-mini"}}
    assert doc["mcp_servers"]["other"] == {"command": "npx", "args": ["-y", "other"], "env": {"K": "v"}}
    assert_our_entry(doc["mcp_servers"]["compliance-ledger"], "codex", place, "ada")
    assert path.with_name("config.toml.bak").read_text() == before
    assert connect(place, "codex", "--write", "--agent", "ada")[1].startswith("unchanged")


@pytest.mark.parametrize(
    ("client", "text", "problem"),
    [
        ("cursor", '{"mcpServers": {"a": 1},}', "is not valid JSON"),
        ("vscode", '// a comment\n{"servers": {}}', "is not valid JSON"),
        ("cursor", "[1, 2]", "the top level is a list"),
        ("cursor", '{"mcpServers": ["a"]}', "'mcpServers' in"),
        ("codex", "[mcp_servers\ncommand = 1", "is not valid TOML"),
        ("codex", 'mcp_servers = "none"', "'mcp_servers' in"),
    ],
)
def test_a_file_that_does_not_parse_is_never_overwritten(place: Path, client: str, text: str, problem: str) -> None:
    path = place / FILES[(client, "user" if client == "codex" else "project")]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    code, _, err = connect(place, client, "--write")
    assert code == 1 and said(problem, err) and said("nothing was written", err)
    assert path.read_text() == text and sorted(p.name for p in path.parent.iterdir()) == [path.name]


@pytest.mark.parametrize("client", ["cursor", "codex"])
def test_an_entry_of_the_same_name_that_differs_is_replaced_only_with_force(place: Path, client: str) -> None:
    path = place / FILES[(client, "user" if client == "codex" else "project")]
    connect(place, client, "--write", "--agent", "ada")
    first = path.read_text()
    refused = connect(place, client, "--write", "--agent", "bob")
    forced = connect(place, client, "--write", "--agent", "bob", "--force")
    again = connect(place, client, "--write", "--agent", "ada", "--force")
    assert refused[0] == 1 and "--force" in refused[2] and "--name" in refused[2]
    assert forced[0] == 0 and path.with_name(path.name + ".bak").read_text() == first
    assert again[0] == 0 and path.with_name(path.name + ".bak.1").exists()  # no backup is overwritten
    assert connect(place, client, "--write", "--agent", "bob", "--name", "ledger-bob")[0] == 0
    both = servers(path, client)
    assert both["compliance-ledger"]["args"][-1] == "ada" and both["ledger-bob"]["args"][-1] == "bob"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["windsurf"], "unknown client 'windsurf'"),
        (["claude-desktop", "--scope", "project"], "Claude Desktop has no project configuration"),
        (["cursor", "--scope", "global"], "scope 'global' is not a scope"),
        (["cursor", "--hooks"], "--hooks is for claude-code"),
        (["cursor", "--name", "a b"], "server name 'a b' is not valid"),
        (["cursor", "--agent", "x" * 65], "is not valid"),
    ],
)
def test_bad_requests_say_what_to_send_instead(place: Path, args: list[str], message: str) -> None:
    code, _, err = connect(place, *args, "--write")
    assert code == 2 and said(message, err) and "hint:" in err
    assert not [p for p in (place / "home").rglob("*")] and not [p for p in (place / "project").rglob("*")]


def test_unknown_client_lists_the_clients(place: Path) -> None:
    assert said("claude-code, claude-desktop, cursor, vscode, codex", connect(place, "windsurf")[2])


def test_hooks_are_installed_once_beside_other_hooks_and_settings(place: Path) -> None:
    path = place / "project/.claude/settings.json"
    path.parent.mkdir(parents=True)
    theirs = {"type": "command", "command": "/usr/bin/notify-send done"}
    before = {
        "permissions": {"allow": ["Bash(git status)"]},
        "hooks": {
            "Stop": [{"hooks": [theirs]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh"}]}],
        },
    }
    path.write_text(json.dumps(before))
    code, out, _ = connect(place, "claude-code", "--hooks", "--write", "--agent", "ada")
    after = json.loads(path.read_text())
    again = connect(place, "claude-code", "--hooks", "--write", "--agent", "ada")
    assert code == 0 and f"updated {path}" in out and f"created {place / 'project/.mcp.json'}" in out
    assert (
        after["permissions"] == before["permissions"] and after["hooks"]["PreToolUse"] == before["hooks"]["PreToolUse"]
    )
    assert after["hooks"]["Stop"][0] == {"hooks": [theirs]}
    [ours] = [h for g in after["hooks"]["Stop"][1:] for h in g["hooks"]]
    [prompt] = [h for g in after["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    assert ours["type"] == "command" and ours["command"].endswith("hook stop --agent ada") and ours["timeout"] == 30
    assert prompt["command"].endswith("hook user-prompt-submit --agent ada")
    assert again[0] == 0 and "unchanged" in again[1] and json.loads(path.read_text()) == after


def test_hooks_without_write_print_two_documents_each_whole_and_each_named_with_its_file(place: Path) -> None:
    command = [sys.executable, "-m", "api", "--home", str(place / "ledger"), "connect", "claude-code", "--hooks"]
    run: dict[str, Any] = {"text": True, "env": {**os.environ, "HOME": str(place / "home")}, "timeout": 120}
    apart = subprocess.run(command, capture_output=True, cwd=place / "project", **run)
    # as a terminal shows them: stderr and stdout on one stream, in the order written
    merged = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=place / "project", **run)

    assert apart.returncode == 0 and merged.returncode == 0, apart.stderr
    mcp_text, hooks_text = apart.stdout.split("\n\n")  # a blank line apart: each document can be copied alone
    [(name, entry)] = json.loads(mcp_text)["mcpServers"].items()
    assert name == "compliance-ledger" and entry["args"][-2:] == ["--agent", "claude-code"]
    assert set(json.loads(hooks_text)["hooks"]) == {"Stop", "UserPromptSubmit"}
    mcp_file, hooks_file = place / "project" / ".mcp.json", place / "project" / ".claude" / "settings.json"
    assert apart.stderr.splitlines() == [
        f"# Claude Code (1 of 2): merge this into {mcp_file} (or run again with --write)",
        f"# Claude Code hooks (2 of 2): merge this into {hooks_file} (or run again with --write)",
    ]
    first, second = apart.stderr.splitlines()
    assert merged.stdout == f"{first}\n{mcp_text}\n\n{second}\n{hooks_text}"  # each label just above its document
    assert not [p for p in (place / "project").rglob("*")]


def test_hooks_for_another_agent_are_replaced_only_with_force(place: Path) -> None:
    path = place / "home/.claude/settings.json"
    connect(place, "claude-code", "--scope", "user", "--hooks", "--write", "--agent", "ada")
    refused = connect(place, "claude-code", "--scope", "user", "--hooks", "--write", "--agent", "bob")
    forced = connect(place, "claude-code", "--scope", "user", "--hooks", "--write", "--agent", "bob", "--force")
    hooks = json.loads(path.read_text())["hooks"]
    assert refused[0] == 1 and "--force" in refused[2]
    assert forced[0] == 0
    for event in ("Stop", "UserPromptSubmit"):
        [hook] = [h for g in hooks[event] for h in g["hooks"]]
        assert hook["command"].endswith("--agent bob")


def test_the_written_hook_and_server_commands_run_as_the_client_runs_them(place: Path) -> None:
    assert CliRunner().invoke(app, ["--home", str(place / "ledger"), "init"]).exit_code == 0
    connect(place, "claude-code", "--hooks", "--write", "--agent", "ada")
    settings = json.loads((place / "project/.claude/settings.json").read_text())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    [stop] = [h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"]]
    stdin = json.dumps({"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": False})
    ran = subprocess.run(stop, shell=True, input=stdin.encode(), capture_output=True, env=env, timeout=120)
    assert ran.returncode == 0 and json.loads(ran.stdout)["decision"] == "block"
    assert json.loads(ran.stdout)["reason"].startswith(MSG_NO_STAMP)

    entry = json.loads((place / "project/.mcp.json").read_text())["mcpServers"]["compliance-ledger"]

    async def clock_in() -> dict[str, Any]:
        server = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
        async with Client(server) as client:
            result = await client.call_tool("clock_in", {"role": "dev"})
        assert result.structured_content is not None
        return result.structured_content

    import anyio

    assert anyio.run(clock_in)["agent"] == "ada"
