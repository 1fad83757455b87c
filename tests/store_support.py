"""Store helpers for tests: the row key stores built directly by tests (not through ``api.bootstrap``) use, and
writing a row exactly as the ledger writes it (with its authenticator and tree hashes) for rows an older version
of the ledger wrote in a form today's code no longer produces (a v1 payload, a v1 admin flag)."""

from __future__ import annotations

from typing import Any

from ledger.core.chain import StoredRecord
from ledger.core.storage import RowKey, SqlEventStore

TEST_ROW_KEY = RowKey(bytes(range(32)))
"""One fixed key: every store a test opens on one database, in any process, accepts the others' rows."""

_INSERT = (
    "INSERT INTO events (position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def insert_as_ledger(store: SqlEventStore, record: StoredRecord) -> None:
    """Insert ``record`` at the head as the ledger would have: in one transaction with its authenticator (by the
    store's key) and its leaf in the tree."""
    row: tuple[Any, ...] = (
        record.position,
        record.stream,
        record.version,
        record.type,
        record.schema_version,
        record.data_json,
        record.meta_json,
        record.recorded_at,
        record.prev_hash,
        record.hash,
    )
    with store.write_transaction() as cur:
        cur.execute(store.sql(_INSERT), row)
        store._seal(cur, store._compact(cur, record.position - 1), [row])
    store._forget_head()
