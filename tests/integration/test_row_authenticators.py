"""Only the ledger writes events (issue 24, item 7), on a real SQLite file and a real PostgreSQL schema.

Someone with INSERT rights on the database appends a correctly chained ``MemorySearched`` for an open session at
the head: the gate (through the ledger and over MCP) does not pass and names the position, ``verify`` fails naming
it, reports and replays refuse, the forged row never enters the tree, and the next legitimate append refuses to
chain after it. A ledger from before authenticators and the tree gets both on ``init``, once: a table of
authenticators dropped later is not an old ledger.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from typer.testing import CliRunner

from api.bootstrap import initialise, open_ledger
from api.cli import app
from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.core import receipt_key
from ledger.core.errors import Conflict, IntegrityViolation, NotInitialised
from ledger.core.events import LedgerInitialised, MemorySearched, RowKeyBound, SessionStarted, SigningKeyBound
from ledger.core.storage import RowKey, SqlEventStore, make_engine, migration
from ledger.core.storage.schema import LEGACY_REJECT_UPDATE
from ledger.core.tlog import merkle
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.integration.test_tamper import INSERT, forged_search, raw, session_with_no_search

ALICE = Actor("alice", "mcp")
BOB = Actor("bob", "mcp")
SYSTEM = {"agent": "system", "source": "cli"}


def cli(tmp_path: Path, url: str, *args: str) -> tuple[int, str]:
    """Exit code and output (stdout and stderr, lines joined: the console wraps at its width)."""
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", url, *args])
    return result.exit_code, " ".join((result.stdout + result.stderr).split())


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def forge_at_head(ledger: Ledger) -> tuple[str, int]:
    """An open session with no search, and a forged search for it appended at the head with raw SQL."""
    sid, version = session_with_no_search(ledger)
    head, head_hash = ledger.store.head()
    raw(ledger.store, INSERT, forged_search(ledger.store, sid, head + 1, version + 1, head_hash))
    return sid, head + 1


def test_a_forged_search_at_the_head_never_passes_the_gate_and_is_named(ledger: Ledger) -> None:
    sid, forged = forge_at_head(ledger)
    with pytest.raises(IntegrityViolation, match=f"the event at position {forged} has no authenticator") as caught:
        ledger.assert_compliance(ALICE, sid)
    assert caught.value.position == forged and "compliance-ledger verify" in caught.value.hint
    assert ledger.store.head()[0] == forged  # no stamp, no refusal recorded after it


@pytest.mark.anyio
async def test_over_mcp_the_gate_answers_an_error_naming_the_position(ledger: Ledger) -> None:
    sid, forged = forge_at_head(ledger)
    async with Client(build_mcp(ledger, agent="alice")) as client:
        result = await client.call_tool("assert_compliance", {"session_id": sid})
    assert result.is_error
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert f"the event at position {forged} has no authenticator" in text and "PASS" not in text


def test_verify_reports_and_replays_refuse_the_forged_row(ledger: Ledger, tmp_path: Path, db_url: str) -> None:
    ledger.search(ALICE, ledger.clock_in(ALICE, "dev").session_id, "anything")
    _, forged = forge_at_head(ledger)

    report = ledger.verify()
    assert not report.ok and report.first_bad_position == forged and report.checked == forged - 1
    code, output = cli(tmp_path, db_url, "verify")
    assert code == 1 and f"at position {forged}" in output and "no authenticator" in output

    refused: list[Callable[[], Any]] = [
        ledger.replay,
        lambda: ledger.compliance_report(),
        lambda: ledger.events_page(after=forged - 1),
        lambda: list(ledger.store.iter_events(forged - 2)),
        lambda: ledger.store.records_at([forged]),
        lambda: ledger.store.get(forged),
    ]
    for read in refused:
        with pytest.raises(IntegrityViolation, match=f"position {forged}"):
            read()
    assert cli(tmp_path, db_url, "replay")[0] != 0


def test_a_forged_row_never_enters_the_tree_and_nothing_chains_after_it(ledger: Ledger) -> None:
    _, forged = forge_at_head(ledger)
    size = forged - 1  # every event the ledger wrote, and not the forged one
    assert ledger.store.tree_size() == size
    for attempt in (lambda: ledger.clock_in(BOB, "dev"), lambda: ledger.clock_in(BOB, "dev")):
        with pytest.raises(IntegrityViolation, match=f"the event at position {forged} has no authenticator"):
            attempt()  # twice: a store that failed once does not trust a cached head either
    assert ledger.store.head()[0] == forged and ledger.store.tree_size() == size
    with pytest.raises(IntegrityViolation):
        ledger.store.rebuild_tree()  # the tree is rebuilt over an authenticated log only
    # Even with the tree's hashes for it written too (all of them public), the forged row is not a leaf.
    # (The guard on UPDATE lets a row's missing tree hashes be written: no trigger has to be dropped for this.)
    tree = _tree_after(ledger.store, size, forged)
    raw(ledger.store, "UPDATE events SET tree = ? WHERE position = ?", (b"".join(tree), forged))
    with pytest.raises(IntegrityViolation, match=f"position {forged}"):
        ledger.store.tree_size()


def test_another_rows_authenticator_does_not_authenticate_a_forged_row(ledger: Ledger) -> None:
    sid, forged = forge_at_head(ledger)
    raw(  # allowed by the guard on UPDATE: the forged row has no authenticator to keep
        ledger.store,
        "UPDATE events SET mac = (SELECT mac FROM events WHERE position = ?) WHERE position = ?",
        (forged - 1, forged),
    )
    with pytest.raises(IntegrityViolation, match=f"the event at position {forged} has a wrong authenticator"):
        ledger.assert_compliance(ALICE, sid)


def _tree_after(store: SqlEventStore, size: int, position: int) -> list[bytes]:
    """The stored hashes a tree of ``size`` leaves would add for the event at ``position``."""
    leaf = merkle.leaf_hash(bytes.fromhex(_raw_hash(store, position)))
    return merkle.new_stored_hashes(size, leaf, store.tree_hashes)


def _raw_hash(store: SqlEventStore, position: int) -> str:
    with store.read_cursor() as cur:
        cur.execute(store.sql("SELECT hash FROM events WHERE position = ?"), (position,))
        return str(cur.fetchone()[0])


# --- a ledger from before authenticators and the tree -----------------------------------------------------------


def old_ledger(tmp_path: Path, url: str, sessions: int = 3) -> tuple[Settings, int]:
    """A ledger as the code before authenticators wrote it: events only (no ``mac`` and ``tree`` columns, every
    UPDATE refused), bound to its receipt and signing keys; returns its settings and head."""
    settings = Settings(home=tmp_path, database_url=url)  # type: ignore[call-arg]
    key, _ = receipt_key.create_key(settings.key_path)
    from ledger.core import signing

    signer, _ = signing.create_signing_key(settings.signing_key_path)
    store = SqlEventStore(make_engine(url), row_key=None, _tlog=False)
    store.create_schema()
    public = signer.public
    store.append(
        "ledger",
        0,
        [
            LedgerInitialised(receipt_key_id=key.key_id),
            SigningKeyBound(key_id=public.key_id, public_key=signing.b64url(public.raw)),
        ],
        SYSTEM,
    )
    for n in range(sessions):
        sid = f"ses_{n:020d}"
        meta = {"agent": "alice", "source": "mcp", "session_id": sid}
        store.append(f"session:{sid}", 0, [SessionStarted(session_id=sid, agent="alice", role="dev")], meta)
        store.append(
            f"session:{sid}", 1, [MemorySearched(session_id=sid, query="q", limit=5, result_ids=[], count=0)], meta
        )
    head = store.head()[0]
    if store.dialect == "sqlite":  # a column a trigger names cannot be dropped
        raw(store, "DROP TRIGGER events_reject_update")
        raw(store, "ALTER TABLE events DROP COLUMN mac")
        raw(store, "ALTER TABLE events DROP COLUMN tree")
        raw(store, LEGACY_REJECT_UPDATE)
    else:
        raw(store, "ALTER TABLE events DROP COLUMN mac, DROP COLUMN tree")
    store.dispose()
    return settings, head


class Bars:
    """A recording stand-in for the CLI's progress bars."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[int, list[int]]] = {}

    @contextmanager
    def __call__(self, label: str, total: int) -> Iterator[Callable[[int], None]]:
        ticks: list[int] = []
        self.seen[label] = (total, ticks)
        yield ticks.append


