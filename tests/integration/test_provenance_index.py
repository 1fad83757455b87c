"""The search index keeps each block's provenance beside its text (issue 23): an index built before it did is
rebuilt when the ledger opens, a restored block keeps the provenance it was stored with (not the restorer's), and
a superseding block carries its own. On SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from ledger.core.events import MemoryRemembered
from ledger.service import Actor, Ledger
from projections.search import TOKENIZE, TS_CONFIG
from tests.conftest import LedgerFactory

ELF = Actor("elf", "mcp")
ROOT = Actor("root", "cli", admin=True)
TEXT = "Receipts are verified offline against the public key."


def stored(ledger: Ledger, block_id: str) -> dict[str, Any]:
    [rec] = [
        r
        for r in ledger.store.iter_events(types=[MemoryRemembered.type_name])
        if isinstance(r.event, MemoryRemembered) and r.event.block_id == block_id
    ]
    assert isinstance(rec.event, MemoryRemembered)
    return {
        "context": rec.event.context,
        "agent": rec.agent,
        "session_id": rec.meta.get("session_id"),
        "position": rec.position,
    }


def searched(ledger: Ledger, query: str) -> dict[str, dict[str, Any]]:
    return {h.block_id: h.provenance.model_dump() for h in ledger.memory_lookup(query).results}


def _as_before_provenance(ledger: Ledger) -> None:
    """Turn the index into one built before it kept provenance: the old columns and the old version."""
    sqlite = ledger.store.dialect == "sqlite"
    with ledger.store.engine.begin() as conn:
        if sqlite:
            rows = conn.exec_driver_sql("SELECT block_id, content, tags, tags_json FROM memory_fts").fetchall()
            conn.exec_driver_sql("DROP TABLE memory_fts")
            conn.exec_driver_sql(
                "CREATE VIRTUAL TABLE memory_fts USING fts5(block_id UNINDEXED, content, tags, tags_json UNINDEXED,"
                f" tokenize='{TOKENIZE}')"
            )
            for row in rows:
                conn.exec_driver_sql("INSERT INTO memory_fts VALUES (?, ?, ?, ?)", tuple(row))
            old = f"fts5 tokenize={TOKENIZE}"
        else:
            conn.exec_driver_sql("ALTER TABLE memory_index DROP COLUMN provenance_json")
            old = f"tsvector config={TS_CONFIG}"
        conn.exec_driver_sql(
            ledger.store.sql("UPDATE projection_versions SET version = ? WHERE name = 'memory_search_index'"), (old,)
        )


def test_an_index_built_before_provenance_is_rebuilt_when_the_ledger_opens(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    sid = ledger.clock_in(ELF, "dev").session_id
    block = ledger.remember(ELF, TEXT, ["project/audit"], sid).block_id
    ledger.index.catch_up()
    _as_before_provenance(ledger)
    reopened = make_ledger(db_url)
    assert searched(reopened, "receipts public key") == {block: stored(reopened, block)}
    assert stored(reopened, block)["session_id"] == sid and stored(reopened, block)["agent"] == "elf"


def test_a_restored_block_keeps_its_provenance_and_a_superseding_block_has_its_own(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    sid = ledger.clock_in(ELF, "dev").session_id
    block = ledger.remember(ELF, TEXT, ["project/audit"], sid).block_id
    ledger.archive_block(ROOT, block, "checking restore")
    assert searched(ledger, "receipts public key") == {}
    ledger.restore_block(ROOT, block, "it was right")
    assert searched(ledger, "receipts public key") == {block: stored(ledger, block)}
    assert stored(ledger, block)["agent"] == "elf"  # the contributor, not the administrator who restored it

    other = ledger.clock_in(Actor("bob", "rest"), "dev").session_id
    new = ledger.supersede(
        Actor("bob", "rest"), block, "Receipts are verified offline against the ledger's public key.", other
    ).new_block_id
    assert searched(ledger, "receipts public key") == {new: stored(ledger, new)}
    assert stored(ledger, new)["agent"] == "bob" and stored(ledger, new)["session_id"] == other
    assert ledger.memory_block(block).block.provenance.model_dump() == stored(ledger, block)
