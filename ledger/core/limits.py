"""Bounds every interface applies before anything reaches the store — integers, and the memory query and hit
count that sessions, memory and the brain all take — and how long the store waits.

Positions, versions and counts are 64-bit signed integers in both stores (SQLite INTEGER, PostgreSQL BIGINT);
a larger number given as a query, body or command-line parameter is refused as invalid input naming the
parameter, never passed on to a driver that cannot bind it.
"""

from dataclasses import dataclass

from ledger.core.canonical import require_utf8
from ledger.core.errors import InvalidInput

MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)
MAX_QUERY_CHARS = 1_000  # a memory query (search, recall, a brain question)
MAX_LIMIT = 100  # hits one search or listing returns at most


def check_query(query: str) -> str:
    """A memory query: non-empty UTF-8 text of at most :data:`MAX_QUERY_CHARS`, stripped."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query is empty", "send what you are looking for, e.g. 'database migrations'")
    require_utf8(query, "query")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"query is longer than {MAX_QUERY_CHARS} characters", "send a shorter query")
    return query.strip()


def check_limit(limit: int) -> int:
    """How many hits to return: a whole number from 1 to :data:`MAX_LIMIT`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit {limit!r} is out of range", f"send a limit from 1 to {MAX_LIMIT}")
    return limit


@dataclass(frozen=True, slots=True)
class Timeouts:
    """How long the store waits, in seconds: for the write lock (PostgreSQL ``lock_timeout``; on a SQLite file the
    wait in line for its fair lock ``<db>.writelock``, then SQLite's busy wait for any writer that does not take
    it) and for any one statement (PostgreSQL ``statement_timeout``). Past either, the call raises
    :class:`StoreBusy` and nothing was recorded."""

    lock: float = 5.0
    statement: float = 30.0
    idle_in_transaction: float = 5.0
    """PostgreSQL ``idle_in_transaction_session_timeout`` of the ledger's sessions (0: none): a node that stops
    (SIGSTOP, a long pause, a hung VM) inside a transaction loses it, and the write lock, after this long."""
    keepalive: float = 5.0
    """TCP keepalives of the ledger's PostgreSQL connections, both ends (0: the system's): first probe after this
    many idle seconds, then every half of it, three unanswered probes end the connection."""

    @property
    def lock_ms(self) -> int:
        return max(1, round(self.lock * 1000))

    @property
    def statement_ms(self) -> int:
        return max(1, round(self.statement * 1000))

    @property
    def idle_in_transaction_ms(self) -> int:
        return max(0, round(self.idle_in_transaction * 1000))
