"""Erasure that holds in an immutable log (issue 26, points 2, 3 and 5), on a real SQLite file and a real
PostgreSQL schema — the canary tests: a text with a unique word is remembered, searched for and recalled, indexes
and snapshots are written; the word is found in the database (the control); then an administrator erases the block
(or the session) and the word is in no file under the ledger's home (database, WAL, anything) and nowhere in a
``pg_dump`` of the schema, while ``verify`` and a checkpoint signed before still hold."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from ledger.audit.checkpoints import Source
from ledger.core.errors import Erased, Forbidden
from ledger.core.events import MemoryRemembered, MemorySearched, SessionErased, SessionStarted
from ledger.memory import decisions as memory
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.secret_samples import leaked_into_dump, leaked_into_files

ALICE = Actor("alice", "cli")
AGENT_KEY = Actor("alice", "rest", by_key=True)
OPERATOR = Actor("operator", "cli", admin=True)
WORD = "zorblefrunk"
QUERY_WORD = "quillowmere"
FOCUS_WORD = "brindlewick"


def leaked(ledger: Ledger, db_url: str, home: Path, word: str) -> bool:
    if db_url.startswith("postgresql"):
        return leaked_into_dump(db_url, word)
    return bool(leaked_into_files(home, word))


def signed_checkpoint(ledger: Ledger) -> Source:
    return Source("test", ledger.checkpoint())


def test_an_erased_block_leaves_no_byte_behind_and_the_log_still_verifies(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    sid = ledger.clock_in(ALICE, "dev").session_id
    content = f"The customer {WORD.capitalize()} lives at 12 Canary Row; call before deploys."
    block_id = ledger.remember(ALICE, content, ["ops"], sid).block_id
    assert [h.block_id for h in ledger.search(ALICE, sid, WORD).results] == [block_id]
    assert block_id in [b.block_id for b in ledger.recall(ALICE, WORD, session_id=sid).blocks]
    ledger.rebuild_snapshots()
    before = signed_checkpoint(ledger)
    assert leaked(ledger, db_url, tmp_path, WORD)  # the control: the index holds the word before the erasure

    with pytest.raises(Forbidden):
        ledger.erase_block(AGENT_KEY, block_id, "an agent tries")
    with pytest.raises(Forbidden):
        ledger.erase_block(ALICE, block_id, "an agent tries")

    erased = ledger.erase_block(OPERATOR, block_id, "erasure request #12 (GDPR art. 17)")
    assert (erased.block_id, erased.erased_by, erased.plaintext_in_log) == (block_id, "operator", False)
    assert erased.key_ids and erased.note is None

    assert not leaked(ledger, db_url, tmp_path, WORD)
    assert ledger.verify().ok
    assert [f.problem for f in ledger.verify_checkpoints([before], ledger.public_key())] == [None]
    assert ledger.search(ALICE, sid, WORD).results == []
    assert block_id not in [b.block_id for b in ledger.recall(ALICE, WORD, session_id=sid).blocks]
    assert block_id not in [b.block_id for b in ledger.memory_blocks().blocks]
    with pytest.raises(Erased) as said:
        ledger.memory_block(block_id)
    assert said.value.status == 410 and said.value.by == "operator"
    assert "erasure request #12" in said.value.message and WORD not in said.value.message.lower()
    with pytest.raises(Erased):
        ledger.erase_block(OPERATOR, block_id, "again")
    # the log keeps the ciphertext; reading it gives no text, and a rebuild skips it
    [remembered] = [r for r in ledger.store.iter_events(types=["MemoryRemembered"]) if r.stream.endswith(block_id)]
    assert isinstance(remembered.event, MemoryRemembered) and WORD not in remembered.event.content.lower()
    assert remembered.meta.get("erased") is True
    ledger.rebuild_index()
    assert ledger.search(ALICE, sid, WORD).results == []
    assert ledger.replay().unreadable == 1  # the block's MemoryRemembered: folded, its text skipped and counted
    assert not leaked(ledger, db_url, tmp_path, WORD)

    # the same text remembered again is a new block, under a new id
    again = ledger.remember(ALICE, content, ["ops"], sid)
    assert again.status == "created" and again.block_id != block_id
    assert [h.block_id for h in ledger.search(ALICE, sid, WORD).results] == [again.block_id]


def test_an_erased_sessions_queries_and_focus_leave_no_byte_behind(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    ledger.remember(ALICE, "Deploys run from the release branch.", ["ops"])
    sid = ledger.clock_in(ALICE, "dev", focus=f"helping {FOCUS_WORD} with the deploy").session_id
    ledger.search(ALICE, sid, f"deploys for {QUERY_WORD}")
    ledger.recall(ALICE, f"{QUERY_WORD} release", session_id=sid)
    ledger.rebuild_snapshots()
    before = signed_checkpoint(ledger)
    other = ledger.clock_in(ALICE, "dev", focus="another session").session_id
    readable = [r.event for r in ledger.store.iter_events(stream=f"session:{sid}")]
    assert any(isinstance(e, MemorySearched) and QUERY_WORD in e.query for e in readable)  # the control
    assert any(isinstance(e, SessionStarted) and FOCUS_WORD in (e.focus or "") for e in readable)

    with pytest.raises(Forbidden):
        ledger.erase_session(ALICE, sid, "an agent tries")
    erased = ledger.erase_session(OPERATOR, sid, "erasure request #13")
    assert erased.session_id == sid and erased.key_ids and not erased.plaintext_in_log

    for word in (QUERY_WORD, FOCUS_WORD):
        assert not leaked(ledger, db_url, tmp_path, word), word
    assert ledger.verify().ok
    assert [f.problem for f in ledger.verify_checkpoints([before], ledger.public_key())] == [None]
    session_events = list(ledger.store.iter_events(stream=f"session:{sid}"))
    texts = [r.event.query for r in session_events if isinstance(r.event, MemorySearched)]
    texts += [r.event.focus or "" for r in session_events if isinstance(r.event, SessionStarted)]
    assert texts and all(QUERY_WORD not in t and FOCUS_WORD not in t for t in texts)
    # another session is untouched
    assert ledger.search(ALICE, other, "release branch").results


def test_erasing_a_block_written_before_encryption_says_what_stays(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    store = ledger.kernel.store
    cipher, store.cipher = store.cipher, None  # written as before encryption
    legacy = f"Legacy note naming {WORD}."
    block_id = memory.block_id_for(legacy)
    store.append(
        f"block:{block_id}", 0, [MemoryRemembered(block_id=block_id, content=legacy, tags=[])], {"agent": "alice"}
    )
    store.cipher = cipher
    sid = ledger.clock_in(ALICE, "dev").session_id
    assert [h.block_id for h in ledger.search(ALICE, sid, WORD).results] == [block_id]

    erased = ledger.erase_block(OPERATOR, block_id, "erasure request #14")
    assert erased.plaintext_in_log and erased.note is not None and "log's bytes" in erased.note
    assert "`compliance-ledger carry`" in erased.note  # the way out, by name (tests/integration/test_carry.py)
    assert ledger.search(ALICE, sid, WORD).results == []
    assert ledger.verify().ok
    assert leaked(ledger, db_url, tmp_path, WORD)  # as the result says: the log's own bytes keep the text


def test_a_key_destroyed_by_another_process_is_not_used_from_its_cache(make_ledger: LedgerFactory, db_url: str) -> None:
    """Two stores on one database (as two processes are): one has read a block (its data key cached) when the
    other erases it; its next read of the block returns no text, and it never encrypts under the erased key."""
    here, there = make_ledger(db_url), make_ledger(db_url)
    sid = here.clock_in(ALICE, "dev").session_id
    content = f"The supplier {WORD} invoices monthly."
    block_id = here.remember(ALICE, content, ["ops"], sid).block_id
    stream = memory.stream_for(block_id)
    first = there.store.load_stream(stream).events[0]
    assert isinstance(first.event, MemoryRemembered) and first.event.content == content  # there: key cached
    there.search(ALICE, sid, WORD)  # there: the session's key cached too

    here.erase_block(OPERATOR, block_id, "erasure request #15")
    here.erase_session(OPERATOR, sid, "erasure request #16")

    again = there.store.load_stream(stream).events[0]
    assert isinstance(again.event, MemoryRemembered) and WORD not in again.event.content.lower()
    assert again.meta.get("erased") is True
    with pytest.raises(Erased):
        there.memory_block(block_id)
    searched = [r.event for r in there.store.iter_events(stream=f"session:{sid}")]
    assert all(WORD not in e.query for e in searched if isinstance(e, MemorySearched))
    # a query appended there now is sealed under a new key of the session, readable, not under the erased one
    there.search(ALICE, sid, "invoices")
    kids = there.kernel.keys.key_ids(f"session:{sid}")
    erasure = next(
        r.event for r in here.store.iter_events(stream=f"session:{sid}") if isinstance(r.event, SessionErased)
    )
    assert isinstance(erasure, SessionErased) and len(kids) == 1 and kids[0] not in erasure.key_ids
    assert any(
        isinstance(r.event, MemorySearched) and r.event.query == "invoices"
        for r in here.store.iter_events(stream=f"session:{sid}")
    )


def table_file(ledger: Ledger, table: str) -> bytes:
    """The bytes of ``table``'s file on the PostgreSQL server, after a checkpoint wrote its pages (superuser)."""
    with ledger.store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("CHECKPOINT")
        path = conn.exec_driver_sql("SELECT pg_relation_filepath(%s)", (table,)).scalar_one()
        return bytes(conn.exec_driver_sql("SELECT pg_read_binary_file(%s)", (path,)).scalar_one())


