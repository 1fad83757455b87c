"""Supersede and forget on a real ledger: search and recall move to the new block, history stays; a forgotten
block leaves search, recall and the read models while the log keeps the event; replay agrees."""

from __future__ import annotations

import pytest

from ledger.core.errors import Forbidden, InvalidInput, NotFound
from ledger.core.events import MemoryForgotten, MemorySuperseded
from ledger.service import Actor
from tests.conftest import LedgerFactory

ELF = Actor("elf", "mcp")
OPERATOR = Actor("operator", "cli", admin=True)


def test_a_superseded_block_keeps_its_history_and_search_finds_the_new_one(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    old = ledger.remember(ELF, "The billing export runs nightly at 02:00.", ["project/billing"]).block_id
    ledger.recall(ELF, "billing export", top_k=3)
    result = ledger.supersede(ELF, old, "The billing export runs hourly since March.")
    new = result.new_block_id

    hits = [b.block_id for b in ledger.recall(ELF, "billing export", top_k=3).blocks]
    detail = ledger.memory_block(old)
    listed = [b.block_id for b in ledger.memory_blocks().blocks]
    everything = {b.block_id: b for b in ledger.memory_blocks(archived=None).blocks}

    assert hits == [new] and result.tags == ["project/billing"]
    assert ledger.memory_block(new).block.tags == ["project/billing"]
    assert detail.block.superseded_by == new and detail.block.content.endswith("nightly at 02:00.")
    assert [h.type for h in detail.history] == ["MemoryRemembered", "MemoryRecalled", "MemorySuperseded"]
    assert listed == [new] and everything[old].superseded_by == new
    [event] = [r.event for r in ledger.store.iter_events(types=["MemorySuperseded"])]
    assert event == MemorySuperseded(block_id=old, by_block_id=new)


def test_supersede_refuses_what_it_cannot_do_and_says_what_to_send(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    a = ledger.remember(ELF, "Alpha fact.").block_id
    b = ledger.remember(ELF, "Beta fact.").block_id
    with pytest.raises(InvalidInput, match="already"):
        ledger.supersede(ELF, a, "alpha   FACT.")  # the same normalised text
    with pytest.raises(InvalidInput, match="already holds this content"):
        ledger.supersede(ELF, a, "Beta fact.")
    with pytest.raises(NotFound):
        ledger.supersede(ELF, "blk_000000000000000000000000", "Gamma fact.")
    new = ledger.supersede(ELF, a, "Alpha fact, corrected.").new_block_id
    with pytest.raises(InvalidInput, match=f"superseded by {new}"):
        ledger.supersede(ELF, a, "Alpha fact, corrected again.")
    assert b in {x.block_id for x in ledger.memory_blocks().blocks}


def test_only_an_administrator_can_forget_and_the_block_leaves_every_read(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    gone = ledger.remember(ELF, "Customer Jane Roe lives at 1 Main Street.", ["project/crm"]).block_id
    kept = ledger.remember(ELF, "Customer records live in the CRM database.", ["project/crm"]).block_id
    ledger.recall(ELF, "customer", top_k=5)  # links the two blocks
    with pytest.raises(Forbidden):
        ledger.forget(ELF, gone, "erasure request")
    with pytest.raises(InvalidInput, match="reason is empty"):
        ledger.forget(OPERATOR, gone, "  ")
    result = ledger.forget(OPERATOR, gone, "personal data: erasure request 2026-11-03")

    assert [b.block_id for b in ledger.recall(ELF, "customer Jane", top_k=5).blocks] == [kept]
    assert gone not in {b.block_id for b in ledger.memory_blocks(archived=None).blocks}
    with pytest.raises(NotFound):
        ledger.memory_block(gone)
    with pytest.raises(NotFound, match="forgotten already"):
        ledger.forget(OPERATOR, gone, "again")
    assert ledger.memory_stats().edges == 0 and ledger.memory_block(kept).block.score.weighted_degree == 0
    [rec] = list(ledger.store.iter_events(types=["MemoryForgotten"]))
    assert rec.event == MemoryForgotten(block_id=gone, reason="personal data: erasure request 2026-11-03")
    assert rec.position == result.position and rec.agent == "operator"
    # A replay from the log agrees with the live graph.
    replayed = ledger.memory_blocks(archived=None, position=rec.position)
    assert {b.block_id for b in replayed.blocks} == {kept}
