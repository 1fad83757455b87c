"""Bounds every interface applies to integers before they reach the store, and how long the store waits.

Positions, versions and counts are 64-bit signed integers in both stores (SQLite INTEGER, PostgreSQL BIGINT);
a larger number given as a query, body or command-line parameter is refused as invalid input naming the
parameter, never passed on to a driver that cannot bind it.
"""

from dataclasses import dataclass

MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)


@dataclass(frozen=True, slots=True)
class Timeouts:
    """How long the store waits, in seconds: for the write lock (PostgreSQL ``lock_timeout``; on a SQLite file the
    wait in line for its fair lock ``<db>.writelock``, then SQLite's busy wait for any writer that does not take
    it) and for any one statement (PostgreSQL ``statement_timeout``). Past either, the call raises
    :class:`StoreBusy` and nothing was recorded."""

    lock: float = 5.0
    statement: float = 30.0

    @property
    def lock_ms(self) -> int:
        return max(1, round(self.lock * 1000))

    @property
    def statement_ms(self) -> int:
        return max(1, round(self.statement * 1000))