def test_init_authenticates_an_old_ledger_once_and_builds_its_tree(tmp_path: Path, db_url: str) -> None:
    settings, head = old_ledger(tmp_path, db_url)
    before = open_ledger(settings)
    with pytest.raises(NotInitialised, match="run `compliance-ledger init`"):
        before.clock_in(ALICE, "dev")  # never an unauthenticated append on an old ledger
    before.store.dispose()

    bars = Bars()
    ledger, _ = initialise(settings, progress=bars)
    try:
        assert bars.seen["authenticating events"] == (head, [head])
        total, ticks = bars.seen["building the tree"]
        assert total == head + 1 and ticks[-1] == head + 1  # the vouching record is a leaf too
        marker = ledger.store.get(head + 1)
        assert marker is not None and marker.type == RowKeyBound.type_name
        assert json.loads(marker.data_json) == {"key_id": ledger.store.row_key.key_id, "vouched_through": head}  # type: ignore[union-attr]
        settings_recorded = ledger.store.get(head + 2)  # then the node's decision settings, which it had none of
        assert settings_recorded is not None and settings_recorded.type == "SettingsApplied"
        assert ledger.verify().ok and ledger.store.tree_size() == head + 2
        sid = ledger.clock_in(ALICE, "dev").session_id
        ledger.search(ALICE, sid, "anything")
        assert ledger.assert_compliance(ALICE, sid).status == "PASS"
        assert ledger.verify().ok
        assert ledger.initialise(bars) is False  # nothing more to vouch for or build
    finally:
        ledger.store.dispose()
    code, output = cli(tmp_path, db_url, "verify")
    assert code == 0 and "every event authenticated, tree matching" in output


