"""The public surface of the ledger as one JSON document: the MCP tool, prompt and resource lists with their
schemas, the OpenAPI document and every ``--help`` text of the command line.

``tests/integration/test_surface.py`` compares it with ``tests/golden/surface.json``, so a change that should
move nothing (a refactor) proves it moved nothing, and one that should (a new tool, a new option) shows exactly
what it changed in the diff of the golden file. Rewrite the golden file after a deliberate change with::

    .venv/bin/python -m tests.surface --write
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import typer.main
from mcp import Client
from typer.testing import CliRunner

GOLDEN = Path(__file__).parent / "golden" / "surface.json"


def _mcp_surface(ledger: Any) -> dict[str, Any]:
    from api.mcp.server import build_mcp

    async def listing() -> dict[str, Any]:
        async with Client(build_mcp(ledger, agent="surface")) as client:
            tools = await client.list_tools()
            prompts = await client.list_prompts()
            resources = await client.list_resources()
            templates = await client.list_resource_templates()
        return {
            "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools.tools],
            "prompts": [p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in prompts.prompts],
            "resources": [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in resources.resources],
            "resource_templates": [
                r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in templates.resource_templates
            ],
        }

    return anyio.run(listing)


def _help_texts() -> dict[str, str]:
    from api.cli import app

    root = typer.main.get_command(app)
    runner = CliRunner()
    texts: dict[str, str] = {}

    def walk(command: Any, path: list[str]) -> None:
        result = runner.invoke(app, [*path, "--help"], terminal_width=100, env={"COLUMNS": "100", "NO_COLOR": "1"})
        texts[" ".join(["compliance-ledger", *path])] = result.output
        for name, sub in getattr(command, "commands", {}).items():  # in the order --help lists them
            walk(sub, [*path, name])

    walk(root, [])
    return texts


def surface() -> dict[str, Any]:
    """The surface, built on a fresh SQLite ledger in a temporary directory."""
    from api.bootstrap import initialise
    from api.rest.app import build_app
    from api.settings import Settings

    with tempfile.TemporaryDirectory() as home:
        settings = Settings(home=Path(home), database_url=f"sqlite:///{Path(home) / 'ledger.db'}")
        ledger, _ = initialise(settings)
        try:
            return {
                "mcp": _mcp_surface(ledger),
                "openapi": build_app(ledger, settings).openapi(),
                "cli": _help_texts(),
            }
        finally:
            ledger.store.dispose()


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"rewrite {GOLDEN}")
    args = parser.parse_args()
    text = render(surface())
    if args.write:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
        print(f"wrote {GOLDEN} ({len(text)} characters)")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
