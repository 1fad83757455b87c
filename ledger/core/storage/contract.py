"""The store contract: what the ledger asks of an event store, as :class:`typing.Protocol` types with two
implementations, :class:`~ledger.core.storage.store.SqlEventStore` (SQLite, PostgreSQL) and
:class:`~ledger.core.storage.memory.MemoryStore` (in memory, for tests and tools).

:class:`EventStore` is the log itself: appends with an expected version, reads, the chain's head and verification,
and the transparency-log tree over the chain hashes. :class:`ReadModelTables` is the SQL database the derived read
models keep their tables in (search index, snapshots, checkpoints). :class:`LedgerStore` is what the kernel holds:
both, plus the few duties of opening a ledger (schema, key, health, closing). What only a SQL store has (row
authenticators, triggers, group commit, the upgrade of an older database) stays on :class:`SqlEventStore`.
``tests/integration/test_store_contract.py`` runs one suite of :class:`EventStore` tests on every implementation.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sqlalchemy.engine import Engine

from ledger.core.chain import ChainReport, StoredRecord
from ledger.core.events import DomainEvent, RecordedEvent
from ledger.core.storage.authenticator import RowKey
from ledger.core.storage.reads import StreamState
from ledger.core.storage.schema import APPEND_LOCK
from ledger.core.storage.store import Probe

if TYPE_CHECKING:
    from ledger.core.data_keys import DataKeys


@runtime_checkable
class EventStore(Protocol):
    """An append-only log of events: gapless 1-based positions in commit order, 1-based versions per stream, a hash
    chain (:mod:`ledger.core.chain`) and ``recorded_at`` that never goes backwards in position order.

    ``cipher``, set by the kernel, is the key service of free text (:mod:`ledger.core.data_keys`): an append seals
    each event's free text under its stream's data key, every read that decodes opens it."""

    cipher: DataKeys | None

    def append(
        self, stream: str, expected_version: int, events: Sequence[DomainEvent], meta: dict[str, Any]
    ) -> list[RecordedEvent]:
        """Append ``events`` to ``stream`` if it is still at ``expected_version``, all or nothing; else raise
        :class:`~ledger.core.errors.ConcurrencyError` and record nothing."""
        ...

    def load_stream(self, stream: str, after_version: int = 0) -> StreamState:
        """The events of ``stream`` after ``after_version``, in version order, with the stream's version."""
        ...

    def get(self, position: int) -> StoredRecord | None: ...

    def record_of(self, stream: str, version: int) -> StoredRecord | None: ...

    def records_at(self, positions: Sequence[int]) -> dict[int, StoredRecord]: ...

    def head(self) -> tuple[int, str]:
        """The last position and its hash (``0`` and the genesis hash for an empty log)."""
        ...

    def position_as_of(self, as_of: _dt.datetime) -> int:
        """The last position recorded at or before ``as_of`` (0 if none)."""
        ...

    def iter_records(
        self,
        after: int = 0,
        until: int | None = None,
        *,
        stream: str | None = None,
        types: Sequence[str] | None = None,
        agent: str | None = None,
        batch_size: int = 5000,
    ) -> Iterator[StoredRecord]:
        """Stored records after ``after`` up to ``until`` in position order, filtered by stream, types and the
        agent of their metadata."""
        ...

    def iter_events(
        self,
        after: int = 0,
        until: int | None = None,
        *,
        stream: str | None = None,
        types: Sequence[str] | None = None,
        agent: str | None = None,
        batch_size: int = 5000,
    ) -> Iterator[RecordedEvent]:
        """:meth:`iter_records`, decoded into typed events (upcast on read)."""
        ...

    def chain_hashes(self, until: int, batch_size: int = 20_000) -> Iterator[tuple[int, str]]:
        """Every position up to ``until`` with its chain hash, in position order."""
        ...

    def verify(
        self, progress: Callable[[int], None] | None = None, batch_size: int = 5000, *, tree: bool = True
    ) -> ChainReport:
        """Recompute the whole chain (and, ``tree``, the tree); report the first position where it breaks."""
        ...

    # --- the transparency-log tree: leaf p − 1 is the 32 raw bytes of event p's chain hash -------------------

    def tree_size(self) -> int: ...

    def tree_hashes(self, indexes: Sequence[int]) -> list[bytes]: ...

    def tree_root(self, size: int) -> bytes: ...

    def prove_inclusion(self, index: int, size: int) -> list[bytes]: ...

    def prove_consistency(self, old: int, size: int) -> list[bytes]: ...

    def leaf_data(self, position: int) -> bytes: ...

    def rebuild_tree(self, progress: Callable[[int], None] | None = None) -> int: ...


class ReadModelTables(Protocol):
    """The SQL database where derived read models keep their tables (search index, snapshots, tree checkpoints):
    the store's own database for a SQL store, an in-memory SQLite beside a memory store."""

    @property
    def engine(self) -> Engine: ...

    @property
    def dialect(self) -> str: ...

    def sql(self, text: str) -> str:
        """A statement written with ``?`` placeholders in the driver's paramstyle."""
        ...

    def read_cursor(self) -> contextlib.AbstractContextManager[Any]: ...

    def write_transaction(self, lock: int = APPEND_LOCK) -> contextlib.AbstractContextManager[Any]: ...

    def lease(
        self, key: int, *, wait: bool = False, hold: float | None = None, patience: float | None = None
    ) -> contextlib.AbstractContextManager[bool]:
        """Hold the lease ``key`` (:mod:`ledger.core.storage.leases`) while the block runs: one holder among every
        process on the database; yields whether it is held."""
        ...


class LedgerStore(EventStore, ReadModelTables, Protocol):
    """What the kernel holds: the log, the read models' tables, and opening, probing and closing a ledger."""

    @property
    def row_key(self) -> RowKey | None:
        """The key the ledger's ``RowKeyBound`` event names (``None``: a store that can only read)."""
        ...

    def create_schema(self) -> None: ...

    def pending_upgrade(self) -> tuple[int, int]:
        """Events to authenticate and tree leaves to build before the ledger is up to date."""
        ...

    def authenticate_existing(
        self,
        stream: str,
        vouch: Callable[[StreamState, int], Sequence[DomainEvent]],
        meta: dict[str, Any],
        progress: Callable[[int], None] | None = None,
    ) -> int: ...

    def build_tree(self, progress: Callable[[int], None] | None = None) -> int: ...

    def probe(self) -> Probe: ...

    def _probe_engine(self) -> Engine:
        """The engine a health check reads the read models through without waiting behind appends."""
        ...

    def dispose(self) -> None: ...
