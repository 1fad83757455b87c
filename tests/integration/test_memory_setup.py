"""Seeding the constitution (seed 002 Step 0): `init`, `memory_setup`, idempotence, and what doctor reports."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from typer.testing import CliRunner

from api.cli import app
from api.mcp.server import build_mcp
from ledger.core.events import MemoryRemembered
from ledger.memory.constitution import CONSTITUTION, CONSTITUTIONAL_TAG
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory


def remembered(ledger: Ledger) -> list[MemoryRemembered]:
    return [
        rec.event
        for rec in ledger.store.iter_events(types=["MemoryRemembered"])
        if isinstance(rec.event, MemoryRemembered)
    ]


def cli(tmp_path: Path, url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", url, *args])
    return result.exit_code, result.stdout


def test_init_seeds_the_ten_constitutional_blocks_once(make_ledger: LedgerFactory, db_url: str, tmp_path: Path) -> None:
    first = cli(tmp_path, db_url, "init")
    second = cli(tmp_path, db_url, "init")
    ledger = make_ledger(db_url)
    blocks = remembered(ledger)
    doctor = cli(tmp_path, db_url, "doctor")
    assert first[0] == 0 and "10 block(s) created" in first[1]
    assert second[0] == 0 and "0 block(s) created, 10 already present" in second[1]
    assert [b.content for b in blocks] == [b.content for b in CONSTITUTION]
    assert all(b.tags[0] == CONSTITUTIONAL_TAG for b in blocks)
    assert "MemoryDuplicateRejected" not in {r.type for r in ledger.store.iter_records()}
    assert doctor[0] == 0 and "10 constitutional memory blocks" in doctor[1]


def test_init_no_seed_skips_the_constitution_and_self_adds_a_context_block(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'seed.db'}"
    code, out = cli(tmp_path, url, "init", "--no-seed", "--self", "I am the release bot for project X.")
    blocks = remembered(make_ledger(url))
    assert code == 0 and "1 block(s) created" in out
    assert [(b.content, b.tags) for b in blocks] == [("I am the release bot for project X.", ["self/context"])]


@pytest.mark.anyio
async def test_memory_setup_over_mcp_seeds_identity_and_values_idempotently(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    args = {"identity": "I review pull requests.", "values": ["Small diffs merge faster."]}
    async with Client(build_mcp(ledger, agent="elf", open_default_session=True)) as client:
        first = (await client.call_tool("memory_setup", args)).structured_content
        second = (await client.call_tool("memory_setup", args)).structured_content
        found = (await client.call_tool("memory_search", {"query": "curiosity hypothesis"})).structured_content
        guide = await client.get_prompt("memory_guide")
    assert first is not None and second is not None and found is not None
    assert len(first["created"]) == 12 and first["constitutional_blocks"] == 10
    assert second["created"] == [] and len(second["already_present"]) == 12
    assert found["count"] >= 1
    assert "memory_setup" in guide.messages[0].content.text  # type: ignore[union-attr]
    tags = {tuple(b.tags) for b in remembered(ledger)}
    assert ("self/context",) in tags and ("self/value",) in tags


def test_setup_refuses_bad_values_before_storing_anything(make_ledger: LedgerFactory) -> None:
    from ledger.core.errors import InvalidInput

    ledger = make_ledger()
    head = ledger.store.head()
    with pytest.raises(InvalidInput):
        ledger.setup_memory(Actor("op"), identity="fine", values=["", "also fine"])
    assert ledger.store.head() == head


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
