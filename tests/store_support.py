"""Store helpers for tests: the row key stores built directly by tests (not through ``api.bootstrap``) use, and
writing a row exactly as the ledger writes it (with its authenticator and tree hashes) for rows an older version
of the ledger wrote in a form today's code no longer produces (a v1 payload, a v1 admin flag)."""

from __future__ import annotations

from typing import Any

from ledger.core.chain import StoredRecord
from ledger.core.storage import RowKey, SqlEventStore

TEST_ROW_KEY = RowKey(bytes(range(32)))
"""One fixed key: every store a test opens on one database, in any process, accepts the others' rows."""


def insert_as_ledger(store: SqlEventStore, record: StoredRecord) -> None:
    """Insert ``record`` at the head as the ledger would have: with its authenticator (by the store's key) and its
    leaf's tree hashes in the row."""
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
        store._insert(cur, [row], seal=store._sealing(store._compact(cur, record.position - 1), [row]))
    store._forget_head()
