"""Schema 3 (issue 24): each row's authenticator and its leaf's tree hashes live in the events row. A ledger of
schema 2 (the side tables ``event_auth`` and ``tlog_hashes``, every UPDATE on ``events`` refused) is refused by a
start and brought up by ``migrate``: its authenticators moved into the rows, the side tables dropped, the tree
built in the rows from the chain. A checkpoint signed before the migration still verifies after it (the same tree),
and the ledger appends and proves as before. An authenticator the side table did not hold (a row forged into the
schema-2 ledger) is not invented by the migration."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli import app
from ledger.core.errors import IntegrityViolation
from ledger.core.storage import migration
from ledger.core.tlog import merkle
from ledger.service import Ledger
from tests.conftest import LedgerFactory
from tests.integration.test_tamper import ALICE, forged_search, raw

# Version 2's side tables and their triggers, as its code created them (ledger/core/storage/schema.py at schema 2).
_V2 = {
    "sqlite": [
        "CREATE TABLE tlog_hashes (id INTEGER PRIMARY KEY CHECK (id >= 0), hash BLOB NOT NULL CHECK "
        "(length(hash) = 32))",
        "CREATE TABLE event_auth (position INTEGER PRIMARY KEY CHECK (position >= 1), mac BLOB NOT NULL CHECK "
        "(length(mac) = 32))",
        *(
            f"CREATE TRIGGER {table}_reject_{op.lower()} BEFORE {op} ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{table} is append-only: {op} rejected'); END"
            for table in ("tlog_hashes", "event_auth")
            for op in ("UPDATE", "DELETE")
        ),
        "CREATE VIEW tlog_seal (first, macs, auth_keys, node, hashes, tree_keys) AS "
        "SELECT 0, x'', '[]', 0, x'', '[]' WHERE 0",
    ],
    "postgresql": [
        "CREATE TABLE tlog_hashes (id BIGINT PRIMARY KEY CHECK (id >= 0), hash BYTEA NOT NULL CHECK "
        "(octet_length(hash) = 32))",
        "CREATE TABLE event_auth (position BIGINT PRIMARY KEY CHECK (position >= 1), mac BYTEA NOT NULL CHECK "
        "(octet_length(mac) = 32))",
        """CREATE OR REPLACE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION USING MESSAGE = TG_TABLE_NAME || ' is append-only: ' || TG_OP || ' rejected';
           END $$""",
        *(
            f"CREATE TRIGGER {table}_reject_change BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION ledger_append_only()"
            for table in ("tlog_hashes", "event_auth")
        ),
    ],
}
_V2_REJECT_UPDATE = (
    "CREATE TRIGGER events_reject_update BEFORE UPDATE ON events "
    "BEGIN SELECT RAISE(ABORT, 'events is append-only: UPDATE rejected'); END"
)


def cli(home: Path, url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["--home", str(home), "--db", url, *args])
    return result.exit_code, result.stdout + result.stderr


def note_of(home: Path, url: str) -> str:
    """A C2SP checkpoint note of the ledger's head, as `tlog checkpoint` prints it (stdout alone)."""
    result = CliRunner().invoke(app, ["--home", str(home), "--db", url, "tlog", "checkpoint"])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def as_schema_2(ledger: Ledger) -> None:
    """Rewrite the ledger's database into schema 2's layout: authenticators and tree hashes moved out of the rows
    into their side tables (the hashes by stored index), the columns dropped, version 2 recorded."""
    store = ledger.store
    dialect = store.dialect
    with store.read_cursor() as cur:
        cur.execute("SELECT position, mac, tree FROM events ORDER BY position")
        rows = [(int(p), bytes(m), bytes(t)) for p, m, t in cur.fetchall()]
    for ddl in _V2[dialect]:
        raw(store, ddl)
    for position, mac, tree in rows:
        raw(store, "INSERT INTO event_auth (position, mac) VALUES (?, ?)", (position, mac))
        first = merkle.stored_hash_index(0, position - 1)
        for k in range(len(tree) // 32):
            raw(store, "INSERT INTO tlog_hashes (id, hash) VALUES (?, ?)", (first + k, tree[32 * k : 32 * k + 32]))
    if dialect == "sqlite":
        raw(store, "DROP TRIGGER events_reject_update")  # it names the columns: they cannot go while it stands
        raw(store, "ALTER TABLE events DROP COLUMN mac")
        raw(store, "ALTER TABLE events DROP COLUMN tree")
        raw(store, _V2_REJECT_UPDATE)
    else:
        raw(store, "ALTER TABLE events DROP COLUMN mac, DROP COLUMN tree")
    raw(store, "UPDATE ledger_schema SET version = 2")
    store._forget_head()


def busy(ledger: Ledger, sessions: int) -> None:
    for _ in range(sessions):
        sid = ledger.clock_in(ALICE, "dev").session_id
        ledger.search(ALICE, sid, "anything")
        ledger.assert_compliance(ALICE, sid)


def test_migrate_moves_a_schema_2_ledger_into_its_rows_and_keeps_its_tree(
    make_ledger: LedgerFactory, tmp_path: Path, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    busy(ledger, 5)
    (tmp_path / "before.note").write_text(note_of(tmp_path, db_url))
    head = ledger.store.head()[0]
    root = ledger.store.tree_root(head)
    as_schema_2(ledger)
    ledger.store.dispose()

    state = migration.schema_state(ledger.store.engine)
    assert state.version == 2 and not state.current
    code, said = cli(tmp_path, db_url, "serve", "--port", "0")
    assert code != 0 and "run `compliance-ledger migrate`" in " ".join(said.split()), said
    code, said = cli(tmp_path, db_url, "migrate")
    assert code == 0 and "migrated from version 2" in said, said

    assert migration.schema_state(ledger.store.engine).current
    with ledger.store.read_cursor() as cur:
        for table in ("event_auth", "tlog_hashes"):
            cur.execute(ledger.store.sql(migration.table_exists_sql(ledger.store.dialect)), (table,))
            assert cur.fetchone() is None, f"{table} is still there"
        cur.execute("SELECT COUNT(*) FROM events WHERE mac IS NULL OR tree IS NULL")
        assert cur.fetchone()[0] == 0
    again = make_ledger(db_url)
    assert again.store.tree_root(head) == root  # the same tree: what was signed before still holds
    code, said = cli(tmp_path, db_url, "verify", "--checkpoint", str(tmp_path / "before.note"))
    assert code == 0 and "every event authenticated, tree matching" in said, said
    busy(again, 2)
    size = again.store.head()[0]
    leaf = merkle.leaf_hash(again.store.leaf_data(head))
    merkle.verify_inclusion(
        head - 1, size, leaf, again.store.prove_inclusion(head - 1, size), again.store.tree_root(size)
    )
    merkle.verify_consistency(head, size, again.store.prove_consistency(head, size), root, again.store.tree_root(size))
    assert again.verify().ok


def test_the_migration_invents_no_authenticator_for_a_row_forged_into_a_schema_2_ledger(
    make_ledger: LedgerFactory, tmp_path: Path, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    busy(ledger, 2)
    sid = ledger.clock_in(ALICE, "dev").session_id
    version = ledger.store.load_stream(f"session:{sid}").version
    as_schema_2(ledger)
    head, head_hash = ledger.store.head()
    # Schema 2's weakness: INSERT rights alone put a chained row at the head (without an authenticator).
    raw(ledger.store, FORGED_INSERT, forged_search(ledger.store, sid, head + 1, version + 1, head_hash))
    ledger.store.dispose()
    code, said = cli(tmp_path, db_url, "migrate")
    assert code != 0 and f"position {head + 1}" in said, said  # the tree is built over authenticated rows only
    again_state = migration.schema_state(ledger.store.engine)
    assert again_state.version == 2  # nothing recorded: a failed migration keeps the old version
    with pytest.raises(IntegrityViolation, match=f"the event at position {head + 1} has no authenticator"):
        ledger.store.load_stream(f"session:{sid}")


FORGED_INSERT = (
    "INSERT INTO events (position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
