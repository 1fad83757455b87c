"""docs/ARCHITECTURE.md's worked example works: its code blocks, run in order against a real ledger and a real
MCP client, add a report and a tool that answer what the example says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from api.mcp.server import EXTENSIONS, build_mcp
from tests.conftest import LedgerFactory
from tests.mcp_support import call

DOC = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"


def example_blocks() -> list[str]:
    """The ```python blocks of the section ``## Worked example…``, in order."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Worked example") :]
    following = section.find("\n## ", 1)
    section = section if following < 0 else section[:following]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_worked_example_adds_a_report_and_its_tool(make_ledger: LedgerFactory) -> None:
    report, commands, facade, tool = example_blocks()
    ledger = make_ledger()
    namespace: dict[str, Any] = {"__name__": "worked_example"}
    exec(compile(report, f"{DOC}:report", "exec"), namespace)
    exec(compile(commands, f"{DOC}:commands", "exec"), namespace)
    exec(compile(facade, f"{DOC}:facade", "exec"), {**namespace, "self": ledger})  # the lines of Ledger.__init__
    exec(compile(tool, f"{DOC}:tool", "exec"), namespace)

    server = build_mcp(
        ledger, agent="example", open_default_session=True, extensions=[*EXTENSIONS, namespace["register"]]
    )

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        async with Client(server) as client:
            first = await call(client, "memory_search", {"query": "what matters here"})
            await call(client, "memory_search", {"query": "and what else"})
            answer = await call(client, "session_searches")
            names = [t.name for t in (await client.list_tools()).tools]
        return first, answer, names

    first, answer, names = anyio.run(scenario)
    assert "session_searches" in names
    assert answer == {"agent": "example", "sessions": {first["session_id"]: 2}}
    # another agent's searches are not counted, and the façade names the command
    other = ledger.clock_in(namespace["Actor"]("someone-else", "cli"), "agent")
    ledger.search(namespace["Actor"]("someone-else", "cli"), other.session_id, "anything")
    assert ledger.searches_per_session(namespace["Actor"]("example", "cli")).sessions == {first["session_id"]: 2}
