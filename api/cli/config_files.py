"""Merging an entry into a client's JSON or TOML configuration file: read it (refusing one that does not parse,
which is then left alone), change only our entry, and write it back atomically with a backup of what was there.

A file already holding exactly our entry is not written at all, so running ``connect --write`` again changes
nothing. An entry of the same name that differs is replaced only when asked (``--force``).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ledger.core.errors import Conflict

Status = Literal["created", "updated", "unchanged"]


@dataclass(frozen=True)
class Change:
    """What merging did to one file."""

    path: Path
    status: Status
    backup: Path | None = None


def _unreadable(path: Path, what: str, problem: str) -> Conflict:
    return Conflict(
        f"{path} is not valid {what} ({problem}); nothing was written",
        "fix the file (or move it away) and run the command again, or add the entry by hand",
    )


def _read_text(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _unreadable(path, "UTF-8 text", str(exc)) from exc


def backup_path(path: Path) -> Path:
    """``FILE.bak``, or the first of ``FILE.bak.1``, ``FILE.bak.2``, … not taken: no backup is ever overwritten."""
    candidate = path.with_name(path.name + ".bak")
    n = 0
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.bak.{n}")
    return candidate


def _write(path: Path, text: str, existed: bool) -> Path | None:
    """Write ``text`` atomically (same directory, then rename), keeping the old file's mode; back it up first."""
    backup = None
    if existed:
        backup = backup_path(path)
        shutil.copy2(path, backup)
        mode = stat.S_IMODE(path.stat().st_mode)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup


def _table(parent: Mapping[str, Any], key: str, path: Path, where: str) -> Any:
    value = parent.get(key)
    if value is not None and not isinstance(value, dict):
        raise Conflict(
            f"{where}{key!r} in {path} is a {type(value).__name__}, not an object; nothing was written",
            "fix the file by hand, then run the command again",
        )
    return value


def _different(path: Path, what: str, name: str) -> Conflict:
    return Conflict(
        f"{path} already has {what} {name!r} with other settings; nothing was written",
        "run again with --force to replace it (a backup is kept), or with --name to add another entry",
    )


# --- JSON -------------------------------------------------------------------------------------------------------


def _read_json(path: Path) -> tuple[dict[str, Any], bool]:
    text = _read_text(path)
    if text is None or not text.strip():
        return {}, text is not None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise _unreadable(path, "JSON", str(exc)) from exc
    if not isinstance(doc, dict):
        raise _unreadable(path, "JSON", f"the top level is a {type(doc).__name__}, not an object")
    return doc, True


def _merge_json(path: Path, change: Callable[[dict[str, Any]], bool]) -> Change:
    doc, existed = _read_json(path)
    if not change(doc):
        return Change(path, "unchanged")
    backup = _write(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n", existed)
    return Change(path, "updated" if existed else "created", backup)


def merge_json_server(path: Path, key: str, name: str, entry: dict[str, Any], *, force: bool) -> Change:
    """Put ``entry`` at ``doc[key][name]`` (``mcpServers`` or ``servers``), every other key left as it was."""

    def change(doc: dict[str, Any]) -> bool:
        servers = _table(doc, key, path, "")
        if servers is None:
            servers = doc[key] = {}
        if name in servers:
            if servers[name] == entry:
                return False
            if not force:
                raise _different(path, "an MCP server", name)
        servers[name] = entry
        return True

    return _merge_json(path, change)


def merge_hooks(path: Path, wanted: Mapping[str, tuple[str, dict[str, Any]]], *, force: bool) -> Change:
    """Install each hook ``wanted[event] = (subcommand, hook)`` into a Claude Code settings file's ``hooks``.

    A hook already running ``compliance-ledger hook SUBCOMMAND`` with exactly these settings is left alone; one
    with other options is replaced only with ``force``; every other hook and key stays as it was."""
    from api.cli.clients import is_our_hook

    def change(doc: dict[str, Any]) -> bool:
        hooks = _table(doc, "hooks", path, "")
        if hooks is None:
            hooks = doc["hooks"] = {}
        changed = False
        for event, (subcommand, hook) in wanted.items():
            groups = hooks.setdefault(event, [])
            if not isinstance(groups, list):
                raise Conflict(
                    f"hooks.{event} in {path} is not a list; nothing was written",
                    "fix the file by hand, then run again",
                )
            ours = [
                (group, h)
                for group in groups
                if isinstance(group, dict) and isinstance(group.get("hooks"), list)
                for h in group["hooks"]
                if isinstance(h, dict) and is_our_hook(h.get("command"), subcommand)
            ]
            if any(h == hook for _, h in ours) and len(ours) == 1:
                continue
            if ours and not force:
                raise _different(path, f"a {event} hook running", f"compliance-ledger hook {subcommand}")
            for group, h in ours:  # --force: ours replaced by the one wanted, in the first group that had one
                group["hooks"].remove(h)
            if ours:
                ours[0][0]["hooks"].append(hook)
            else:
                groups.append({"hooks": [hook]})
            hooks[event] = [g for g in groups if not (isinstance(g, dict) and g.get("hooks") == [])]
            changed = True
        return changed

    return _merge_json(path, change)


# --- TOML (Codex) -----------------------------------------------------------------------------------------------


def merge_toml_server(path: Path, key: str, name: str, entry: dict[str, Any], *, force: bool) -> Change:
    """Put ``entry`` in the table ``[key.name]`` with tomlkit, which keeps every other line, comment included."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError
    from tomlkit.items import InlineTable

    text = _read_text(path)
    try:
        doc = tomlkit.parse(text or "")
    except (TOMLKitError, ValueError) as exc:
        raise _unreadable(path, "TOML", str(exc)) from exc
    servers = _table(doc, key, path, "")
    if servers is not None and name in servers:
        current = servers[name]
        if hasattr(current, "unwrap") and current.unwrap() == entry:
            return Change(path, "unchanged")
        if not force:
            raise _different(path, "an MCP server", name)
        del servers[name]
    if servers is None:
        servers = doc[key] = tomlkit.table(is_super_table=True)
    if isinstance(servers, InlineTable):  # `mcp_servers = { ... }` on one line: ours joins it there
        inline = tomlkit.inline_table()
        inline.update(entry)
        servers[name] = inline
    else:
        table = tomlkit.table()
        for k, v in entry.items():
            table[k] = v
        table.add(tomlkit.nl())
        servers[name] = table
    backup = _write(path, tomlkit.dumps(doc).rstrip() + "\n", text is not None)
    return Change(path, "created" if text is None else "updated", backup)


def server_snippet(key: str, name: str, entry: dict[str, Any], *, toml: bool) -> str:
    """The text to merge by hand: ``{key: {name: entry}}`` as JSON, or the ``[key.name]`` table as TOML."""
    if not toml:
        return json.dumps({key: {name: entry}}, indent=2, ensure_ascii=False)
    import tomlkit

    doc = tomlkit.document()
    servers = tomlkit.table(is_super_table=True)
    table = tomlkit.table()
    for k, v in entry.items():
        table[k] = v
    servers[name] = table
    doc[key] = servers
    return tomlkit.dumps(doc).rstrip()
