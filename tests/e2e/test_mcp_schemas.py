"""What a model reads before it calls anything is complete: ``tools/list`` and the resource lists, walked through a
real MCP client. Every parameter is described, every tool has a title and all four hints (``openWorldHint: false``),
every description is clean text, and the server names itself and says how to use it."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client

from api.mcp.server import build_mcp
from tests.conftest import LedgerFactory

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def listing(make_ledger: LedgerFactory) -> dict[str, Any]:
    async def walk() -> dict[str, Any]:
        async with Client(build_mcp(make_ledger(), agent="walker")) as client:
            return {
                "server": client.server_info,
                "instructions": client.instructions,
                "tools": (await client.list_tools()).tools,
                "resources": (await client.list_resources()).resources,
                "templates": (await client.list_resource_templates()).resource_templates,
                "prompts": (await client.list_prompts()).prompts,
            }

    return anyio.run(walk)


def unclean(text: str | None) -> str | None:
    """Why ``text`` is not clean text for a model to read, or None when it is."""
    if not text or not text.strip():
        return "it is empty"
    if text != text.strip():
        return "it starts or ends with whitespace"
    for line in text.splitlines():
        if line != line.strip():
            return f"a line carries indentation or trailing spaces: {line!r}"
    if "\n" in text.replace("\n\n", ""):
        return "a paragraph is broken over lines"
    return None


def problems_of(tools: list[Any]) -> list[str]:
    problems: list[str] = []
    for tool in tools:
        name = tool.name
        if not tool.title:
            problems.append(f"{name}: no title")
        if (why := unclean(tool.description)) is not None:
            problems.append(f"{name}: description is not clean text ({why})")
        hints = tool.annotations.model_dump(by_alias=True) if tool.annotations else {}
        missing = [h for h in HINTS if hints.get(h) is None]
        if missing:
            problems.append(f"{name}: annotations lack {missing}")
        if hints.get("openWorldHint") is not False:
            problems.append(f"{name}: openWorldHint is not false (every tool acts on this ledger alone)")
        if hints.get("readOnlyHint") and (hints.get("destructiveHint") or not hints.get("idempotentHint")):
            problems.append(f"{name}: a read-only tool must be non-destructive and idempotent")
        schema = tool.input_schema
        if schema.get("additionalProperties") is not False:
            problems.append(f"{name}: the input schema does not refuse unknown arguments")
        for param, prop in schema.get("properties", {}).items():
            if (why := unclean(prop.get("description"))) is not None:
                problems.append(f"{name}.{param}: description is missing or not clean text ({why})")
    return problems


def test_every_tool_has_a_title_all_four_hints_a_clean_description_and_described_parameters(
    make_ledger: LedgerFactory,
) -> None:
    found = listing(make_ledger)
    assert len(found["tools"]) >= 21
    assert problems_of(found["tools"]) == []


def test_the_walk_fails_on_an_undescribed_parameter_a_missing_hint_or_an_indented_description() -> None:
    from mcp.types import Tool, ToolAnnotations

    sloppy = Tool(
        name="sloppy",
        description="Does things.\n        Over two lines.",
        input_schema={"type": "object", "properties": {"x": {"type": "string"}}},
        annotations=ToolAnnotations(read_only_hint=True),
    )
    problems = problems_of([sloppy])
    assert any("no title" in p for p in problems)
    assert any("indentation" in p for p in problems)
    assert any("lack" in p and "openWorldHint" in p for p in problems)
    assert any("sloppy.x: description is missing" in p for p in problems)
    assert any("unknown arguments" in p for p in problems)


def test_every_resource_and_template_is_titled_described_and_json(make_ledger: LedgerFactory) -> None:
    found = listing(make_ledger)
    uris = {r.uri for r in found["resources"]} | {t.uri_template for t in found["templates"]}
    assert uris == {"ledger://reports/compliance", "ledger://checkpoints/latest", "ledger://memory/blocks/{block_id}"}
    for item in [*found["resources"], *found["templates"]]:
        assert item.title and unclean(item.description) is None, item
        assert item.mime_type == "application/json"
    for prompt in found["prompts"]:
        assert unclean(prompt.description) is None, prompt


def test_the_server_names_itself_and_says_how_to_use_it(make_ledger: LedgerFactory) -> None:
    found = listing(make_ledger)
    assert found["server"].name == "compliance-ledger"
    assert found["server"].title == "Compliance Ledger"
    assert "assert_compliance" in found["instructions"]


@pytest.mark.parametrize(
    ("tool", "hints"),
    [
        ("task_get", {"readOnlyHint": True}),
        ("verify_stamp", {"readOnlyHint": True}),
        ("memory_curate", {"readOnlyHint": False, "destructiveHint": True}),
        ("memory_search", {"readOnlyHint": False, "idempotentHint": False}),  # each search issues a new token
        ("memory_remember", {"destructiveHint": False, "idempotentHint": True}),  # a duplicate is recognised
    ],
)
def test_the_hints_say_what_a_call_does(make_ledger: LedgerFactory, tool: str, hints: dict[str, bool]) -> None:
    [found] = [t for t in listing(make_ledger)["tools"] if t.name == tool]
    assert found.annotations is not None
    assert {k: v for k, v in found.annotations.model_dump(by_alias=True).items() if k in hints} == hints
