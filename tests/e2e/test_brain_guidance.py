"""Seed 003's agent guidance: the ``brain_workflow`` MCP prompt carries the monitor skill's rules (the exact
sentence "If brain is unavailable, wait and retry. Do NOT skip."), the two DNA fields and rework clearing; it
agrees with the shipped workflow table, and README.md quotes it whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

from api.mcp.prompts import BRAIN_WORKFLOW_GUIDE
from api.mcp.server import build_mcp
from ledger.workflow.table import load_workflow
from tests.conftest import LedgerFactory

README = Path(__file__).resolve().parents[2] / "README.md"
SEED_RULE = "If brain is unavailable, wait and retry. Do NOT skip."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_brain_workflow_prompt_carries_the_seeds_monitor_skill_guidance(make_ledger: LedgerFactory) -> None:
    async with Client(build_mcp(make_ledger(), agent="dev-agent", open_default_session=True)) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        got = await client.get_prompt("brain_workflow")
    assert "brain_workflow" in listed and listed["brain_workflow"].description
    [message] = got.messages
    text = message.content.text  # type: ignore[union-attr]
    assert text == BRAIN_WORKFLOW_GUIDE
    assert text.startswith("MANDATORY Brain Operations\n")  # the seed: 'Change "When to use the brain" to ...'
    assert SEED_RULE in text
    for needle in ("memory_query_session", "memory_contribution_id", "query_brain", "contribute_to_brain"):
        assert needle in text
    assert "Rework clears the memory fields" in text and "must query the brain again" in text


def _transitions(text: str, field: str) -> set[str]:
    """The ``from->to`` transitions the prompt's table names for ``field``."""
    [row] = [line for line in text.splitlines() if line.startswith(f"| {field} |")]
    return set(re.findall(r"[a-z]+->[a-z]+", row))


def test_the_prompt_names_exactly_the_transitions_the_default_table_gates_and_clears() -> None:
    workflow = load_workflow()
    gated: dict[str, set[str]] = {"memory_query_session": set(), "memory_contribution_id": set()}
    cleared: set[str] = set()
    for table in workflow.types.values():
        for key, rule in table.items():
            base = key.split(":")[0]
            for field in rule.requires_dna:
                if field in gated:
                    gated[field].add(base)
            if {"memory_query_session", "memory_contribution_id"} <= set(rule.clears_dna):
                cleared.add(base)
    for field, transitions in gated.items():
        assert _transitions(BRAIN_WORKFLOW_GUIDE, field) == transitions
    rework_line = BRAIN_WORKFLOW_GUIDE.split("Rework clears the memory fields:", 1)[1].split(" remove ")[0]
    assert set(re.findall(r"[a-z]+->[a-z]+", rework_line)) == cleared


def test_the_readme_quotes_the_prompt_whole_and_explains_the_claude_ai_connector() -> None:
    readme = README.read_text(encoding="utf-8")
    assert f"```text\n{BRAIN_WORKFLOW_GUIDE}\n```" in readme
    connector = readme.split("### Connecting Claude.ai", 1)[1].split("\n## ", 1)[0]
    for step in ("Settings → Connectors", '"Add custom connector"', "https://brain.example.org/mcp", "reverse_proxy"):
        assert step in connector
    assert "header_up Authorization" in connector and "--allowed-host" in connector
