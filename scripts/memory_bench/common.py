"""What the memory benchmark's parts share: sizes and limits, the raw FTS5 queries, the clock the benchmark moves,
an appender of the event a search appends, and small looks into the SQLite file."""

from __future__ import annotations

import datetime as _dt
import sqlite3
from pathlib import Path

from benchkit import docs
from rich.console import Console

from ledger.core.events import MemorySearched
from ledger.memory import recall
from ledger.service import Ledger
from projections.query_analysis import query_terms
from projections.search import index as search_index

console = Console(stderr=True, width=160, log_path=False)

SECTION = docs.MEMORY
TARGET = 3.0
DEFAULT_SIZES = (10_000, 100_000)
QUICK_SIZES = (2_000, 10_000)
N_QUERIES = 200
TOP_K = 5
SEARCH_LIMIT = 10
RECALL_LIMIT = TOP_K * recall.CANDIDATES_PER_SLOT  # what recall asks the index for
CURATE_AFTER_HOURS = 500
FILL_BATCH = 2_000
AGENT = "bench"
COLUMNS = "position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash"
INSERT = f"INSERT INTO events ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
HEAD = "SELECT position, hash, recorded_at FROM events ORDER BY position DESC LIMIT 1"
RAW_FTS = (
    "SELECT block_id, content, tags_json, -bm25(memory_fts) AS score FROM memory_fts "
    "WHERE memory_fts MATCH ? ORDER BY score DESC, block_id LIMIT ?"
)
RAW_SELF = "SELECT block_id, content, tags_json FROM memory_fts WHERE tags_json LIKE '%\"self/%'"
# The event types SearchIndex.catch_up reads (its probe and its apply loop), from the module itself.
INDEXED_TYPES = list(search_index._INDEXED)
TYPE_POSITION_INDEX = "ix_events_type_position"
SELF_RUNS = 30
PROFILE_RUNS = 50


class BenchClock:
    """Wall-clock time plus an offset the benchmark can move forward (``ledger.clock`` is injectable)."""

    def __init__(self) -> None:
        self.offset = _dt.timedelta(0)

    def __call__(self) -> _dt.datetime:
        return _dt.datetime.now(_dt.UTC) + self.offset

    def advance(self, delta: _dt.timedelta) -> None:
        self.offset += delta


class SessionAppender:
    """Appends the event a search appends (a ``MemorySearched``) to a session stream of its own."""

    def __init__(self, ledger: Ledger, session_id: str) -> None:
        self.ledger = ledger
        self.session_id = session_id
        self.stream = f"session:{session_id}"
        self.version = ledger.store.load_stream(self.stream).version
        self.meta = {"agent": AGENT, "source": "cli", "session_id": session_id}

    def append(self, query: str) -> None:
        event = MemorySearched(
            session_id=self.session_id, query=query, limit=SEARCH_LIMIT, result_ids=[], count=0, token_expires_at=None
        )
        self.ledger.store.append(self.stream, self.version, [event], self.meta)
        self.version += 1


def match_string(query: str) -> str:
    """The OR MATCH text ``SearchIndex.search`` ranks (alone for one word, after the AND stage for more): every
    content word quoted, OR-ed."""
    return " OR ".join(f'"{t}"' for t in query_terms(query))


def fts_rows(db_path: Path) -> int:
    raw = sqlite3.connect(db_path)
    n = int(raw.execute("SELECT COUNT(*) FROM memory_fts").fetchone()[0])
    raw.close()
    return n


def has_index(db_path: Path, name: str) -> bool:
    raw = sqlite3.connect(db_path)
    row = raw.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)).fetchone()
    raw.close()
    return row is not None
