"""The position a memory read says it stands at is the log's: the head for a live read (events after the last
memory change changed nothing there), the one asked for in a replay — never the last event that touched memory."""

from __future__ import annotations

from ledger.service import Actor
from tests.conftest import MEMORY, LedgerFactory

ELF = Actor("elf", "mcp")
BOB = Actor("bob", "mcp")


def test_a_live_memory_read_stands_at_the_head_of_the_log(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    block = ledger.remember(ELF, "The billing export runs nightly at 02:00.", ["project/billing"]).block_id
    remembered_at = ledger.store.head()[0]
    sid = ledger.clock_in(BOB, "dev").session_id  # events that do not touch memory, after it
    ledger.assert_compliance(BOB, sid)
    ledger.clock_out(BOB, sid)
    head = ledger.store.head()[0]
    assert head > remembered_at + 2

    listed = ledger.memory_blocks()
    detail = ledger.memory_block(block)
    replayed = ledger.memory_blocks(position=remembered_at + 1)

    assert listed.position == head and detail.position == head
    assert replayed.position == remembered_at + 1 and block in [b.block_id for b in replayed.blocks]
    assert [b.block_id for b in listed.blocks] == [b.block_id for b in ledger.memory_blocks(position=head).blocks]
