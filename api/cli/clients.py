"""The MCP clients ``connect`` configures: where each keeps its server list per scope, and the shape of one entry.

Sources (formats as each client documents them): Claude Code code.claude.com/docs/en/mcp and /hooks, Claude
Desktop modelcontextprotocol.io's quickstart, Cursor cursor.com/docs/mcp, VS Code
code.visualstudio.com/docs/copilot/reference/mcp-configuration, Codex github.com/openai/codex docs/config.md.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Scope = Literal["project", "user"]
HOOK_TIMEOUT_SECONDS = 30  # the client's limit on our hook; the hook answers by its own, shorter, deadline


def _config_home(home: Path) -> Path:
    """Where per-user application data lives: ``~/Library/Application Support``, ``%APPDATA%`` or XDG's."""
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def _codex_home(home: Path) -> Path:
    return Path(os.environ["CODEX_HOME"]) if os.environ.get("CODEX_HOME") else home / ".codex"


PathOf = Callable[[Path, Path], Path]  # (project directory, home directory) -> the file


@dataclass(frozen=True)
class Client:
    """One client: its configuration file per scope, the key its servers live under and an entry's shape."""

    name: str
    title: str
    paths: Mapping[Scope, PathOf]
    key: str
    toml: bool = False
    typed: bool = False  # the entry says "type": "stdio"
    after: str = ""  # what the person does after the file is written
    default_scope: Scope = "project"

    def path(self, scope: Scope, project: Path, home: Path) -> Path:
        return self.paths[scope](project, home)

    def entry(self, command: list[str]) -> dict[str, Any]:
        """The server entry that runs ``command`` (an absolute executable and its arguments) over stdio."""
        typed: dict[str, Any] = {"type": "stdio"} if self.typed else {}
        return {**typed, "command": command[0], "args": command[1:]}


CLIENTS: dict[str, Client] = {
    c.name: c
    for c in (
        Client(
            "claude-code",
            "Claude Code",
            {"project": lambda p, h: p / ".mcp.json", "user": lambda p, h: h / ".claude.json"},
            "mcpServers",
            typed=True,
            after="Claude Code asks once to approve a project's .mcp.json servers; `/mcp` lists them.",
        ),
        Client(
            "claude-desktop",
            "Claude Desktop",
            {"user": lambda p, h: _config_home(h) / "Claude" / "claude_desktop_config.json"},
            "mcpServers",
            after="Restart Claude Desktop to load the server.",
            default_scope="user",
        ),
        Client(
            "cursor",
            "Cursor",
            {"project": lambda p, h: p / ".cursor" / "mcp.json", "user": lambda p, h: h / ".cursor" / "mcp.json"},
            "mcpServers",
            after="Cursor lists the server under Settings > MCP.",
        ),
        Client(
            "vscode",
            "VS Code",
            {
                "project": lambda p, h: p / ".vscode" / "mcp.json",
                "user": lambda p, h: _config_home(h) / "Code" / "User" / "mcp.json",
            },
            "servers",
            typed=True,
            after="VS Code offers to start the server from mcp.json (or: MCP: List Servers).",
        ),
        Client(
            "codex",
            "Codex",
            {
                "user": lambda p, h: _codex_home(h) / "config.toml",
                "project": lambda p, h: p / ".codex" / "config.toml",
            },
            "mcp_servers",
            toml=True,
            after="Codex reads a project's .codex/config.toml only in a trusted project.",
            default_scope="user",
        ),
    )
}
HOOK_CLIENT = "claude-code"  # the one client whose documented Stop / UserPromptSubmit hooks ``--hooks`` installs
HOOK_SETTINGS: Mapping[Scope, PathOf] = {
    "project": lambda p, h: p / ".claude" / "settings.json",
    "user": lambda p, h: h / ".claude" / "settings.json",
}
# Claude Code hook event -> the ``compliance-ledger hook`` subcommand that answers it.
HOOK_EVENTS = {"UserPromptSubmit": "user-prompt-submit", "Stop": "stop"}


def launcher() -> list[str]:
    """The absolute command that runs this command line: the console script beside this Python (a venv, pipx),
    else the one on ``PATH``, else this Python with ``-m api``."""
    script = "compliance-ledger.exe" if sys.platform == "win32" else "compliance-ledger"
    beside = Path(sys.executable).parent / script
    if beside.is_file():
        return [str(beside.absolute())]
    found = shutil.which("compliance-ledger")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "api"]


def ledger_options(home: Path, database_url: str | None) -> list[str]:
    """The root options that point a command at this ledger."""
    return ["--home", str(home), *(["--db", database_url] if database_url else [])]


def server_command(base: list[str], ledger: list[str], agent: str) -> list[str]:
    return [*base, *ledger, "mcp", "--agent", agent]


def hook_command(base: list[str], ledger: list[str], agent: str, subcommand: str) -> str:
    """The shell command line of one hook (Claude Code runs ``command`` through a shell)."""
    return shlex.join([*base, *ledger, "hook", subcommand, "--agent", agent])


def hook_entry(command: str) -> dict[str, Any]:
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}


def is_our_hook(command: Any, subcommand: str) -> bool:
    """Whether a configured hook command runs ``compliance-ledger hook SUBCOMMAND`` (any options, any path)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    ours = bool(words) and (Path(words[0]).name.startswith("compliance-ledger") or words[1:3] == ["-m", "api"])
    return ours and any(w == "hook" and words[i + 1 : i + 2] == [subcommand] for i, w in enumerate(words))