def test_the_cli_init_upgrades_an_old_ledger(tmp_path: Path, db_url: str) -> None:
    _, head = old_ledger(tmp_path, db_url)
    assert cli(tmp_path, db_url, "verify")[0] != 0
    code, output = cli(tmp_path, db_url, "init")
    assert code == 0, output
    code, output = cli(tmp_path, db_url, "verify")  # init also seeded the constitution after the upgrade
    assert code == 0 and "chain intact, every event authenticated, tree matching" in output, output
    store = SqlEventStore(make_engine(db_url), row_key=None)
    marker = store.get(head + 1)
    assert marker is not None and json.loads(marker.data_json)["vouched_through"] == head
    store.dispose()


def test_an_old_ledger_whose_chain_is_broken_is_not_vouched_for(tmp_path: Path, db_url: str) -> None:
    settings, head = old_ledger(tmp_path, db_url)
    store = SqlEventStore(make_engine(db_url), row_key=None, _tlog=False)
    if store.dialect == "sqlite":
        raw(store, "DROP TRIGGER events_reject_update")
    else:
        raw(store, "ALTER TABLE events DISABLE TRIGGER USER")
    raw(store, "UPDATE events SET data = replace(data, '\"q\"', '\"forged\"') WHERE position = ?", (head,))
    with pytest.raises(IntegrityViolation, match=f"the chain breaks at position {head}") as caught:
        initialise(settings)
    assert caught.value.position == head
    assert store.pending_upgrade()[0] == head  # nothing was authenticated: still an old ledger
    store.dispose()


def test_an_old_ledger_with_another_receipt_key_is_not_vouched_for(tmp_path: Path, db_url: str) -> None:
    settings, _ = old_ledger(tmp_path, db_url)
    settings.key_path.unlink()
    receipt_key.create_key(settings.key_path)  # a new key file: the ledger is bound to the old one
    with pytest.raises(Conflict, match=r"receipt key .* is [0-9a-f]+, not this ledger.s"):
        initialise(settings)
    engine = make_engine(db_url)
    # refused before any DDL: still an old ledger, without the authenticators' table or a schema version
    assert migration.schema_state(engine) == migration.SchemaState(has_events=True, version=None)
    engine.dispose()


