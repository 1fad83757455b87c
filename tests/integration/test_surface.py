"""The MCP tool list and schemas, the OpenAPI document and every ``--help`` text equal the golden copy.

A refactor proves with this test that it changed no interface; a deliberate change rewrites the golden file
(``.venv/bin/python -m tests.surface --write``) and the diff of ``tests/golden/surface.json`` shows it.
"""

from __future__ import annotations

import difflib

from tests.surface import GOLDEN, render, surface


def test_surface_equals_the_golden_copy() -> None:
    expected = GOLDEN.read_text(encoding="utf-8")
    actual = render(surface())
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True), actual.splitlines(keepends=True), "golden", "now", n=2
            )
        )
        raise AssertionError(
            f"the public surface changed; if that was meant, run `python -m tests.surface --write`\n{diff[:6000]}"
        )
