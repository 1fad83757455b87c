"""Seed 002, the self frame (issue 23): a recall reserves one or two slots for the constitution and gives the
rest to the agent's own self blocks; more constitutional blocks appear only when nothing else is left to show.

The ledger holds the ten constitutional blocks and a dozen of the agent's own values, as the issue describes;
each ``top_k`` is recalled several times, since every recall reinforces what it shows and so changes the scores
of the next. Through the ledger and over MCP (in-memory client), on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from api.mcp.server import build_mcp
from ledger.memory.constitution import CONSTITUTION
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.mcp_support import call

ELF = Actor("elf")
OWN_VALUES = [
    "Small diffs merge faster and break less.",
    "Write the failing test before the fix.",
    "Read the error message twice before searching for it.",
    "Prefer the standard library to a new dependency.",
    "Name things for what they do, not how they do it.",
    "A flaky test is a bug in the test or in the code; never retry it away.",
    "Leave a migration reversible whenever the data allows it.",
    "Measure before optimising; profile the slow path first.",
    "Keep secrets out of logs, traces and error messages.",
    "Document the why in the commit message, the what in the code.",
    "Ask the reviewer one clear question rather than three vague ones.",
    "Delete dead code instead of commenting it out.",
]
CONSTITUTIONAL = {b.content for b in CONSTITUTION}


def seeded(ledger: Ledger, values: list[str]) -> None:
    ledger.setup_memory(ELF)
    for text in values:
        ledger.remember(ELF, text, ["self/value"])


def kinds(blocks: list[dict[str, Any]]) -> str:
    """One letter a block, in the order shown: G a reserved (guaranteed) constitutional block, C another
    constitutional block, V one of the agent's own."""
    out = ""
    for b in blocks:
        constitutional = b["content"] in CONSTITUTIONAL
        assert not b["guaranteed"] or constitutional  # only the constitution is guaranteed in the self frame
        out += "G" if b["guaranteed"] else "C" if constitutional else "V"
    return out


@pytest.mark.parametrize("top_k", [3, 5, 10])
def test_a_queryless_self_recall_shows_two_constitutional_blocks_and_the_agents_values(
    make_ledger: LedgerFactory, db_url: str, top_k: int
) -> None:
    ledger = make_ledger(db_url)
    seeded(ledger, OWN_VALUES)
    for _ in range(4):
        result = ledger.recall(ELF, frame="self", top_k=top_k)
        assert kinds([b.model_dump() for b in result.blocks]) == "GG" + "V" * (top_k - 2)
        assert result.tokens <= result.token_budget
        assert not [d for d in result.dropped if d.reason == "token_budget"]


@pytest.mark.anyio
@pytest.mark.parametrize("top_k", [3, 5, 10])
async def test_the_bound_holds_over_mcp(make_ledger: LedgerFactory, db_url: str, top_k: int) -> None:
    ledger = make_ledger(db_url)
    seeded(ledger, OWN_VALUES)
    async with Client(build_mcp(ledger, agent="elf", open_default_session=True)) as client:
        for _ in range(3):
            answer = await call(client, "memory_recall", {"frame": "self", "top_k": top_k})
            assert kinds(answer["blocks"]) == "GG" + "V" * (top_k - 2)


@pytest.mark.parametrize(
    ("values", "top_k", "expected"), [(0, 1, "G"), (0, 5, "GGCCC"), (1, 5, "GGVCC"), (3, 9, "GGVVVCCCC")]
)
def test_more_of_the_constitution_is_shown_only_when_nothing_else_is_left(
    make_ledger: LedgerFactory, db_url: str, values: int, top_k: int, expected: str
) -> None:
    """Seed 002, week 1: "SELF retrieval returns: all constitutional (nothing else exists)". The agent's own
    blocks come before the extra constitutional ones, so a tight token budget would drop those first."""
    ledger = make_ledger(db_url)
    seeded(ledger, OWN_VALUES[:values])
    result = ledger.recall(ELF, frame="self", top_k=top_k)
    assert not [d for d in result.dropped if d.reason == "token_budget"]  # every chosen block fits: kinds are exact
    assert kinds([b.model_dump() for b in result.blocks]) == expected


def test_a_self_recall_with_a_query_keeps_the_bound_too(make_ledger: LedgerFactory, db_url: str) -> None:
    """Seed 002 edge case 1: "Only the 1-2 most relevant constitutional blocks will be guaranteed; remaining slots
    go to domain knowledge": the query matches five constitutional blocks and four of the agent's values."""
    ledger = make_ledger(db_url)
    seeded(
        ledger,
        [
            *OWN_VALUES,
            "Knowledge of the build lives in the Makefile, not in my head.",
            "Shared knowledge goes into the README the day it is learned.",
            "Knowledge without a test is an opinion.",
            "Check knowledge of an API against its documentation.",
        ],
    )
    result = ledger.recall(ELF, "knowledge", frame="self", top_k=5)
    blocks = [b.model_dump() for b in result.blocks]
    left_out = {d.block_id for d in result.dropped}
    constitution_ids = {b.block_id for b in ledger.memory_blocks(tag="self/constitutional", limit=50).blocks}
    assert kinds(blocks) == "GGVVV"
    assert len(left_out & constitution_ids) >= 3  # the constitution's other matches were candidates, and lost
