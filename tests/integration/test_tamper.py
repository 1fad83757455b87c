"""An attacker at the database: rows off the chain, truncation, rewrites, an emptied table (issue 10, holes 1-2).

The database itself refuses a row that does not extend the chain; a row forced in anyway (triggers disabled,
as a superuser or an old database could) is never obeyed and ``verify`` reports it. What the chain alone cannot
tell — a clean truncation, a rewrite re-hashed to the end, an emptied table — a signed checkpoint kept outside
the database does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import sqlalchemy as sa

from ledger import clock as _clock
from ledger.canonical import canonical_json, format_ts
from ledger.chain import GENESIS_HASH, record_hash
from ledger.errors import Conflict
from ledger.events import MemorySearched
from ledger.service import Actor, Ledger
from ledger.storage import SqlEventStore
from tests.conftest import LedgerFactory

ALICE = Actor("alice", "mcp")
INSERT = (
    "INSERT INTO events (position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def raw(store: SqlEventStore, statement: str, params: Sequence[Any] = ()) -> None:
    """Run SQL straight on the database, behind the store's back."""
    with store.engine.begin() as conn:
        conn.exec_driver_sql(store.sql(statement), tuple(params))


def disable_chain_triggers(store: SqlEventStore) -> None:
    """What an attacker with DDL rights (or a database from before the triggers) can do."""
    if store.dialect == "sqlite":
        for name in ("events_require_chain", "events_reject_update", "events_reject_delete"):
            raw(store, f"DROP TRIGGER IF EXISTS {name}")
    else:
        raw(store, "ALTER TABLE events DISABLE TRIGGER USER")


def forged_search(store: SqlEventStore, session_id: str, position: int, version: int, prev_hash: str) -> list[Any]:
    """A row granting ``session_id`` a token, hashed correctly for ``position`` after ``prev_hash``."""
    fields: dict[str, Any] = dict(
        position=position,
        stream=f"session:{session_id}",
        version=version,
        type=MemorySearched.type_name,
        schema_version=MemorySearched.schema_version,
        data_json=canonical_json(
            {
                "session_id": session_id,
                "query": "forged",
                "limit": 10,
                "result_ids": [],
                "count": 3,
                "token_expires_at": None,
            }
        ),
        meta_json=canonical_json({"agent": "alice", "source": "mcp", "session_id": session_id}),
        recorded_at=format_ts(_clock.now()),
        prev_hash=prev_hash,
    )
    return [*fields.values(), record_hash(**fields)]


def session_with_no_search(ledger: Ledger) -> tuple[str, int]:
    """An open session that has not searched; returns its id and its stream's version."""
    sid = ledger.clock_in(ALICE, "dev").session_id
    return sid, ledger.store.load_stream(f"session:{sid}").version


# --- hole 1: rows off the chain -------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["at_0", "negative", "beyond_head", "at_head_plus_one_wrong_prev"])
def test_the_database_refuses_a_row_that_does_not_extend_the_chain(ledger: Ledger, where: str) -> None:
    sid, version = session_with_no_search(ledger)
    head, head_hash = ledger.store.head()
    position, prev = {
        "at_0": (0, GENESIS_HASH),
        "negative": (-5, GENESIS_HASH),
        "beyond_head": (head + 2, head_hash),
        "at_head_plus_one_wrong_prev": (head + 1, "f" * 64),
    }[where]
    row = forged_search(ledger.store, sid, position, version + 1, prev)
    with pytest.raises(sa.exc.DBAPIError, match="hash chain"):
        raw(ledger.store, INSERT, row)
    assert ledger.store.head() == (head, head_hash)
    assert ledger.assert_compliance(ALICE, sid).status == "FAIL"


def test_a_row_that_extends_the_chain_is_still_accepted_by_the_database(ledger: Ledger) -> None:
    # The trigger checks the link, not who wrote it: what it cannot stop, verify and checkpoints must (README).
    sid, version = session_with_no_search(ledger)
    head, head_hash = ledger.store.head()
    raw(ledger.store, INSERT, forged_search(ledger.store, sid, head + 1, version + 1, head_hash))
    assert ledger.store.head()[0] == head + 1
    assert ledger.verify().ok


def test_a_row_forced_in_at_position_0_is_never_obeyed_and_verify_reports_it(ledger: Ledger) -> None:
    sid, version = session_with_no_search(ledger)
    disable_chain_triggers(ledger.store)
    raw(ledger.store, INSERT, forged_search(ledger.store, sid, 0, version + 7, GENESIS_HASH))

    result = ledger.assert_compliance(ALICE, sid)
    report = ledger.verify()

    assert result.status == "FAIL" and result.reason == "no_search"
    assert not report.ok
    assert report.reason is not None and "outside 1.." in report.reason
    assert report.first_bad_position == 0


def test_a_row_forced_in_at_position_0_in_the_streams_next_slot_fails_the_gate_closed(ledger: Ledger) -> None:
    sid, version = session_with_no_search(ledger)
    disable_chain_triggers(ledger.store)
    raw(ledger.store, INSERT, forged_search(ledger.store, sid, 0, version + 1, GENESIS_HASH))
    head = ledger.store.head()

    with pytest.raises(Conflict):  # the forged row holds the version the decision needs: no PASS, no event
        ledger.assert_compliance(ALICE, sid)

    assert ledger.store.head() == head


def test_a_row_forced_in_beyond_the_head_is_reported_as_a_gap(ledger: Ledger) -> None:
    sid, version = session_with_no_search(ledger)
    head, head_hash = ledger.store.head()
    disable_chain_triggers(ledger.store)
    raw(ledger.store, INSERT, forged_search(ledger.store, sid, head + 3, version + 1, head_hash))

    report = ledger.verify()

    assert not report.ok
    assert report.first_bad_position == head + 1
    assert report.reason == f"position {head + 1} is missing"


def test_verify_requires_the_ledger_to_begin_with_its_initialisation(make_ledger: LedgerFactory, db_url: str) -> None:
    ledger = make_ledger(db_url)
    ledger.clock_in(ALICE, "dev")
    assert ledger.verify().ok
    store = ledger.store
    disable_chain_triggers(store)
    # Rebuild the whole log without its first event, re-hashed from the genesis: a self-consistent chain.
    records = list(store.iter_records())
    raw(store, "DELETE FROM events")
    prev = GENESIS_HASH
    for n, rec in enumerate(records[1:], 1):
        fields: dict[str, Any] = dict(
            position=n,
            stream=rec.stream,
            version=rec.version,
            type=rec.type,
            schema_version=rec.schema_version,
            data_json=rec.data_json,
            meta_json=rec.meta_json,
            recorded_at=rec.recorded_at,
            prev_hash=prev,
        )
        prev = record_hash(**fields)
        raw(store, INSERT, [*fields.values(), prev])
    assert store.verify().ok  # the chain alone is intact

    report = ledger.verify()

    assert not report.ok
    assert report.first_bad_position == 1
    assert report.reason is not None and "LedgerInitialised" in report.reason


def test_verify_reports_an_emptied_table(ledger: Ledger) -> None:
    disable_chain_triggers(ledger.store)
    raw(ledger.store, "DELETE FROM events")

    report = ledger.verify()

    assert not report.ok and report.first_bad_position == 1
    assert report.reason is not None and "LedgerInitialised" in report.reason