@pytest.fixture
def own_database(pg_server: str) -> Iterator[str]:
    """A database of its own on the PostgreSQL server, dropped afterwards: VACUUM removes a deleted row only once
    no transaction of the same database could still see it, and the shared test database has other sessions'."""
    name = "t_erase_" + secrets.token_hex(6)
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    parts = urlsplit(pg_server)
    yield urlunsplit(parts._replace(path="/" + name))
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_a_destroyed_keys_bytes_leave_the_postgresql_table_file(make_ledger: LedgerFactory, own_database: str) -> None:
    """Destroying a key on PostgreSQL is a DELETE and a plain VACUUM of ``data_keys`` (bounded: no VACUUM FULL),
    which compacts the key's page over its row: its wrapped bytes are in no page of the table's file. (The row last
    written on its page would leave them in the page's free space until a row is written there, and a transaction
    open in the database during the erasure keeps the row until a later vacuum: documented.)"""
    ledger = make_ledger(own_database)
    victim = ledger.remember(ALICE, f"The customer {WORD} pays late.").block_id
    ledger.remember(ALICE, "A later block: its key is written after the victim's.")
    with ledger.store.engine.connect() as conn:
        [(wrapped,)] = conn.exec_driver_sql("SELECT wrapped FROM data_keys WHERE subject = %s", (f"block:{victim}",))
    assert bytes(wrapped) in table_file(ledger, "data_keys")  # the control
    ledger.erase_block(OPERATOR, victim, "erasure request #17")
    assert bytes(wrapped) not in table_file(ledger, "data_keys")
