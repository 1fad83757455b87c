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
    sa.UniqueConstraint("stream", "version", name="events_stream_version"),
)


_COLUMNS = "position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash"

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

_TRIGGERS = {
    "sqlite": [
        """CREATE TRIGGER IF NOT EXISTS events_reject_update BEFORE UPDATE ON events
           BEGIN SELECT RAISE(ABORT, 'events is append-only: UPDATE rejected'); END""",
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
        """CREATE OR REPLACE FUNCTION events_reject_change() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION USING MESSAGE = 'events is append-only: ' || TG_OP || ' rejected'; END $$""",
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


# Rows per multi-row INSERT on SQLite: 10 parameters a row stays under the oldest SQLite's 999-parameter limit,
# and statement texts of 1..64 rows stay within the driver's statement cache.
_INSERT_CHUNK = 64


@functools.lru_cache(maxsize=_INSERT_CHUNK)
def _insert_rows_sql(rows: int) -> str:
    values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * rows)
    return f"INSERT INTO events ({_COLUMNS}) VALUES {values}"


@functools.lru_cache(maxsize=_INSERT_CHUNK)
def _guarded_insert_sql(rows: int) -> str:
    """Insert ``rows`` only if the head's hash is still the parameter after the rows (NULL: an empty ledger) and
    every stream of the JSON object after that is still at its version (each check an index probe). SQLite runs
    the VALUES list as a co-routine, so rows go in in the order given (no sort), as the chain trigger requires."""
    values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * rows)
    return (
        f"INSERT INTO events ({_COLUMNS}) SELECT * FROM (VALUES {values}) WHERE "
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


# --- the transparency-log tree and the row authenticators ---------------------------------------------------
# ``tlog_hashes``: the tree's stored hashes (ledger.core.tlog.merkle's layout, id = stored-hash index), written in
# the transaction of the events they cover. ``event_auth``: each event's authenticator (ledger.core.storage.
# authenticator), written in the transaction of its event. Both append-only, like ``events``; on SQLite the key
# is an INTEGER PRIMARY KEY, i.e. the rowid itself (one B-tree, appended at its end).

_APPEND_ONLY = ("tlog_hashes", "event_auth")
_TLOG_TABLES = {
    "sqlite": {
        "tlog_hashes": "CREATE TABLE IF NOT EXISTS tlog_hashes (id INTEGER PRIMARY KEY CHECK (id >= 0), "
        "hash BLOB NOT NULL CHECK (length(hash) = 32))",
        "event_auth": "CREATE TABLE IF NOT EXISTS event_auth (position INTEGER PRIMARY KEY CHECK (position >= 1), "
        "mac BLOB NOT NULL CHECK (length(mac) = 32))",
    },
    "postgresql": {
        "tlog_hashes": "CREATE TABLE IF NOT EXISTS tlog_hashes (id BIGINT PRIMARY KEY CHECK (id >= 0), "
        "hash BYTEA NOT NULL CHECK (octet_length(hash) = 32))",
        "event_auth": "CREATE TABLE IF NOT EXISTS event_auth (position BIGINT PRIMARY KEY CHECK (position >= 1), "
        "mac BYTEA NOT NULL CHECK (octet_length(mac) = 32))",
    },
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


def append_only_ddl(dialect: str, table: str) -> list[str]:
    """``table`` and the triggers that refuse UPDATE and DELETE on it (and TRUNCATE on PostgreSQL)."""
    if dialect == "sqlite":
        return [
            _TLOG_TABLES[dialect][table],
            *(
                f"CREATE TRIGGER IF NOT EXISTS {table}_reject_{op.lower()} BEFORE {op} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{table} is append-only: {op} rejected'); END"
                for op in ("UPDATE", "DELETE")
            ),
            *(_SQLITE_SEAL_DDL if table == "event_auth" else []),
        ]
    return [
        _TLOG_TABLES[dialect][table],
        """CREATE OR REPLACE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION USING MESSAGE = TG_TABLE_NAME || ' is append-only: ' || TG_OP || ' rejected';
           END $$""",
        f"DROP TRIGGER IF EXISTS {table}_reject_change ON {table}",
        f"""CREATE TRIGGER {table}_reject_change BEFORE UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION ledger_append_only()""",
        f"DROP TRIGGER IF EXISTS {table}_reject_truncate ON {table}",
        f"""CREATE TRIGGER {table}_reject_truncate BEFORE TRUNCATE ON {table}
            FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only()""",
    ]


# SQLite: a group's authenticators and tree hashes in one statement, an INSERT into a view whose trigger writes
# both tables (a statement less per group: each one hands Python's GIL round the writer threads). The rows come
# from two blobs of 32-byte values, numbered by json_each over arrays of as many elements (trigger bodies take no
# WITH clause). Created with the authenticators' table.
_SQLITE_SEAL_DDL = [
    "CREATE VIEW IF NOT EXISTS tlog_seal (first, macs, auth_keys, node, hashes, tree_keys) AS "
    "SELECT 0, x'', '[]', 0, x'', '[]' WHERE 0",
    """CREATE TRIGGER IF NOT EXISTS tlog_seal_write INSTEAD OF INSERT ON tlog_seal BEGIN
       INSERT INTO event_auth (position, mac)
         SELECT NEW.first + key, substr(NEW.macs, key * 32 + 1, 32) FROM json_each(NEW.auth_keys);
       INSERT INTO tlog_hashes (id, hash)
         SELECT NEW.node + key, substr(NEW.hashes, key * 32 + 1, 32) FROM json_each(NEW.tree_keys);
       END""",
]
SQLITE_SEAL = "INSERT INTO tlog_seal (first, macs, auth_keys, node, hashes, tree_keys) VALUES (?, ?, ?, ?, ?, ?)"


def seal_ddl(dialect: str) -> list[str]:
    """What writes a group's authenticators and hashes in one statement (SQLite; nothing on PostgreSQL, whose
    appends put them in a data-modifying WITH)."""
    return list(_SQLITE_SEAL_DDL) if dialect == "sqlite" else []


@functools.lru_cache(maxsize=256)
def series_keys(count: int) -> str:
    """A JSON array of ``count`` elements, whose json_each keys number the rows of a blob."""
    return "[" + ",".join(["0"] * count) + "]"


def table_exists_sql(dialect: str) -> str:
    """One row (1) when the table named by the parameter exists in this ledger's schema."""
    if dialect == "sqlite":
        return "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    return "SELECT 1 WHERE to_regclass(?) IS NOT NULL"


# Consecutive rows from one blob of 32-byte values (first key, count, blob): one statement text for any number
# of rows (no multi-row VALUES text per row count to prepare and cache), the keys of a group are consecutive.
_SERIES = {
    "sqlite": "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?) "
    "INSERT INTO {table} ({key}, {value}) SELECT ? + i, substr(?, i * 32 + 1, 32) FROM n",
    "postgresql": "INSERT INTO {table} ({key}, {value}) SELECT ?::bigint + i, "
    "substring(?::bytea FROM i * 32 + 1 FOR 32) FROM generate_series(0, ?::int - 1) AS i",
}


def series_insert(dialect: str, table: str) -> str:
    """Insert consecutive rows of ``tlog_hashes`` or ``event_auth`` (parameters: first key, count, blob on
    PostgreSQL; count, first key, blob on SQLite: see :func:`series_params`)."""
    key, value = ("id", "hash") if table == "tlog_hashes" else ("position", "mac")
    return _SERIES[dialect].format(table=table, key=key, value=value)


def series_params(dialect: str, first: int, blob: bytes) -> tuple[int, int, bytes] | tuple[int, bytes, int]:
    count = len(blob) // 32
    return (count, first, blob) if dialect == "sqlite" else (first, blob, count)


# The head of the log with its authenticator (NULL when it has none): what a writer checks before chaining after
# a head it did not write itself.
_AUTH_HEAD = (
    "SELECT position, hash, recorded_at, (SELECT mac FROM event_auth WHERE event_auth.position = events.position) "
    "AS mac FROM events WHERE position >= 1 ORDER BY position DESC LIMIT 1"
)
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


def authenticated(dialect: str, bound: str = ">") -> tuple[str, int]:
    """The events joined with their authenticators (NULL where a row has none), for a read of consecutive
    positions from a lower bound, and how many times the read passes that bound first. On PostgreSQL the
    authenticators are read from the same bound, or the merge join would walk them from position 1 on every page
    of a scan; on SQLite each row's authenticator is a rowid probe anyway."""
    if dialect == "sqlite":
        return "events LEFT JOIN event_auth USING (position)", 0
    return f"events LEFT JOIN (SELECT position, mac FROM event_auth WHERE position {bound} ?) AS a USING (position)", 1


MAC_OF_ROW = "(SELECT mac FROM event_auth WHERE event_auth.position = events.position)"
"""An event's authenticator as a column of a read of ``events`` (NULL when it has none): one primary-key probe."""
