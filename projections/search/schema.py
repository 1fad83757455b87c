"""The memory search index's tables: full-text (FTS5 on SQLite, a GIN-indexed ``tsvector`` on PostgreSQL), the
checkpoints, skips and versions every derived index shares, what an index was built with, a skipped event, and
which errors abort a catch-up."""

from __future__ import annotations

import sqlite3
import sys
from dataclasses import dataclass

from ledger.core.errors import LedgerError

CHECKPOINT = "memory_search_index"
TOKENIZE = "porter unicode61"
"""FTS5's tokenizer: Porter stemming over Unicode word splitting, for the text and the query alike."""
TS_CONFIG = "english"
"""PostgreSQL's text search configuration: English stemming and stop words, for the text and the query alike."""
SKIPS_DDL = """CREATE TABLE IF NOT EXISTS projection_skips (
    name TEXT NOT NULL, position BIGINT NOT NULL, reason TEXT NOT NULL, PRIMARY KEY (name, position))"""
VERSIONS_DDL = "CREATE TABLE IF NOT EXISTS projection_versions (name TEXT PRIMARY KEY, version TEXT NOT NULL)"
VERSION = {
    "sqlite": f"fts5 tokenize={TOKENIZE} provenance rowid=position",
    "postgresql": f"tsvector config={TS_CONFIG} provenance",
}
"""What the index was built with: when it changes (a new tokenizer; each block's provenance kept beside its text,
issue 23; on SQLite each row's rowid the position of its block's ``MemoryRemembered``, so one block's row is deleted
by key, issue 26), opening the ledger rebuilds the index."""
COMMON_DDL = {
    "sqlite": [
        "CREATE TABLE IF NOT EXISTS projection_checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL)",
        SKIPS_DDL,
        VERSIONS_DDL,
    ],
    "postgresql": [
        "CREATE TABLE IF NOT EXISTS projection_checkpoints (name TEXT PRIMARY KEY, position BIGINT NOT NULL)",
        SKIPS_DDL,
        VERSIONS_DDL,
    ],
}
DDL = {
    "sqlite": [
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
               block_id UNINDEXED, content, tags, tags_json UNINDEXED, provenance_json UNINDEXED,
               tokenize='{TOKENIZE}')""",
    ],
    "postgresql": [
        """CREATE TABLE IF NOT EXISTS memory_index (
               block_id TEXT PRIMARY KEY, content TEXT NOT NULL, tags_json TEXT NOT NULL, tsv tsvector NOT NULL,
               provenance_json TEXT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS memory_index_tsv ON memory_index USING GIN (tsv)",
        # Insertion order, for bounding the candidates of a query made only of common words (newest first).
        "ALTER TABLE memory_index ADD COLUMN IF NOT EXISTS seq BIGSERIAL",
        "CREATE INDEX IF NOT EXISTS memory_index_seq ON memory_index (seq)",
    ],
}
DROP = {
    "sqlite": ["DROP TABLE IF EXISTS memory_fts"],
    "postgresql": ["DROP TABLE IF EXISTS memory_index"],
}


@dataclass(frozen=True, slots=True)
class Skip:
    """An event a derived index could not apply: its position and why."""

    position: int
    reason: str


def fatal(exc: BaseException) -> bool:
    """Errors that mean the store itself is in trouble, never one event: they abort the catch-up, nothing is
    skipped. (psycopg is looked up, not imported: the SQLite path never loads it.)"""
    if isinstance(exc, LedgerError | sqlite3.OperationalError):
        return True
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
