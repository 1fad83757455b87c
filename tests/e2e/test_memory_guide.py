"""Seed 002 Step 5: the ``memory_guide`` prompt explains the three-tier self-knowledge model and the cognitive loop
in the seed's own words, and its numbers are the ones the ledger decays by."""

from __future__ import annotations

import pytest
from mcp import Client

from api.mcp.server import build_mcp
from projections import decay
from tests.conftest import LedgerFactory

# The seed's sentences, verbatim ("This already maps to our three-tier model", "The Cognitive Loop", the Q&A).
THREE_TIERS = (
    "Constitutional (PERMANENT): founding principles, near-immortal",
    "Values (DURABLE): learned principles, must be reinforced monthly",
    "Standard: domain knowledge, must be reinforced every few days",
)
LOOP_DIAGRAM = """ CURIOSITY ──> CONNECTION ──> UNCERTAINTY
     ^                             |
     |                             v
 REFLECTION    IDENTITY        ECONOMY
     ^                             |
     |                             v
  BALANCE <──── CARE <────── FEEDBACK
                               |
                               v
                          FOCUS (control)"""
SEED_SENTENCES = (
    "it's a menu of\ncognitive tools",
    "Constitutional blocks have reserved seats; everything else competes by relevance",
    "Constitutional amendment requires explicit human action",
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_memory_guide_explains_the_three_tiers_and_the_cognitive_loop_as_the_seed_does(
    make_ledger: LedgerFactory,
) -> None:
    async with Client(build_mcp(make_ledger(), agent="elf", open_default_session=True)) as client:
        got = await client.get_prompt("memory_guide")
    text = got.messages[0].content.text  # type: ignore[union-attr]
    for sentence in (*THREE_TIERS, LOOP_DIAGRAM, *SEED_SENTENCES):
        assert sentence in text
    # the task contexts of the seed's table, each with its blocks
    for context in ("encountering unknowns: Curiosity, Uncertainty", "session transitions: Reflection"):
        assert context in text
    # the numbers it states are the ledger's decay rates
    stated = {decay.Tier.PERMANENT: "0.00001", decay.Tier.DURABLE: "0.001", decay.Tier.STANDARD: "0.010"}
    stated[decay.Tier.EPHEMERAL] = "0.050"
    for tier, value in stated.items():
        assert f"lambda {value}" in text and float(value) == decay.LAMBDA[tier]
    # and how a person amends the constitution, with the commands that exist
    for command in ("init --force", "memory archive", "memory supersede", "memory restore"):
        assert command in text
