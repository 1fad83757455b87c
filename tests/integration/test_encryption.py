"""Free text encrypted under per-subject data keys (issue 26, point 1), on a real SQLite file and a real PostgreSQL
schema: a unique word remembered, searched for and written as a session's focus is in no byte of the events table
(nor the database file), reads still return it, the chain verifies, block ids are keyed, duplicates still found,
and a plaintext event written before encryption still reads."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from ledger.core import data_keys
from ledger.core.errors import ConcurrencyError
from ledger.core.events import MemoryRemembered, MemorySearched, SessionStarted
from ledger.memory import decisions as memory
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory

ALICE = Actor("alice", "cli")
WORD = "vorpalquendish"


def events_text(ledger: Ledger) -> str:
    with ledger.kernel.store.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT type, data, meta FROM events ORDER BY position").fetchall()
    return "\n".join(f"{t} {d} {m}" for t, d, m in rows)


def test_free_text_is_stored_encrypted_and_reads_clear(make_ledger: LedgerFactory, db_url: str) -> None:
    ledger = make_ledger(db_url)
    sid = ledger.clock_in(ALICE, "dev", focus=f"{WORD} focus").session_id
    content = f"The {WORD} deploy runs nightly at 03:00."
    created = ledger.remember(ALICE, content, ["ops"], sid)
    hits = ledger.search(ALICE, sid, WORD).results
    assert [h.block_id for h in hits] == [created.block_id]
    assert hits[0].content == content

    stored = events_text(ledger)
    assert WORD not in stored and WORD.lower() not in stored.lower()
    assert '"enc":"v1"' in stored
    # reads decrypt through the key service: the log's typed events hold the text
    texts = {type(r.event): r.event for r in ledger.kernel.store.iter_events()}
    assert isinstance(texts[MemoryRemembered], MemoryRemembered) and texts[MemoryRemembered].content == content
    assert isinstance(texts[MemorySearched], MemorySearched) and texts[MemorySearched].query == WORD
    assert isinstance(texts[SessionStarted], SessionStarted) and texts[SessionStarted].focus == f"{WORD} focus"
    # the data keys live in their own table, one per subject, wrapped (no raw key equals a stored one)
    assert ledger.kernel.keys.key_ids(f"block:{created.block_id}")
    assert ledger.kernel.keys.key_ids(f"session:{sid}")
    assert ledger.verify().ok


def test_block_ids_are_keyed_and_duplicates_still_found(make_ledger: LedgerFactory, db_url: str) -> None:
    ledger = make_ledger(db_url)
    content = f"Backups of {WORD} run daily."
    created = ledger.remember(ALICE, content)
    assert created.block_id != memory.block_id_for(content)  # not the public content hash
    assert created.block_id == ledger.kernel.block_id(memory.normalise(content))
    again = ledger.remember(ALICE, f"  backups OF {WORD.upper()}   run daily.")
    assert (again.block_id, again.status) == (created.block_id, "duplicate_rejected")


def test_plaintext_events_written_before_read_as_before(make_ledger: LedgerFactory, db_url: str) -> None:
    ledger = make_ledger(db_url)
    store = ledger.kernel.store
    cipher, store.cipher = store.cipher, None  # a store without the key service writes plaintext, as before
    legacy = f"Legacy {WORD} note, written before encryption."
    block_id = memory.block_id_for(legacy)
    store.append(
        f"block:{block_id}", 0, [MemoryRemembered(block_id=block_id, content=legacy, tags=["ops"])], {"agent": "alice"}
    )
    store.cipher = cipher
    assert WORD in events_text(ledger)
    assert ledger.memory_block(block_id).block.content == legacy
    # the same text remembered now is a duplicate of the legacy block, found under its content-hash id
    again = ledger.remember(ALICE, legacy)
    assert (again.block_id, again.status) == (block_id, "duplicate_rejected")
    assert ledger.verify().ok


def test_a_ciphertext_is_bound_to_its_stream(make_ledger: LedgerFactory, db_url: str) -> None:
    """The associated data names the stream, type and field: a ciphertext moved elsewhere does not decrypt."""
    ledger = make_ledger(db_url)
    keys = ledger.kernel.keys
    payload = {"content": f"{WORD} bound"}
    assert keys.seal("block:a", "MemoryRemembered", payload, ["content"])
    sealed = json.loads(json.dumps(payload))
    assert keys.open("block:a", "MemoryRemembered", dict(sealed)) == []
    moved = dict(sealed)
    try:
        keys.open("block:b", "MemoryRemembered", moved)
    except Exception as exc:  # cryptography's InvalidTag
        assert type(exc).__name__ == "InvalidTag"
    else:
        raise AssertionError("a ciphertext opened under another stream's associated data")
    assert data_keys.is_sealed(sealed["content"])
    with ledger.kernel.store.engine.connect() as conn:
        wrapped = conn.execute(sa.text("SELECT wrapped FROM data_keys")).fetchall()
    assert wrapped and all(len(bytes(w[0])) == 12 + 32 + 16 for w in wrapped)


def key_rows(ledger: Ledger) -> int:
    with ledger.kernel.store.engine.connect() as conn:
        return int(conn.exec_driver_sql("SELECT count(*) FROM data_keys").scalar_one())


def test_a_new_key_is_written_with_its_append_and_a_failed_append_leaves_none(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    """The data key of a new subject is inserted in the transaction of the append sealed under it: an append
    refused (its stream moved on) leaves no key row behind, and one that commits leaves exactly one."""
    ledger = make_ledger(db_url)
    store = ledger.kernel.store
    before = key_rows(ledger)
    event = MemoryRemembered(block_id="b1", content=f"{WORD} in a refused append", tags=[])
    with pytest.raises(ConcurrencyError):
        store.append("block:b1", 3, [event], {"agent": "alice"})  # the stream is at 0: refused, nothing written
    assert key_rows(ledger) == before and ledger.kernel.keys.key_ids("block:b1") == []
    [recorded] = store.append("block:b1", 0, [event], {"agent": "alice"})
    assert recorded.meta.get("enc") == "v1"
    [kid] = ledger.kernel.keys.key_ids("block:b1")
    assert key_rows(ledger) == before + 1
    # the stream's next append reuses the key it committed with (no second key, no read of the table needed)
    store.append("block:b1", 1, [MemoryRemembered(block_id="b1", content="again", tags=[])], {"agent": "alice"})
    assert ledger.kernel.keys.key_ids("block:b1") == [kid]
    assert ledger.kernel.store.load_stream("block:b1").events[0].event == event
    assert ledger.verify().ok
