"""Helpers for Odyssean Anchor tests: a git command and a valid OA5 proof for the `project` fixture."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
    )


def proof(role: str = "dev", phase: str = "B1", artifact: str = "src/app.py", tensions: int = 2) -> str:
    lines = [
        f"    L{n}::[keep the API stable]⇌CTX:src/app.py[line {n} is the entry point]→TRIGGER[add a test first]"
        for n in range(1, tensions + 1)
    ]
    return "\n".join(
        [
            "===ODYSSEAN_ANCHOR_PROOF::v5.0===",
            "IDENTITY:",
            f"  ROLE::{role}",
            "  COGNITION::LOGOS",
            "  AUTHORITY::RESPONSIBLE[build_phase_execution]",
            "CONTEXT:",
            f"  PHASE::{phase}",
            "  BRANCH::main",
            "  FILES::1",
            "PROOF:",
            "  TENSIONS:",
            *lines,
            "  COMMIT:",
            f"    ARTIFACT::{artifact}",
            "    GATE::pytest tests/test_app.py",
            "===END_ODYSSEAN_ANCHOR_PROOF===",
        ]
    )