def test_dropped_authenticators_are_not_taken_for_an_old_ledger(
    make_ledger: LedgerFactory, tmp_path: Path, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    _, forged = forge_at_head(ledger)
    if ledger.store.dialect == "sqlite":  # what an attacker with DDL rights could try: "upgrade" me again
        raw(ledger.store, "DROP TRIGGER events_reject_update")
    raw(ledger.store, "ALTER TABLE events DROP COLUMN mac")
    ledger.store.dispose()
    with pytest.raises(IntegrityViolation, match="it was dropped behind the ledger's back"):
        make_ledger(db_url)
    assert cli(tmp_path, db_url, "init")[0] != 0
    store = SqlEventStore(make_engine(db_url), row_key=None)
    assert store.pending_upgrade()[0] == forged  # nothing vouched for
    store.dispose()


def test_a_wiped_tree_is_built_again_by_init(make_ledger: LedgerFactory, db_url: str) -> None:
    ledger = make_ledger(db_url)
    ledger.search(ALICE, ledger.clock_in(ALICE, "dev").session_id, "anything")
    head = ledger.store.head()[0]
    if ledger.store.dialect == "sqlite":  # the tree's hashes wiped from every row (DDL rights)
        raw(ledger.store, "DROP TRIGGER events_reject_update")
    else:
        raw(ledger.store, "ALTER TABLE events DISABLE TRIGGER USER")
    raw(ledger.store, "UPDATE events SET tree = NULL")
    ledger.store._forget_head()  # as a store that did not write the head reads it (another process, a restart)
    with pytest.raises(NotInitialised):
        ledger.clock_in(BOB, "dev")
    ledger.store.dispose()
    again = make_ledger(db_url)
    assert again.store.tree_size() == head and again.verify().ok
    again.clock_in(BOB, "dev")
    assert again.verify().ok


def test_a_store_without_the_row_key_reads_but_never_appends(ledger: Ledger) -> None:
    keyless = SqlEventStore(ledger.store.engine, row_key=None)
    assert keyless.load_stream("ledger").version == ledger.store.load_stream("ledger").version
    with pytest.raises(NotInitialised, match="without the row key"):
        keyless.append("session:x", 0, [SessionStarted(session_id="x", agent="a", role="dev")], SYSTEM)
    with pytest.raises(NotInitialised, match="without the row key"):
        keyless.build_tree()


def test_another_key_fails_closed_at_the_first_event(ledger: Ledger) -> None:
    stranger = SqlEventStore(ledger.store.engine, row_key=RowKey(bytes(32)))
    with pytest.raises(IntegrityViolation, match="position 1 has a wrong authenticator"):
        stranger.load_stream("ledger")
    with pytest.raises(IntegrityViolation, match="has a wrong authenticator"):
        stranger.append("session:x", 0, [SessionStarted(session_id="x", agent="a", role="dev")], SYSTEM)


def test_a_row_rewritten_under_its_own_hash_and_authenticator_is_refused(ledger: Ledger) -> None:
    """An attacker with the database (triggers off) moves bob's genuine search into alice's open session and makes
    a key an administrator's, keeping each row's hash and authenticator: every read recomputes the hash from the
    columns it returns, so neither the gate nor the key ring decides on them."""
    sid, version = session_with_no_search(ledger)
    bob_sid = ledger.clock_in(BOB, "dev").session_id
    ledger.search(BOB, bob_sid, "anything")
    moved = max(r.position for r in ledger.store.iter_records(stream=f"session:{bob_sid}", types=["MemorySearched"]))
    ledger.issue_api_key(Actor("root", "cli", admin=True), "mallory")
    key_row = max(r.position for r in ledger.store.iter_records(types=["ApiKeyIssued"]))
    disable_all_triggers(ledger.store)
    meta = json.dumps({"agent": "alice", "session_id": sid, "source": "mcp"}, separators=(",", ":"), sort_keys=True)
    raw(
        ledger.store,
        "UPDATE events SET stream = ?, version = ?, meta = ?, data = replace(data, ?, ?) WHERE position = ?",
        (f"session:{sid}", version + 1, meta, bob_sid, sid, moved),
    )
    raw(ledger.store, "UPDATE events SET data = replace(data, '\"agent\"', '\"admin\"') WHERE position = ?", (key_row,))
    with pytest.raises(IntegrityViolation, match=f"position {moved} does not match its hash"):
        ledger.assert_compliance(ALICE, sid)
    with pytest.raises(IntegrityViolation, match=f"position {key_row} does not match its hash"):
        ledger.key_ring()
    report = ledger.verify()
    assert not report.ok and report.first_bad_position == moved


def disable_all_triggers(store: SqlEventStore) -> None:
    if store.dialect == "sqlite":
        for name in ("events_require_chain", "events_reject_update", "events_reject_delete"):
            raw(store, f"DROP TRIGGER IF EXISTS {name}")
    else:
        raw(store, "ALTER TABLE events DISABLE TRIGGER USER")
