"""The ``events`` table: its schema, the append-only and hash-chain triggers, the advisory-lock keys that
serialise writers on PostgreSQL, and the SQL texts the store runs."""

from __future__ import annotations

import functools

import sqlalchemy as sa

from ledger.core.chain import GENESIS_HASH

# PostgreSQL serialises writers with a transaction-level advisory lock in its two-int form: the first int is
# the oid of this ledger's ``events`` table (so ledgers in different schemas of one database never wait for each
# other), the second names what is serialised. Every node of one ledger must compute the same key, i.e. run
# the same version: a node still taking the old single-key lock would not exclude a new one.
APPEND_LOCK = 0x6C656467  # "ledg": appends to the events table
INDEX_LOCK = 0x6D656D69  # "memi": search index maintenance
SNAPSHOT_LOCK = 0x736E6170  # "snap": projection snapshot writes (ledger.snapshots)
# Leases (ledger.core.storage.leases): one node at a time does this work; same two-int form, same first int.
CHECKPOINT_LEASE = 0x636B7074  # "ckpt": the background writer of signed checkpoints to a checkpoint file
TLOG_LEASE = 0x746C6F67  # "tlog": signing a transparency-log checkpoint (and asking the witnesses to cosign it)
CONSOLIDATE_LEASE = 0x636F6E73  # "cons": remember's near-duplicate check and its append
SNAPSHOT_LEASE = 0x736E706C  # "snpl": the background writer of projection snapshots (encode, sign, write)
_LEDGER_OID = "'events'::regclass::oid::int4"  # oid is unsigned; the int4 cast wraps, and stays unique


