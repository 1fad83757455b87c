"""Seed 002: `init --seed` as the seed writes it, `init --force` regenerating the constitution, and a person (an
administrator) archiving, replacing and restoring constitutional blocks — every change a recorded event; agents
cannot amend the constitution. Real databases (SQLite file and PostgreSQL), the CLI through its typer app, MCP
through an in-memory client."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from typer.testing import CliRunner

from api.cli import app
from api.mcp.server import build_mcp
from ledger.core.errors import Forbidden
from ledger.memory.constitution import CONSTITUTION, CONSTITUTIONAL_TAG
from ledger.memory.decisions import block_id_for, normalise
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory

SHIPPED = sorted(block_id_for(b.content) for b in CONSTITUTION)
ECONOMY, CURIOSITY, CARE = CONSTITUTION[1].content, CONSTITUTION[2].content, CONSTITUTION[8].content
AMENDED = "Apply the least force that solves the problem, then stop and look at what changed before doing more."
EXTRA = "I keep a written record of every promise I make to the people I work with."
OPERATOR = Actor("operator", "cli", admin=True)
AGENT = Actor("elf", "mcp")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def cli(tmp_path: Path, url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", url, *args], env={"COLUMNS": "200"})
    return result.exit_code, result.stdout + result.stderr


def live_constitution(ledger: Ledger) -> list[str]:
    return sorted(b.block_id for b in ledger.memory_blocks(tag=CONSTITUTIONAL_TAG).blocks)


def found(ledger: Ledger, query: str) -> list[str]:
    sid = ledger.clock_in(Actor("reader", "cli"), "dev").session_id
    return [hit.block_id for hit in ledger.search(Actor("reader", "cli"), sid, query, 20).results]


def types_after(ledger: Ledger, position: int) -> list[tuple[str, str | None]]:
    return [(r.event.type_name, r.agent) for r in ledger.store.iter_events(position)]


def test_init_accepts_seed_as_the_seed_writes_it(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'seeded.db'}"
    code, out = cli(tmp_path, url, "init", "--seed")
    again, second = cli(tmp_path, url, "init", "--seed", "--self", "I am a trading assistant")
    assert code == 0 and "10 block(s) created" in out
    assert again == 0 and "1 block(s) created, 10 already present" in second
    ledger = make_ledger(url)
    assert live_constitution(ledger) == SHIPPED
    assert [
        b.block_id for b in ledger.memory_blocks(tag="self/context").blocks if CONSTITUTIONAL_TAG not in b.tags
    ] == [ledger.kernel.block_id(normalise("I am a trading assistant"))]


def test_a_person_archives_replaces_and_restores_a_constitutional_block_recorded_as_events(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    assert cli(tmp_path, db_url, "init")[0] == 0
    ledger = make_ledger(db_url)
    start = ledger.store.head()[0]
    economy, care = block_id_for(ECONOMY), block_id_for(CARE)
    replaced = cli(tmp_path, db_url, "memory", "supersede", economy, AMENDED)
    archived = cli(tmp_path, db_url, "memory", "archive", care, "--reason", "amended: folded into Economy")
    amended = ledger.kernel.block_id(normalise(AMENDED))
    assert replaced[0] == 0 and f"{economy} superseded by {amended}" in replaced[1]
    assert archived[0] == 0 and f"{care} archived at position" in archived[1]
    # The replacement is constitutional (it keeps the tags); the replaced and the archived block left the
    # constitution, search and recall, and keep their history.
    assert live_constitution(ledger) == sorted({*SHIPPED, amended} - {economy, care})
    assert amended in found(ledger, "least force problem") and economy not in found(ledger, "Nature wastes nothing")
    assert care not in found(ledger, "second-order effects systems healthier")
    recalled = ledger.recall(AGENT, "second-order effects of my actions", frame="self", top_k=10)
    assert care not in [b.block_id for b in recalled.blocks]
    assert types_after(ledger, start)[:3] == [
        ("MemoryRemembered", "operator"),
        ("MemorySuperseded", "operator"),
        ("MemoryArchived", "operator"),
    ]
    [archive_event] = [r.event for r in ledger.store.iter_events(start, types=["MemoryArchived"])]
    assert archive_event.model_dump() == {"block_id": care, "reason": "amended: folded into Economy"}
    # A person brings the archived block back: search finds it again.
    restored = cli(tmp_path, db_url, "memory", "restore", care, "--reason", "the amendment was a mistake")
    assert restored[0] == 0 and f"{care} restored at position" in restored[1]
    assert care in found(ledger, "second-order effects systems healthier")
    history = [e.type for e in ledger.memory_block(care).history]
    assert history[-2:] == ["MemoryArchived", "MemoryRestored"]
    # Replayed to any position, the constitution is what it was then.
    archived_at = next(r.position for r in ledger.store.iter_events(start, types=["MemoryArchived"]))
    then = ledger.memory_blocks(tag=CONSTITUTIONAL_TAG, position=archived_at - 1).blocks
    assert care in [b.block_id for b in then] and economy not in [b.block_id for b in then]
    assert care not in [b.block_id for b in ledger.memory_blocks(tag=CONSTITUTIONAL_TAG, position=archived_at).blocks]


@pytest.mark.anyio
async def test_an_agent_cannot_amend_the_constitution_and_nothing_is_recorded(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    ledger.setup_memory(OPERATOR)
    async with Client(build_mcp(ledger, agent="elf", open_default_session=True)) as client:
        head = ledger.store.head()
        superseded = await client.call_tool("memory_supersede", {"block_id": block_id_for(ECONOMY), "content": AMENDED})
        added = await client.call_tool("memory_remember", {"content": EXTRA, "tags": [CONSTITUTIONAL_TAG]})
        assert ledger.store.head() == head
    for result in (superseded, added):
        assert result.is_error is True
        assert "only an administrator can" in result.content[0].text  # type: ignore[union-attr]
    head = ledger.store.head()  # (the default session was closed when the client left)
    for command in (
        lambda: ledger.archive_block(AGENT, block_id_for(CARE), "no"),
        lambda: ledger.restore_block(AGENT, block_id_for(CARE), "no"),
        lambda: ledger.regenerate_constitution(AGENT),
    ):
        with pytest.raises(Forbidden):
            command()
    assert ledger.store.head() == head
    assert live_constitution(ledger) == SHIPPED


def test_init_force_regenerates_the_constitution_and_a_second_run_changes_nothing(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    assert cli(tmp_path, db_url, "init")[0] == 0
    ledger = make_ledger(db_url)
    economy, curiosity = block_id_for(ECONOMY), block_id_for(CURIOSITY)
    ledger.supersede(OPERATOR, economy, AMENDED)
    ledger.archive_block(OPERATOR, curiosity, "trying the constitution without it")
    extra = ledger.remember(OPERATOR, EXTRA, [CONSTITUTIONAL_TAG, "self/value"]).block_id
    assert economy not in live_constitution(ledger) and extra in live_constitution(ledger)
    start = ledger.store.head()[0]
    code, out = cli(tmp_path, db_url, "init", "--force")
    assert code == 0, out
    assert "constitution regenerated: 2 restored, 2 amendment(s) archived, 0 created, 8 unchanged" in out
    assert live_constitution(ledger) == SHIPPED
    changes = [
        (r.event.type_name, getattr(r.event, "block_id", None), r.agent) for r in ledger.store.iter_events(start)
    ]
    assert sorted(changes) == sorted(
        [
            ("MemoryRestored", economy, "operator"),
            ("MemoryRestored", curiosity, "operator"),
            ("MemoryArchived", ledger.kernel.block_id(normalise(AMENDED)), "operator"),
            ("MemoryArchived", extra, "operator"),
        ]
    )
    assert economy in found(ledger, "Nature wastes nothing")
    assert ledger.kernel.block_id(normalise(AMENDED)) not in found(ledger, "least force problem")
    head = ledger.store.head()
    code, again = cli(tmp_path, db_url, "init", "--force")
    assert code == 0 and "0 restored, 0 amendment(s) archived, 0 created, 10 unchanged" in again
    assert ledger.store.head() == head


def test_init_force_never_brings_back_a_forgotten_block_and_refuses_no_seed(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'forgotten.db'}"
    assert cli(tmp_path, url, "init")[0] == 0
    ledger = make_ledger(url)
    care = block_id_for(CARE)
    ledger.forget(OPERATOR, care, "erasure request 2026-11-03")
    head = ledger.store.head()
    refused = cli(tmp_path, url, "init", "--force", "--no-seed")
    assert refused[0] != 0 and "--force and --no-seed" in refused[1]
    assert ledger.store.head() == head
    code, out = cli(tmp_path, url, "init", "--force")
    assert code == 0 and f"not restored: {care} was forgotten (erased)" in out
    assert live_constitution(ledger) == sorted(set(SHIPPED) - {care})
