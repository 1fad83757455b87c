"""The one door: adapters (every module under ``api/``) import of ``ledger`` only the façade (``ledger.service``),
the composition root (``ledger.compose``), a capability's read shapes (``ledger.<capability>.report``) and the
ground floor (``ledger.core`` and below it), as docs/ARCHITECTURE.md says.

Read from the source with ``ast`` (nothing is imported); every import counts, at module level, inside a function or
under ``if TYPE_CHECKING:``, and ``from ledger import x`` names ``ledger.x``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
THE_DOOR = re.compile(r"ledger\.(service|compose|core)(\..+)?|ledger\.[a-z_]+\.report")
HINT = (
    "an adapter reaches the ledger through ledger.service (the façade), ledger.compose (the composition root), "
    "ledger.<capability>.report (read shapes and the constants of the interface) or ledger.core: name the command "
    "on the façade, or publish the shape or constant in the capability's report module"
)


def past_the_door(source: str) -> list[tuple[int, str]]:
    """``(line, statement)`` for every import in ``source`` of a part of ``ledger`` an adapter may not import, in
    line order. A name imported from a package counts as its submodule: ``from ledger.sessions import report`` goes
    through the door, ``from ledger.sessions import gate`` does not, nor does ``from ledger import kernel``."""
    wrong = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_ledger(alias.name) and not THE_DOOR.fullmatch(alias.name):
                    wrong.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _is_ledger(node.module or ""):
            module = node.module or ""
            through = THE_DOOR.fullmatch(module) or all(
                THE_DOOR.fullmatch(f"{module}.{alias.name}") for alias in node.names
            )
            if not through:
                wrong.append((node.lineno, f"from {module} import {', '.join(a.name for a in node.names)}"))
    return sorted(wrong)


def _is_ledger(module: str) -> bool:
    return module == "ledger" or module.startswith("ledger.")


def test_adapters_go_through_the_door() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {statement}"
        for path in sorted((ROOT / "api").rglob("*.py"))
        for line, statement in past_the_door(path.read_text(encoding="utf-8"))
    ]
    assert not found, "adapters importing past the door (" + HINT + "):\n" + "\n".join(found)


def facade_parts() -> set[str]:
    """The attributes of ``Ledger`` that hold a capability's handlers, the grants or the kernel (``self.brain =
    BrainCommands(...)``), read from ledger/service.py."""
    tree = ast.parse((ROOT / "ledger" / "service.py").read_text(encoding="utf-8"))
    parts = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
            made = node.value.func.id
            if made.endswith("Commands") or made in ("Kernel", "SessionGrants"):
                parts |= {t.attr for t in node.targets if isinstance(t, ast.Attribute)}
    return parts


def around_the_facade(source: str, parts: set[str]) -> list[tuple[int, str]]:
    """``(line, expression)`` for every use of a façade's part in ``source``: ``ledger.brain.ask``,
    ``tools.ledger.memory.recall`` — a command reached around the façade instead of named on it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in parts:
            owner = node.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if name == "ledger":
                found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_adapters_call_commands_on_the_facade_not_on_its_parts() -> None:
    parts = facade_parts()
    assert {"brain", "memory", "kernel", "grants"} <= parts  # the reading of service.py still finds them
    found = [
        f"{path.relative_to(ROOT)}:{line}: {expression}"
        for path in sorted((ROOT / "api").rglob("*.py"))
        for line, expression in around_the_facade(path.read_text(encoding="utf-8"), parts)
    ]
    assert not found, "commands reached around the façade (name them on ledger.service.Ledger):\n" + "\n".join(found)


# --- the checker itself, on made-up sources ----------------------------------------------------------------------


def test_the_door_lets_the_facade_the_root_the_reports_and_the_ground_floor_through() -> None:
    source = (
        "from ledger.service import Ledger\n"
        "from ledger.compose import compose\n"
        "from ledger.sessions.report import SessionInfo\n"
        "from ledger.sessions import report\n"
        "from ledger import service, compose\n"
        "from ledger.core.errors import InvalidInput\n"
        "from ledger.core import clock\n"
        "import ledger.core.tlog.note\n"
        "from ledgers.x import y\n"
        "from . import sibling\n"
    )
    assert past_the_door(source) == []


def test_every_import_past_the_door_is_named_with_its_line() -> None:
    source = (
        "from ledger.sessions.gate import GATE_CLOSED\n"  # a capability's internal module
        "from ledger import kernel\n"  # the package form
        "import ledger.workflow.table\n"  # the plain form
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ledger.memory.recall import FRAMES\n"  # type-checking imports count too
        "def f():\n"
        "    from ledger.audit import checkpoints\n"  # so do imports inside functions
        "from ledger.sessions import report, gate\n"  # one good name does not excuse a bad one
        "from ledger.reporting.x import y\n"  # report only as a capability's module
        "import ledger\n"  # the package itself is not the door
    )
    assert past_the_door(source) == [
        (1, "from ledger.sessions.gate import GATE_CLOSED"),
        (2, "from ledger import kernel"),
        (3, "import ledger.workflow.table"),
        (6, "from ledger.memory.recall import FRAMES"),
        (8, "from ledger.audit import checkpoints"),
        (9, "from ledger.sessions import report, gate"),
        (10, "from ledger.reporting.x import y"),
        (11, "import ledger"),
    ]


def test_a_command_reached_around_the_facade_is_named() -> None:
    source = (
        "answer = tools.ledger.brain.ask(who, prompt)\n"
        "ledger.memory.recall(who)\n"
        "ledger.ask_brain(who, prompt)\n"  # named on the façade: fine
        "self.memory.recall(who)\n"  # not the ledger's
        "head = ledger.store.head()\n"  # the façade's own property
    )
    assert around_the_facade(source, {"brain", "memory"}) == [
        (1, "tools.ledger.brain"),
        (2, "ledger.memory"),
    ]