# The ``events`` table. Only this package knows it; everything else sees typed events. SQLAlchemy Core, not a
# SQLModel class: the schema is all it is used for (reads and appends go through the driver), and SQLModel
# pulled in the ORM at import (~50 ms and ~11 MB per process; docs/DESIGN_NOTES.md).
_METADATA = sa.MetaData()
EVENTS = sa.Table(
    "events",
    _METADATA,
    sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("stream", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("type", sa.Text, nullable=False, index=True),
    sa.Column("schema_version", sa.Integer, nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("meta", sa.Text, nullable=False),
    sa.Column("recorded_at", sa.Text, nullable=False, index=True),
    sa.Column("prev_hash", sa.Text, nullable=False),
    sa.Column("hash", sa.Text, nullable=False),
    # Schema 3: the row's authenticator (ledger.core.storage.authenticator) and the transparency-log tree's hashes
    # its leaf stored (ledger.core.storage.tree), written with the row: no side table to write in each commit.
    # Neither is hashed into the chain; NULL only on rows written before them, until the upgrade writes them.
    sa.Column("mac", sa.LargeBinary, nullable=True),
    sa.Column("tree", sa.LargeBinary, nullable=True),
    sa.UniqueConstraint("stream", "version", name="events_stream_version"),
)


_COLUMNS = "position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash"
_STORED = _COLUMNS + ", mac, tree"  # what an append writes: the hashed columns, then the authenticator and the tree

# A stream's version: the (stream, version) index walked backwards, one row read however long the stream is
# (MAX(version) with the position filter read every row of the stream).
_STREAM_VERSION = "SELECT version FROM events WHERE stream = ? AND position >= 1 ORDER BY version DESC LIMIT 1"
_VERSION_AND_HEAD = (
    f"SELECT COALESCE(({_STREAM_VERSION}), 0), head.position, "
    "head.hash, head.recorded_at FROM (SELECT 1 AS one) AS anchor LEFT JOIN "
    "(SELECT position, hash, recorded_at FROM events WHERE position >= 1 ORDER BY position DESC LIMIT 1) AS head "
    "ON anchor.one = 1"
)

_CHAIN_MESSAGE = "events is a hash chain: a new row must extend it (position = head + 1, prev_hash = head hash)"

# The agent named in an event's metadata (``meta`` is canonical JSON text on both backends).
_META_AGENT = {"sqlite": "json_extract(meta, '$.agent')", "postgresql": "(meta::json ->> 'agent')"}

# An UPDATE may only write what a row lacks, its authenticator or its tree hashes (the upgrade of a ledger from
# before them): every hashed column stays, a value once written stays, and it must write one of them (an UPDATE
# that changes nothing is refused too: nothing has reason to run one).
_HASHED_NEW = ", ".join(f"NEW.{c}" for c in _COLUMNS.split(", "))
_HASHED_OLD = ", ".join(f"OLD.{c}" for c in _COLUMNS.split(", "))
_FILL_ONCE = " (only the authenticator or the tree hashes a row lacks may be written)"
_SQLITE_KEEPS = " AND ".join(f"NEW.{c} IS OLD.{c}" for c in _COLUMNS.split(", "))

# SQLite's guard on UPDATE, for a table with the ``mac`` and ``tree`` columns (schema 3; it replaces version 2's,
# which refused every UPDATE: a ledger from before authenticators keeps that one until its rows are vouched for).
GUARD_UPDATE = {
    "sqlite": [
        "DROP TRIGGER IF EXISTS events_reject_update",
        f"""CREATE TRIGGER IF NOT EXISTS events_reject_update BEFORE UPDATE ON events
           WHEN NOT ({_SQLITE_KEEPS} AND (OLD.mac IS NULL OR NEW.mac IS OLD.mac)
                     AND (OLD.tree IS NULL OR NEW.tree IS OLD.tree)
                     AND ((OLD.mac IS NULL AND NEW.mac IS NOT NULL) OR (OLD.tree IS NULL AND NEW.tree IS NOT NULL)))
           BEGIN SELECT RAISE(ABORT, 'events is append-only: UPDATE rejected{_FILL_ONCE}'); END""",
    ],
    "postgresql": [],  # events_reject_change decides (see _TRIGGERS)
}
LEGACY_REJECT_UPDATE = """CREATE TRIGGER IF NOT EXISTS events_reject_update BEFORE UPDATE ON events
           BEGIN SELECT RAISE(ABORT, 'events is append-only: UPDATE rejected'); END"""

# Rewriting every row's tree hashes (``replay --rebuild``, after the chain and authenticators verified): the guard
# is lifted inside the rebuild's transaction and put back before it commits.
TREE_REWRITE = {
    "sqlite": (["DROP TRIGGER IF EXISTS events_reject_update"], GUARD_UPDATE["sqlite"][1:]),
    "postgresql": (
        ["ALTER TABLE events DISABLE TRIGGER events_reject_change"],
        ["ALTER TABLE events ENABLE TRIGGER events_reject_change"],
    ),
}

_TRIGGERS = {
    "sqlite": [
        """CREATE TRIGGER IF NOT EXISTS events_reject_delete BEFORE DELETE ON events
           BEGIN SELECT RAISE(ABORT, 'events is append-only: DELETE rejected'); END""",
        # Both lookups are primary-key probes. The previous row is position - 1 once the position is head + 1.
        f"""CREATE TRIGGER IF NOT EXISTS events_require_chain BEFORE INSERT ON events
           BEGIN SELECT RAISE(ABORT, '{_CHAIN_MESSAGE}')
           WHERE NEW.position IS NOT (SELECT COALESCE(MAX(position), 0) + 1 FROM events WHERE position >= 1)
              OR NEW.prev_hash IS NOT COALESCE(
                   (SELECT hash FROM events WHERE position = NEW.position - 1 AND position >= 1), '{GENESIS_HASH}');
           END""",
    ],
    "postgresql": [
        f"""CREATE OR REPLACE FUNCTION events_reject_change() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN
             IF TG_OP = 'UPDATE' AND ({_HASHED_NEW}) IS NOT DISTINCT FROM ({_HASHED_OLD})
                AND (OLD.mac IS NULL OR NEW.mac IS NOT DISTINCT FROM OLD.mac)
                AND (OLD.tree IS NULL OR NEW.tree IS NOT DISTINCT FROM OLD.tree)
                AND ((OLD.mac IS NULL AND NEW.mac IS NOT NULL) OR (OLD.tree IS NULL AND NEW.tree IS NOT NULL)) THEN
               RETURN NEW;
             END IF;
             RAISE EXCEPTION USING MESSAGE = 'events is append-only: ' || TG_OP || ' rejected{_FILL_ONCE}';
           END $$""",
        "DROP TRIGGER IF EXISTS events_reject_change ON events",
        """CREATE TRIGGER events_reject_change BEFORE UPDATE OR DELETE ON events
           FOR EACH ROW EXECUTE FUNCTION events_reject_change()""",
        "DROP TRIGGER IF EXISTS events_reject_truncate ON events",
        """CREATE TRIGGER events_reject_truncate BEFORE TRUNCATE ON events
           FOR EACH STATEMENT EXECUTE FUNCTION events_reject_change()""",
        # search_path is pinned to the schema the ledger was created in, so ``events`` is always this table.
        f"""CREATE OR REPLACE FUNCTION events_require_chain() RETURNS trigger LANGUAGE plpgsql
           SET search_path FROM CURRENT AS $$
           DECLARE head_position bigint; head_hash text;
           BEGIN
             SELECT position, hash INTO head_position, head_hash FROM events WHERE position >= 1
               ORDER BY position DESC LIMIT 1;
             IF NOT FOUND THEN head_position := 0; head_hash := '{GENESIS_HASH}'; END IF;
             IF NEW.position IS DISTINCT FROM head_position + 1 OR NEW.prev_hash IS DISTINCT FROM head_hash THEN
               RAISE EXCEPTION USING ERRCODE = 'integrity_constraint_violation', MESSAGE = '{_CHAIN_MESSAGE}';
             END IF;
             RETURN NEW;
           END $$""",
        "DROP TRIGGER IF EXISTS events_require_chain ON events",
        """CREATE TRIGGER events_require_chain BEFORE INSERT ON events
           FOR EACH ROW EXECUTE FUNCTION events_require_chain()""",
    ],
}


# Rows per multi-row INSERT on SQLite: 12 parameters a row stays under the oldest SQLite's 999-parameter limit,
# and statement texts of 1..64 rows stay within the driver's statement cache.
_INSERT_CHUNK = 64
_ROW = "(" + ", ".join(["?"] * 12) + ")"
# PostgreSQL: the authenticator and the tree hashes are sent in binary (psycopg's %b), not escaped to hex text:
# measured, the escaping was most of what they added to a 16-writer append's CPU.
_ROWS = {"sqlite": _ROW, "postgresql": "(" + ", ".join(["%s"] * 10 + ["%b"] * 2) + ")"}


def insert_one_sql(dialect: str) -> str:
    """Insert one row (the hashed columns, then ``mac`` and ``tree``) in the driver's paramstyle."""
    return f"INSERT INTO events ({_STORED}) VALUES {_ROWS[dialect]}"


@functools.lru_cache(maxsize=2 * _INSERT_CHUNK)
def insert_rows_sql(dialect: str, rows: int) -> str:
    """Insert ``rows`` rows in one statement, in the driver's paramstyle."""
    values = ", ".join([_ROWS[dialect]] * rows)
    return f"INSERT INTO events ({_STORED}) VALUES {values}"


@functools.lru_cache(maxsize=_INSERT_CHUNK)
def _guarded_insert_sql(rows: int) -> str:
    """Insert ``rows`` only if the head's hash is still the parameter after the rows (NULL: an empty ledger) and
    every stream of the JSON object after that is still at its version (each check an index probe). SQLite runs
    the VALUES list as a co-routine, so rows go in in the order given (no sort), as the chain trigger requires."""
    values = ", ".join([_ROW] * rows)
    return (
        f"INSERT INTO events ({_STORED}) SELECT * FROM (VALUES {values}) WHERE "
        "(SELECT hash FROM events WHERE position >= 1 ORDER BY position DESC LIMIT 1) IS ? AND NOT EXISTS "
        "(SELECT 1 FROM json_each(?) AS expected WHERE expected.value IS NOT COALESCE((SELECT version FROM events "
        "WHERE stream = expected.key AND position >= 1 ORDER BY version DESC LIMIT 1), 0))"
    )


@functools.lru_cache(maxsize=64)
def _versions_and_head_sql(streams: int) -> str:
    """One statement for a group: a row per stream (name, version) and the head's row (NULL, position, hash,
    recorded_at), each an index probe."""
    head = (
        "SELECT NULL, position, hash, recorded_at FROM (SELECT position, hash, recorded_at FROM events "
        "WHERE position >= 1 ORDER BY position DESC LIMIT 1) AS head"
    )
    versions = [f"SELECT ?, COALESCE(({_STREAM_VERSION}), 0), NULL, NULL" for _ in range(streams)]
    return " UNION ALL ".join([head, *versions])


# --- version 2's side tables ----------------------------------------------------------------------------------
# Up to schema 2 the authenticators and the tree's hashes had tables of their own, ``event_auth`` and
# ``tlog_hashes`` (and SQLite a view writing both): two more B-trees written in every commit. Schema 3 keeps them in
# the events row; the migration (:mod:`ledger.core.storage.upgrade`) moves the authenticators in, drops these and
# builds the tree in the rows.
_DROP_SIDE = ["DROP TABLE IF EXISTS event_auth", "DROP TABLE IF EXISTS tlog_hashes"]
LEGACY_DROP = {
    "sqlite": ["DROP VIEW IF EXISTS tlog_seal", *_DROP_SIDE],
    "postgresql": [*_DROP_SIDE, "DROP FUNCTION IF EXISTS ledger_append_only()"],
}


# ``data_keys``: the data keys of free text (ledger.core.data_keys), each wrapped under the key-encryption key; a
# key's row is written in the transaction of the first event sealed under it, and deleted to erase (schema 2).
DATA_KEYS_DDL = {
    # One b-tree on SQLite (WITHOUT ROWID), one index on PostgreSQL: a key is found by its subject (the stream a
    # sealed field is read from) and its id, and an append writes one more entry in its commit, not three.
    "sqlite": [
        "CREATE TABLE IF NOT EXISTS data_keys (subject TEXT NOT NULL, kid TEXT NOT NULL, wrapped BLOB NOT NULL, "
        "created_at TEXT NOT NULL, PRIMARY KEY (subject, kid)) WITHOUT ROWID",
    ],
    "postgresql": [
        "CREATE TABLE IF NOT EXISTS data_keys (subject TEXT NOT NULL, kid TEXT NOT NULL, wrapped BYTEA NOT NULL, "
        "created_at TEXT NOT NULL, PRIMARY KEY (subject, kid))",
    ],
}


def table_exists_sql(dialect: str) -> str:
    """One row (1) when the table named by the parameter exists in this ledger's schema."""
    if dialect == "sqlite":
        return "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    return "SELECT 1 WHERE to_regclass(?) IS NOT NULL"


def column_exists_sql(dialect: str) -> str:
    """One row (1) when the ``events`` table of this ledger's schema has the column named by the parameter."""
    if dialect == "sqlite":
        return "SELECT 1 FROM pragma_table_info('events') WHERE name = ?"
    return (
        "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'events' "
        "AND column_name = ?"
    )


# Each with the column it adds (None: it adds what is missing itself).
ADD_ROW_COLUMNS: dict[str, list[tuple[str | None, str]]] = {
    "sqlite": [("mac", "ALTER TABLE events ADD COLUMN mac BLOB"), ("tree", "ALTER TABLE events ADD COLUMN tree BLOB")],
    "postgresql": [
        (None, "ALTER TABLE events ADD COLUMN IF NOT EXISTS mac BYTEA, ADD COLUMN IF NOT EXISTS tree BYTEA")
    ],
}


# The head of the log with its authenticator (NULL when it has none): what a writer checks before chaining after
# a head it did not write itself.
_AUTH_HEAD = "SELECT position, hash, recorded_at, mac FROM events WHERE position >= 1 ORDER BY position DESC LIMIT 1"
VERSION_AND_AUTH_HEAD = (
    f"SELECT COALESCE(({_STREAM_VERSION}), 0), head.position, head.hash, head.recorded_at, head.mac "
    f"FROM (SELECT 1 AS one) AS anchor LEFT JOIN ({_AUTH_HEAD}) AS head ON anchor.one = 1"
)


@functools.lru_cache(maxsize=64)
def versions_and_auth_head_sql(streams: int) -> str:
    """:func:`_versions_and_head_sql` with the head's authenticator as a fifth column."""
    head = f"SELECT NULL, position, hash, recorded_at, mac FROM ({_AUTH_HEAD}) AS head"
    versions = [f"SELECT ?, COALESCE(({_STREAM_VERSION}), 0), NULL, NULL, NULL" for _ in range(streams)]
    return " UNION ALL ".join([head, *versions])


# The tree's newest leaf: the last row with tree hashes (the head, once the tree is in step with the log), with
# what checks it. A backward walk of the primary key from the head: one row read when in step.
TREE_HEAD = (
    "SELECT position, hash, mac, tree FROM events WHERE position >= 1 AND tree IS NOT NULL "
    "ORDER BY position DESC LIMIT 1"
)
