"""The event-store contract (:mod:`ledger.core.storage.contract`), written once and run on every implementation:
the in-memory store, a real SQLite file and a real PostgreSQL schema (STYLE 11, as eventsourcing runs one recorder
suite per backend).

The contract's tests take ``store``, ``filled`` or ``make_store`` (parametrised by ``backend``: three runs each).
Tests of what only a SQL database has (its triggers, TRUNCATE, a killed connection, rows altered or inserted behind
the store's back, the authenticators) take ``sql_store`` / ``sql_filled`` (``db_url``: SQLite and PostgreSQL) and
say so in their section; tests of one database say which in their name.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from freezegun import freeze_time

from ledger.core import clock as _clock
from ledger.core import receipt_key, signing
from ledger.core.canonical import canonical_json, format_ts, parse_ts
from ledger.core.chain import GENESIS_HASH, StoredRecord, record_hash
from ledger.core.errors import ConcurrencyError, InvalidInput, StoreUnavailable
from ledger.core.events import (
    ComplianceRefused,
    ComplianceStamped,
    DomainEvent,
    MemoryDuplicateRejected,
    MemoryRemembered,
    MemorySearched,
    SessionEnded,
    SessionStarted,
)
from ledger.core.mapper import decode
from ledger.core.storage import LedgerStore, MemoryStore, RowKey, SqlEventStore, make_engine
from ledger.core.tlog import merkle
from ledger.memory import decisions as memory
from ledger.service import Actor, Ledger
from projections.search import SearchIndex
from tests.conftest import MEMORY, LedgerFactory
from tests.server_support import READY_WITHIN
from tests.store_support import TEST_ROW_KEY, insert_as_ledger

T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)
META = {"agent": "alice", "source": "cli"}
ALICE = Actor("alice", "mcp")
UNREACHABLE_PG = "postgresql://postgres@127.0.0.1:1/test"

StoreFactory = Callable[..., LedgerStore]
SqlStoreFactory = Callable[..., SqlEventStore]


def sql_stores(url: str) -> Iterator[SqlStoreFactory]:
    engines: list[sa.engine.Engine] = []

    def factory(clock: _clock.Clock = _clock.now) -> SqlEventStore:
        engine = make_engine(url)
        engines.append(engine)
        store = SqlEventStore(engine, clock=clock, row_key=TEST_ROW_KEY)
        store.create_schema()
        return store

    yield factory
    for engine in engines:
        engine.dispose()


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    """Each implementation of the store contract: in memory, a SQLite file, a PostgreSQL schema."""
    return str(request.param)


@pytest.fixture
def make_store(request: pytest.FixtureRequest, backend: str) -> Iterator[StoreFactory]:
    """Open stores on the test's backend. On a database each call opens a store of its own on it (as another
    process would); in memory there is one log, so every call after the first returns that same store."""
    if backend == "memory":
        opened: list[MemoryStore] = []

        def in_memory(clock: _clock.Clock = _clock.now) -> LedgerStore:
            if not opened:
                opened.append(MemoryStore(clock, row_key=TEST_ROW_KEY))
            return opened[0]

        yield in_memory
        for store in opened:
            store.dispose()
        return
    url = str(request.getfixturevalue("sqlite_url" if backend == "sqlite" else "pg_url"))
    yield from sql_stores(url)


@pytest.fixture
def store(make_store: StoreFactory) -> LedgerStore:
    return make_store()


@pytest.fixture
def make_sql_store(db_url: str) -> Iterator[SqlStoreFactory]:
    """Open SQL stores on the test's database (schema created); their engines are disposed afterwards."""
    yield from sql_stores(db_url)


@pytest.fixture
def sql_store(make_sql_store: SqlStoreFactory) -> SqlEventStore:
    return make_sql_store()


def started(sid: str) -> SessionStarted:
    return SessionStarted(session_id=sid, agent="alice", role="dev")


def searched(sid: str, query: str = "q") -> MemorySearched:
    return MemorySearched(session_id=sid, query=query, limit=10, result_ids=[], count=0)


def remembered(content: str, tags: Sequence[str] = ()) -> MemoryRemembered:
    return MemoryRemembered(block_id=memory.block_id_for(content), content=content, tags=list(tags))


def remember(store: LedgerStore, content: str, tags: Sequence[str] = ()) -> None:
    event = remembered(content, tags)
    store.append(memory.stream_for(event.block_id), 0, [event], META)


def count_rows(store: LedgerStore) -> int:
    """The rows of the ``events`` table; in memory, the events of the log (and its side tables' copy of their
    positions and types, which must hold as many)."""
    with store.engine.connect() as conn:
        rows = int(conn.exec_driver_sql("SELECT COUNT(*) FROM events").scalar_one())
    if isinstance(store, MemoryStore):
        assert rows == len(list(store.iter_records()))
    return rows


def raw(store: LedgerStore, *statements: str, params: Sequence[Any] = ()) -> None:
    """Run SQL straight on the database, behind the store's back."""
    with store.engine.begin() as conn:
        for statement in statements:
            if params:
                conn.exec_driver_sql(store.sql(statement), tuple(params))
            else:
                conn.exec_driver_sql(statement)


def drop_append_only_triggers(store: LedgerStore) -> None:
    if store.dialect == "sqlite":
        raw(store, "DROP TRIGGER events_reject_update", "DROP TRIGGER events_reject_delete")
    else:
        raw(store, "DROP TRIGGER events_reject_change ON events")


def install_insert_trigger(store: LedgerStore, marker: str, pg_action: str) -> None:
    """Make the database itself fail any insert whose payload contains ``marker`` (mid-append failure)."""
    if store.dialect == "sqlite":
        raw(
            store,
            f"""CREATE TRIGGER poison BEFORE INSERT ON events WHEN instr(NEW.data, '{marker}') > 0
                       BEGIN SELECT RAISE(ABORT, 'poisoned insert'); END""",
        )
    else:
        raw(
            store,
            f"CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {pg_action}; RETURN NEW; END $$",
            f"""CREATE TRIGGER poison BEFORE INSERT ON events FOR EACH ROW
                WHEN (strpos(NEW.data, '{marker}') > 0) EXECUTE FUNCTION poison()""",
        )


# A small log over three streams; positions in the comments.
ACTIVITY: list[tuple[str, list[DomainEvent]]] = [
    ("session:a", [started("a")]),  # 1
    ("session:b", [started("b")]),  # 2
    (
        "session:a",
        [searched("a"), ComplianceStamped(session_id="a", search_position=3, count=0, stamp="S")],
    ),  # 3-4
    ("block:c", [remembered("c")]),  # 5
    ("session:b", [searched("b")]),  # 6
    ("session:a", [searched("a", "again")]),  # 7
    ("session:b", [ComplianceRefused(session_id="b", reason="no_search", message="m")]),  # 8
    ("block:c", [MemoryDuplicateRejected(block_id="c")]),  # 9
    ("session:a", [SessionEnded(session_id="a")]),  # 10
]


def fill(store: LedgerStore) -> None:
    versions: dict[str, int] = {}
    for stream, events in ACTIVITY:
        recorded = store.append(stream, versions.get(stream, 0), events, META)
        versions[stream] = recorded[-1].version


@pytest.fixture
def filled(store: LedgerStore) -> LedgerStore:
    fill(store)
    return store


@pytest.fixture
def sql_filled(sql_store: SqlEventStore) -> SqlEventStore:
    fill(sql_store)
    return sql_store


# --- positions and versions ---------------------------------------------------------------------------------


def test_positions_are_one_based_and_gapless_across_streams(filled: LedgerStore) -> None:
    positions = [r.position for r in filled.iter_records()]
    assert positions == list(range(1, 11))
    assert filled.head()[0] == 10
    assert count_rows(filled) == 10


def test_append_returns_the_recorded_events_with_their_positions_versions_and_hashes(
    store: LedgerStore,
) -> None:
    first = store.append("session:a", 0, [started("a")], META)
    more = store.append("session:a", 1, [searched("a"), searched("a", "two")], META)
    assert [(r.position, r.version) for r in [*first, *more]] == [(1, 1), (2, 2), (3, 3)]
    assert more[-1].hash == store.head()[1]
    assert [r.event for r in more] == [searched("a"), searched("a", "two")]
    assert all(dict(r.meta) == META for r in more)


def test_versions_count_from_one_in_each_stream(filled: LedgerStore) -> None:
    expected = {"session:a": [1, 3, 4, 7, 10], "session:b": [2, 6, 8], "block:c": [5, 9]}
    for stream, positions in expected.items():
        state = filled.load_stream(stream)
        assert state.stream == stream
        assert state.version == len(positions)
        assert [r.version for r in state.events] == list(range(1, len(positions) + 1))
        assert [r.position for r in state.events] == positions
        assert all(r.stream == stream for r in state.events)


def test_an_unknown_stream_loads_empty_at_version_zero(filled: LedgerStore) -> None:
    state = filled.load_stream("session:nobody")
    assert state.version == 0 and state.events == []


def test_an_empty_store_has_the_genesis_head_and_verifies(store: LedgerStore) -> None:
    assert store.head() == (0, GENESIS_HASH)
    assert store.verify().ok
    assert list(store.iter_records()) == []
    assert store.append("session:a", 0, [], META) == []
    assert store.head() == (0, GENESIS_HASH)


def test_get_returns_the_stored_record_at_a_position(filled: LedgerStore) -> None:
    rec = filled.get(5)
    assert rec is not None and rec.position == 5 and rec.stream == "block:c" and rec.type == "MemoryRemembered"
    assert rec.computed_hash() == rec.hash
    assert filled.get(11) is None and filled.get(0) is None


# --- optimistic concurrency ---------------------------------------------------------------------------------


@pytest.mark.parametrize("expected", [0, 4, 6, 100])
def test_a_wrong_expected_version_raises_concurrency_error_and_leaves_no_trace(
    filled: LedgerStore, expected: int
) -> None:
    head, rows = filled.head(), count_rows(filled)
    with pytest.raises(ConcurrencyError) as caught:
        filled.append("session:a", expected, [searched("a", "late"), searched("a", "later")], META)
    assert (caught.value.stream, caught.value.expected, caught.value.actual) == ("session:a", expected, 5)
    assert caught.value.hint
    assert filled.head() == head
    assert count_rows(filled) == rows
    assert filled.load_stream("session:a").version == 5
    assert filled.verify().ok


def test_expected_version_zero_creates_a_stream_only_once(store: LedgerStore) -> None:
    store.append("session:x", 0, [started("x")], META)
    with pytest.raises(ConcurrencyError):
        store.append("session:x", 0, [started("x")], META)
    assert store.load_stream("session:x").version == 1


def test_threads_racing_for_one_stream_version_let_exactly_one_append_win(make_store: StoreFactory) -> None:
    stores = [make_store() for _ in range(4)]
    stores[0].append("session:r", 0, [started("r")], META)
    barrier = threading.Barrier(len(stores))
    outcomes: list[str] = []

    def contender(s: LedgerStore, i: int) -> None:
        barrier.wait(timeout=READY_WITHIN)
        try:
            s.append("session:r", 1, [searched("r", f"t{i}")], META)
            outcomes.append("won")
        except ConcurrencyError:
            outcomes.append("lost")

    threads = [threading.Thread(target=contender, args=(s, i)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=READY_WITHIN)
    assert sorted(outcomes) == ["lost", "lost", "lost", "won"]
    assert stores[0].load_stream("session:r").version == 2
    assert stores[0].verify().ok


def test_concurrent_appends_to_different_streams_keep_positions_gapless_and_the_chain_intact(
    make_store: StoreFactory,
) -> None:
    stores = [make_store() for _ in range(3)]
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def writer(s: LedgerStore, i: int) -> None:
        try:
            barrier.wait(timeout=READY_WITHIN)
            for version in range(10):
                s.append(f"session:w{i}", version, [searched(f"w{i}", str(version))], META)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s, i)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=READY_WITHIN)
    assert errors == []
    assert [r.position for r in stores[0].iter_records()] == list(range(1, 31))
    report = stores[0].verify()
    assert report.ok and report.checked == 30


# --- all or nothing -----------------------------------------------------------------------------------------


def test_a_multi_event_append_that_fails_midway_leaves_no_event(sql_store: SqlEventStore) -> None:
    """SQL only: the database itself refuses the third row (a trigger). In memory nothing refuses a row that
    encodes; a refusal while encoding is the next test's, on every backend."""
    sql_store.append("session:a", 0, [started("a")], META)
    install_insert_trigger(sql_store, "poison", "RAISE EXCEPTION 'poisoned insert'")
    head, rows = sql_store.head(), count_rows(sql_store)
    batch = [searched("a", "fine"), searched("a", "also fine"), searched("a", "poison")]
    with pytest.raises(Exception, match="poisoned insert"):
        sql_store.append("session:a", 1, batch, META)
    assert sql_store.head() == head
    assert count_rows(sql_store) == rows
    assert sql_store.load_stream("session:a").version == 1
    sql_store.append("session:a", 1, batch[:2], META)  # the store is still usable and the chain continues
    assert [r.position for r in sql_store.iter_records()] == [1, 2, 3]
    assert sql_store.verify().ok


def test_an_append_of_text_without_a_utf8_form_is_refused_as_invalid_input_and_leaves_no_event(
    store: LedgerStore,
) -> None:
    store.append("session:a", 0, [started("a")], META)
    head, rows = store.head(), count_rows(store)
    with pytest.raises(InvalidInput):
        store.append("session:a", 1, [searched("a"), searched("a", "lone \ud800 surrogate")], META)
    with pytest.raises(InvalidInput):
        store.append("session:a", 1, [searched("a")], {"agent": "\udc00"})
    assert store.head() == head and count_rows(store) == rows
    assert store.verify().ok


def test_an_append_whose_postgresql_connection_dies_midway_raises_store_unavailable_and_leaves_no_event(
    make_ledger: LedgerFactory, pg_url: str
) -> None:
    ledger = make_ledger(pg_url)
    store = ledger.store
    sid = ledger.clock_in(ALICE, "dev").session_id
    install_insert_trigger(store, "kill me", "PERFORM pg_terminate_backend(pg_backend_pid())")
    head, rows = store.head(), count_rows(store)
    cipher, store.cipher = store.cipher, None  # the trigger reads the query: this append stores it in the clear
    with pytest.raises(StoreUnavailable):
        store.append(f"session:{sid}", 1, [searched(sid, "fine"), searched(sid, "kill me")], META)
    store.cipher = cipher
    assert store.head() == head
    assert count_rows(store) == rows
    assert store.verify().ok
    ledger.search(ALICE, sid, "after the outage")
    assert ledger.assert_compliance(ALICE, sid).status == "PASS"


# --- reading: filters and paging ----------------------------------------------------------------------------


FILTERS: list[dict[str, Any]] = [
    {"after": after, "until": until, "stream": stream, "types": types}
    for after in (0, 3, 7)
    for until in (None, 4, 9, 10)
    for stream in (None, "session:a", "block:c")
    for types in (
        None,
        ["MemorySearched"],
        ["SessionStarted", "MemoryDuplicateRejected", "ComplianceStamped"],
    )
]


def test_iter_records_and_iter_events_filter_by_stream_type_after_and_until_across_page_boundaries(
    filled: LedgerStore,
) -> None:
    everything = list(filled.iter_records())
    assert len(everything) == 10
    for f in FILTERS:
        expected = [
            r.position
            for r in everything
            if r.position > f["after"]
            and (f["until"] is None or r.position <= f["until"])
            and (f["stream"] is None or r.stream == f["stream"])
            and (not f["types"] or r.type in f["types"])
        ]
        for batch_size in (1, 2, 3, 5000):
            records = list(
                filled.iter_records(f["after"], f["until"], stream=f["stream"], types=f["types"], batch_size=batch_size)
            )
            assert [r.position for r in records] == expected, (f, batch_size)
        events = list(filled.iter_events(f["after"], f["until"], stream=f["stream"], types=f["types"], batch_size=2))
        assert [e.position for e in events] == expected, f
        # iter_events reads its own columns and decodes rows directly: the same events decode() makes of records.
        assert events == [decode(everything[p - 1]) for p in expected], f


def test_iter_events_filtered_by_agent_equals_the_decoded_records_of_that_agent(filled: LedgerStore) -> None:
    filled.append("session:z", 0, [started("z")], {"agent": "zed", "source": "cli"})
    everything = list(filled.iter_records())
    for agent in ("alice", "zed", "nobody"):
        expected = [decode(r) for r in everything if decode(r).agent == agent]
        for batch_size in (1, 4, 5000):
            assert list(filled.iter_events(agent=agent, batch_size=batch_size)) == expected, (agent, batch_size)


def test_paging_returns_every_record_once_when_the_batch_size_divides_the_log_exactly(
    filled: LedgerStore,
) -> None:
    for batch_size in (1, 2, 5, 10, 11):
        assert [r.position for r in filled.iter_records(batch_size=batch_size)] == list(range(1, 11))


def test_iter_events_decodes_typed_events_with_their_recorded_metadata(filled: LedgerStore) -> None:
    events = list(filled.iter_events(types=["MemoryRemembered"]))
    assert [type(e.event) for e in events] == [MemoryRemembered]
    assert events[0].stream == "block:c" and events[0].agent == "alice"
    assert isinstance(events[0].recorded_at, _dt.datetime) and events[0].recorded_at.tzinfo is not None


def test_load_stream_returns_a_streams_events_in_version_order(filled: LedgerStore) -> None:
    state = filled.load_stream("session:b")
    assert [type(r.event) for r in state.events] == [SessionStarted, MemorySearched, ComplianceRefused]


def test_load_stream_after_a_version_returns_only_the_later_events_and_the_streams_version(filled: LedgerStore) -> None:
    for after in range(8):
        state = filled.load_stream("session:a", after)
        assert [r.version for r in state.events] == list(range(after + 1, 6)), after
        assert state.version == max(after, 5), after  # past the end: the version asked for, no events


def test_record_of_and_records_at_read_single_records_by_stream_version_and_by_position(filled: LedgerStore) -> None:
    rec = filled.record_of("session:b", 2)
    assert rec is not None and rec == filled.get(6)
    assert filled.record_of("session:b", 4) is None and filled.record_of("session:b", 0) is None
    assert filled.record_of("session:nobody", 1) is None
    found = filled.records_at([5, 1, 5, 99, 0])
    assert sorted(found) == [1, 5]
    assert all(found[p] == filled.get(p) for p in found)


# --- time ---------------------------------------------------------------------------------------------------


def test_position_as_of_is_the_last_position_recorded_at_or_before_a_moment(make_store: StoreFactory) -> None:
    with freeze_time(T0) as frozen:
        store = make_store()
        store.append("session:a", 0, [started("a")], META)  # 1 at T0
        frozen.tick(_dt.timedelta(minutes=1))
        store.append("session:a", 1, [searched("a"), searched("a", "b")], META)  # 2-3 at T0+1m
        frozen.tick(_dt.timedelta(minutes=1))
        store.append("session:b", 0, [started("b")], META)  # 4 at T0+2m
    minute = _dt.timedelta(minutes=1)
    assert store.position_as_of(T0 - _dt.timedelta(microseconds=1)) == 0
    assert store.position_as_of(T0) == 1
    assert store.position_as_of(T0 + minute - _dt.timedelta(microseconds=1)) == 1
    assert store.position_as_of(T0 + minute) == 3
    assert store.position_as_of(T0 + 2 * minute) == 4
    assert store.position_as_of(T0 + 1000 * minute) == 4
    plus_five = _dt.timezone(_dt.timedelta(hours=5))
    assert store.position_as_of((T0 + minute).astimezone(plus_five)) == 3
    assert [parse_ts(r.recorded_at) for r in store.iter_records()] == [
        T0,
        T0 + minute,
        T0 + minute,
        T0 + 2 * minute,
    ]


def test_the_store_takes_its_time_from_the_clock_it_was_given(make_store: StoreFactory) -> None:
    moment = _dt.datetime(2031, 7, 1, 8, 30, 15, 250000, tzinfo=_dt.UTC)
    store = make_store(clock=lambda: moment)
    [rec] = store.append("session:a", 0, [started("a")], META)
    assert rec.recorded_at == moment
    assert store.position_as_of(moment) == 1 and store.position_as_of(moment - _dt.timedelta(seconds=1)) == 0


def test_recorded_at_never_goes_backwards_even_when_the_clock_does(make_store: StoreFactory) -> None:
    with freeze_time(T0) as frozen:
        store = make_store()
        store.append("session:a", 0, [started("a")], META)
        frozen.move_to(T0 - _dt.timedelta(hours=1))
        [late] = store.append("session:a", 1, [searched("a")], META)
        frozen.move_to(T0 + _dt.timedelta(seconds=1))
        [later] = store.append("session:a", 2, [searched("a", "b")], META)
    assert late.recorded_at == T0
    assert later.recorded_at == T0 + _dt.timedelta(seconds=1)
    stamps = [r.recorded_at for r in store.iter_records()]
    assert stamps == sorted(stamps)
    assert store.position_as_of(T0 - _dt.timedelta(minutes=30)) == 0  # "as of" stays a prefix of the log
    assert store.position_as_of(T0) == 2
    assert store.verify().ok


# --- the hash chain in the database -------------------------------------------------------------------------


def test_verify_passes_on_an_intact_chain(filled: LedgerStore) -> None:
    report = filled.verify()
    assert report.ok and report.checked == 10 and report.head_position == 10
    assert report.first_bad_position is None


def test_verify_reports_progress_and_pages_through_the_log(filled: LedgerStore) -> None:
    seen: list[int] = []
    report = filled.verify(progress=seen.append, batch_size=3)
    assert report.ok and report.checked == 10
    assert seen[-1] == 10


def test_verify_is_not_fooled_by_an_append_that_lands_while_it_runs(
    filled: LedgerStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_head = filled.head

    def head_then_another_writer_appends() -> tuple[int, str]:
        seen = real_head()
        filled.append("session:b", 3, [searched("b", "meanwhile")], META)
        return seen

    monkeypatch.setattr(filled, "head", head_then_another_writer_appends)
    report = filled.verify(batch_size=4)
    monkeypatch.undo()
    assert report.ok, report
    assert report.head_position == 10
    assert filled.verify().head_position == 11


def test_each_stored_hash_chains_to_its_predecessor(filled: LedgerStore) -> None:
    records = list(filled.iter_records())
    assert records[0].prev_hash == GENESIS_HASH
    for before, after in itertools.pairwise(records):
        assert after.prev_hash == before.hash
    assert all(r.computed_hash() == r.hash for r in records)


def reference_root(leaves: Sequence[bytes]) -> bytes:
    """RFC 9162's MTH by its definition (recursion on the largest power of two below the size)."""
    if len(leaves) == 1:
        return merkle.leaf_hash(leaves[0])
    k = 1
    while 2 * k < len(leaves):
        k *= 2
    return merkle.node_hash(reference_root(leaves[:k]), reference_root(leaves[k:]))


def test_the_tree_is_the_rfc_9162_tree_of_the_chain_hashes_with_proofs_that_check(filled: LedgerStore) -> None:
    leaves = [bytes.fromhex(r.hash) for r in filled.iter_records()]
    assert filled.tree_size() == len(leaves) == 10
    for size in range(1, 11):
        root = filled.tree_root(size)
        assert root == reference_root(leaves[:size]), size
        for index in range(size):
            merkle.verify_inclusion(
                index, size, merkle.leaf_hash(leaves[index]), filled.prove_inclusion(index, size), root
            )
        for old in range(1, size + 1):
            merkle.verify_consistency(old, size, filled.prove_consistency(old, size), filled.tree_root(old), root)
    assert [filled.leaf_data(p) for p in range(1, 11)] == leaves
    assert list(filled.chain_hashes(4)) == [(p, leaves[p - 1].hex()) for p in range(1, 5)]
    with pytest.raises(InvalidInput):
        filled.tree_root(11)
    with pytest.raises(InvalidInput):
        filled.leaf_data(11)


def test_the_memory_store_records_what_a_sql_store_records_for_the_same_events_at_the_same_times(
    make_sql_store: SqlStoreFactory,
) -> None:
    with freeze_time(T0) as frozen:
        stores: list[LedgerStore] = [MemoryStore(row_key=TEST_ROW_KEY), make_sql_store()]
        for stream, events in ACTIVITY:
            for store in stores:
                version = store.load_stream(stream).version
                store.append(stream, version, events, META)
            frozen.tick(_dt.timedelta(seconds=7))
    memory_store, sql_store = stores
    assert list(memory_store.iter_records()) == list(sql_store.iter_records())
    assert memory_store.head() == sql_store.head()
    assert memory_store.tree_root(10) == sql_store.tree_root(10)
    assert memory_store.prove_consistency(3, 10) == sql_store.prove_consistency(3, 10)
    memory_store.dispose()


# --- SQL only: the database behind the store (its triggers, rows written or altered behind the store's back) ---


def test_an_old_v1_payload_stored_in_the_table_is_read_back_upcast(sql_filled: SqlEventStore) -> None:
    position, prev_hash = sql_filled.head()
    fields: dict[str, Any] = dict(
        position=position + 1,
        stream="block:blk_legacy",
        version=1,
        type="MemoryRemembered",
        schema_version=1,
        data_json=canonical_json({"block_id": "blk_legacy", "content": "legacy gizmo note", "tags": "a, b"}),
        meta_json=canonical_json({"agent": "importer", "source": "cli"}),
        recorded_at=format_ts(_clock.now()),
        prev_hash=prev_hash,
    )
    row = StoredRecord(**fields, hash=record_hash(**fields))
    insert_as_ledger(sql_filled, row)  # as the ledger wrote v1 payloads, authenticated and in the tree

    assert sql_filled.verify().ok
    [old] = sql_filled.load_stream("block:blk_legacy").events
    assert old.event == MemoryRemembered(block_id="blk_legacy", content="legacy gizmo note", tags=["a", "b"])
    [via_iter] = sql_filled.iter_events(position, types=["MemoryRemembered"])
    assert via_iter.event == old.event
    index = SearchIndex(sql_filled)
    index.create_schema()
    [hit] = index.search("gizmo", 5)
    assert (hit.block_id, hit.tags) == ("blk_legacy", ["a", "b"])
    sql_filled.append("block:blk_legacy", 1, [MemoryDuplicateRejected(block_id="blk_legacy")], META)
    assert sql_filled.verify().ok and sql_filled.get(position + 1) == row


def vars_of(rec: StoredRecord) -> tuple[Any, ...]:
    return (
        rec.position,
        rec.stream,
        rec.version,
        rec.type,
        rec.schema_version,
        rec.data_json,
        rec.meta_json,
        rec.recorded_at,
        rec.prev_hash,
        rec.hash,
    )


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE events SET data = '{}' WHERE position = 3",
        "UPDATE events SET hash = hash",
        "DELETE FROM events WHERE position = 10",
        "DELETE FROM events",
    ],
)
def test_the_database_rejects_update_and_delete_on_events(sql_filled: SqlEventStore, statement: str) -> None:
    before = list(sql_filled.iter_records())
    with pytest.raises(sa.exc.DBAPIError, match="append-only"):
        raw(sql_filled, statement)
    assert list(sql_filled.iter_records()) == before
    assert sql_filled.verify().ok


def test_postgresql_rejects_truncate_on_events(make_ledger: LedgerFactory, pg_url: str) -> None:
    store = make_ledger(pg_url).store
    fill(store)
    with pytest.raises(sa.exc.DBAPIError, match="append-only: TRUNCATE rejected"):
        raw(store, "TRUNCATE events")
    assert count_rows(store) == 14  # LedgerInitialised, SigningKeyBound, RowKeyBound, SettingsApplied, the activity
    assert store.verify().ok


def test_creating_the_schema_again_keeps_the_events_and_the_triggers(sql_filled: SqlEventStore) -> None:
    sql_filled.create_schema()
    assert count_rows(sql_filled) == 10
    with pytest.raises(sa.exc.DBAPIError, match="append-only"):
        raw(sql_filled, "DELETE FROM events")


TAMPERING: list[tuple[str, str]] = [
    ("data", "UPDATE events SET data = replace(data, 'again', 'forged') WHERE position = 7"),
    ("meta", "UPDATE events SET meta = replace(meta, 'alice', 'mallory') WHERE position = 7"),
    ("type", "UPDATE events SET type = 'MemoryRemembered' WHERE position = 7"),
    ("stream", "UPDATE events SET stream = 'session:b', version = 4 WHERE position = 7"),
    ("recorded_at", "UPDATE events SET recorded_at = '2001-01-01T00:00:00.000000Z' WHERE position = 7"),
    ("prev_hash", "UPDATE events SET prev_hash = hash WHERE position = 7"),
    ("hash", "UPDATE events SET hash = prev_hash WHERE position = 7"),
]


@pytest.mark.parametrize("statement", [t[1] for t in TAMPERING], ids=[t[0] for t in TAMPERING])
def test_an_event_altered_behind_the_stores_back_fails_verify_at_that_position(
    sql_filled: SqlEventStore, statement: str
) -> None:
    drop_append_only_triggers(sql_filled)
    assert sql_filled.verify().ok
    raw(sql_filled, statement)
    report = sql_filled.verify()
    assert not report.ok
    assert report.first_bad_position == 7
    assert report.checked == 6
    assert report.reason


def test_an_event_altered_and_rehashed_behind_the_stores_back_breaks_the_link_to_the_next_one(
    sql_filled: SqlEventStore,
) -> None:
    drop_append_only_triggers(sql_filled)
    rec = sql_filled.get(7)
    assert rec is not None
    forged_data = rec.data_json.replace("again", "forged")
    forged_hash = record_hash(
        position=rec.position,
        stream=rec.stream,
        version=rec.version,
        type=rec.type,
        schema_version=rec.schema_version,
        data_json=forged_data,
        meta_json=rec.meta_json,
        recorded_at=rec.recorded_at,
        prev_hash=rec.prev_hash,
    )
    raw(sql_filled, "UPDATE events SET data = ?, hash = ? WHERE position = 7", params=(forged_data, forged_hash))
    report = sql_filled.verify()
    # The chain alone would first break at 8 (its prev_hash no longer links); the rewritten row's authenticator
    # (over its old hash) already fails at 7.
    assert not report.ok and report.first_bad_position == 7
    assert report.reason == "the event at position 7 has a wrong authenticator"


def test_an_event_deleted_behind_the_stores_back_fails_verify_naming_the_missing_position(
    sql_filled: SqlEventStore,
) -> None:
    drop_append_only_triggers(sql_filled)
    raw(sql_filled, "DELETE FROM events WHERE position = 4")
    report = sql_filled.verify(batch_size=2)
    assert not report.ok
    assert report.first_bad_position == 4
    assert report.reason == "position 4 is missing"


# --- the derived search index -------------------------------------------------------------------------------


NOTES = [
    ("The database schema lives in migrations/ and is applied by alembic", ["project/db"]),
    ("Use the advisory lock before appending to the event log", ["db", "locking"]),
    ("Release notes are written in docs/CHANGELOG.md", ["docs"]),
    ("The schema of the search index is derived and may be dropped", ["project/db", "search"]),
    ("Tests run against a real database and a real MCP client", ["tests"]),
]
QUERIES = [
    "database schema",
    "lock",
    "notes changelog",
    "derived index dropped",
    "real client",
    "nothing-matches",
]


@pytest.fixture
def indexed(store: LedgerStore) -> tuple[LedgerStore, SearchIndex]:
    for content, tags in NOTES:
        remember(store, content, tags)
    store.append("session:a", 0, [started("a")], META)  # not a memory: the index skips it
    index = SearchIndex(store)
    index.create_schema()
    return store, index


def results(index: SearchIndex) -> dict[str, list[tuple[str, str, list[str], float]]]:
    return {q: [(h.block_id, h.content, h.tags, h.score) for h in index.search(q, 10)] for q in QUERIES}


def test_the_search_index_finds_remembered_blocks_best_match_first(
    indexed: tuple[LedgerStore, SearchIndex],
) -> None:
    _, index = indexed
    hits = index.search("database schema", 10)
    assert hits[0].content.startswith("The database schema")
    assert {h.block_id for h in hits} >= {memory.block_id_for(NOTES[0][0]), memory.block_id_for(NOTES[3][0])}
    assert hits[0].tags == ["project/db"]
    assert index.search("nothing-matches", 10) == []


def test_dropping_and_rebuilding_the_search_index_gives_the_same_results(
    indexed: tuple[LedgerStore, SearchIndex],
) -> None:
    store, index = indexed
    before = results(index)
    assert any(before.values())
    head = store.head()
    index.drop()
    assert index.checkpoint() == 0
    assert index.rebuild() == len(NOTES)
    assert results(index) == before
    assert index.checkpoint() == head[0]
    assert store.head() == head  # the log is untouched


def test_catching_up_the_search_index_is_idempotent(indexed: tuple[LedgerStore, SearchIndex]) -> None:
    store, index = indexed
    assert index.catch_up() == len(NOTES)
    before = results(index)
    assert index.catch_up() == 0
    assert SearchIndex(store).catch_up() == 0  # a second process sees the shared checkpoint
    assert results(index) == before
    remember(store, "A brand new note about the lock manager", ["db"])
    assert index.catch_up() == 1
    assert index.catch_up() == 0
    hits = index.search("lock", 10)
    assert len(hits) == len({h.block_id for h in hits}) == 2


def test_a_slow_index_catch_up_never_moves_the_shared_checkpoint_backwards(
    indexed: tuple[LedgerStore, SearchIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Process A reads the head, then process B catches up further before A takes the index lock."""
    store, index_a = indexed
    index_a.catch_up()
    remember(store, "The first widget note", ["w"])
    index_b = SearchIndex(store)
    real_pending = index_a._pending

    def pending_then_b_runs() -> tuple[int, bool]:
        seen = real_pending()
        remember(store, "The second widget note", ["w"])
        assert index_b.catch_up() == 2
        return seen

    monkeypatch.setattr(index_a, "_pending", pending_then_b_runs)
    index_a.catch_up()
    monkeypatch.undo()
    assert index_a.checkpoint() == store.head()[0]
    assert index_a.catch_up() == 0
    hits = index_a.search("widget", 10)
    assert len(hits) == len({h.block_id for h in hits}) == 2


def test_a_search_on_a_fresh_index_catches_up_from_the_log_first(
    indexed: tuple[LedgerStore, SearchIndex],
) -> None:
    store, index = indexed
    assert index.checkpoint() == 0
    assert index.search("advisory", 10)[0].block_id == memory.block_id_for(NOTES[1][0])
    assert index.checkpoint() == store.head()[0]


# --- an unreachable store -----------------------------------------------------------------------------------


@pytest.fixture
def unreachable(tmp_path: Path) -> Iterator[Ledger]:
    """A ledger whose PostgreSQL server cannot be reached (nothing listens on port 1)."""
    key, _ = receipt_key.create_key(tmp_path / "receipt.key")
    store = SqlEventStore(make_engine(UNREACHABLE_PG), row_key=RowKey.derive(key.secret))
    yield Ledger(store=store, index=SearchIndex(store), key=key, signer=signing.SigningKey.generate())
    store.engine.dispose()


SID = "ses_" + "ab" * 10
OPERATIONS: list[tuple[str, Callable[[Ledger], Any]]] = [
    ("initialise", lambda ledger: ledger.initialise()),
    ("head", lambda ledger: ledger.store.head()),
    ("append", lambda ledger: ledger.store.append("session:a", 0, [started("a")], META)),
    ("load_stream", lambda ledger: ledger.store.load_stream("session:a")),
    ("iter_events", lambda ledger: list(ledger.store.iter_events())),
    ("position_as_of", lambda ledger: ledger.store.position_as_of(T0)),
    ("verify", lambda ledger: ledger.store.verify()),
    ("clock_in", lambda ledger: ledger.clock_in(ALICE, "dev")),
    ("remember", lambda ledger: ledger.remember(ALICE, "a note")),
    ("search", lambda ledger: ledger.search(ALICE, SID, "anything")),
    ("assert_compliance", lambda ledger: ledger.assert_compliance(ALICE, SID)),
    ("compliance_report", lambda ledger: ledger.compliance_report()),
    ("session_state", lambda ledger: ledger.session_state(SID)),
    ("rebuild_index", lambda ledger: ledger.rebuild_index()),
    ("recall", lambda ledger: ledger.recall(ALICE, "anything")),
    ("curate", lambda ledger: ledger.curate(ALICE)),
    ("outcome", lambda ledger: ledger.outcome(ALICE, ["blk_" + "a" * 24], 1.0)),
    ("memory_blocks", lambda ledger: ledger.memory_blocks()),
    ("task_create", lambda ledger: ledger.task_create(ALICE, "t-1", "A task")),
    ("task_transition", lambda ledger: ledger.task_transition(ALICE, "t-1", "active", SID)),
    ("task_get", lambda ledger: ledger.task_get("t-1")),
]


@pytest.mark.parametrize("operation", [o[1] for o in OPERATIONS], ids=[o[0] for o in OPERATIONS])
def test_an_unreachable_postgresql_makes_ledger_operations_raise_store_unavailable(
    unreachable: Ledger, operation: Callable[[Ledger], Any]
) -> None:
    with pytest.raises(StoreUnavailable) as caught:
        operation(unreachable)
    assert caught.value.code == "store_unavailable" and caught.value.hint


def test_assert_compliance_never_passes_when_the_store_is_unreachable(
    make_ledger: LedgerFactory, pg_url: str, unreachable: Ledger
) -> None:
    live = make_ledger(pg_url)
    sid = live.clock_in(ALICE, "dev").session_id
    live.search(ALICE, sid, "anything")
    cut_off = Ledger(store=unreachable.store, index=unreachable.index, key=live.key, signer=live.signer)
    outcomes: list[str] = []
    for _ in range(3):
        try:
            outcomes.append(cut_off.assert_compliance(ALICE, sid).status)
        except StoreUnavailable:
            outcomes.append("unavailable")
    assert outcomes == ["unavailable"] * 3
    # Nothing was consumed while the store was away: the token still earns exactly one stamp.
    assert live.session_state(sid).token.status == "valid"
    assert [live.assert_compliance(ALICE, sid).status for _ in range(2)] == ["PASS", "FAIL"]


def bounded_index(store: LedgerStore, rank_at_most: int) -> SearchIndex:
    """Eight deploy notes, oldest first; the last two are also about the checklist."""
    for i in range(8):
        extra = " and the release checklist" if i >= 6 else ""
        remember(store, f"Deploy note number {i}: roll out the service{extra}", ["ops"])
    index = SearchIndex(store, rank_at_most=rank_at_most)
    index.create_schema()
    return index


def test_on_sqlite_the_ranking_equals_one_order_by_score_then_block_id_with_ties_at_every_cut(
    sqlite_url: str,
) -> None:
    # Search scores the matches from the index alone and reads text only for the rows it returns; the answer must
    # be what one ``ORDER BY score DESC, block_id LIMIT n`` gives, ties at the cut included. Notes drawn from a few
    # words have many equal scores, so most cuts fall inside a tie.
    engine = make_engine(sqlite_url)
    store = SqlEventStore(engine, row_key=TEST_ROW_KEY)
    store.create_schema()
    words = ["hash", "chain", "token", "replay", "anchor"]
    for i in range(120):
        text = " ".join(words[(i * 7 + j * (i % 3 + 1)) % len(words)] for j in range(4 + i % 5))
        remember(store, f"note {i}: {text}", ["project/db" if i % 4 == 0 else "ops"])
    index = SearchIndex(store, rank_at_most=1000)  # no cap here: it is tested below
    index.create_schema()
    index.catch_up()
    reference = (
        "SELECT block_id, content, tags_json, -bm25(memory_fts) AS score FROM memory_fts "
        "WHERE memory_fts MATCH ?{tag} ORDER BY score DESC, block_id LIMIT ?"
    )
    compared = 0

    def reference_rows(conn: Any, joined: str, query: str, tag: str | None, limit: int) -> list[tuple[str, str, float]]:
        sql = reference.format(tag="" if tag is None else " AND tags_json LIKE '%\"project/%'")
        match = joined.join(f'"{w}"' for w in query.split())
        return [(r[0], r[1], r[3]) for r in conn.exec_driver_sql(sql, (match, limit)).fetchall()]

    with engine.connect() as conn:
        for query, tag in itertools.product(["hash", "chain token", "anchor replay hash", "note"], [None, "project/"]):
            for limit in (1, 3, 5, 10, 200):
                # Without query analysis, every match ranks together: exactly the one ORDER BY.
                index.analyse = False
                expected = reference_rows(conn, " OR ", query, tag, limit)
                got = [(h.block_id, h.content, h.score) for h in index.search(query, limit, tag_prefix=tag)]
                assert got == expected, (query, tag, limit)
                # With it, the AND matches in that order, then the other OR matches in theirs.
                index.analyse = True
                strong = reference_rows(conn, " AND ", query, tag, limit)
                seen = {r[0] for r in strong}
                weak = [r for r in reference_rows(conn, " OR ", query, tag, 2 * limit) if r[0] not in seen]
                expected = strong + weak[: limit - len(strong)]
                hits = index.search(query, limit, tag_prefix=tag)
                assert [(h.block_id, h.content) for h in hits] == [r[:2] for r in expected], (query, tag, limit)
                assert [h.score for h in hits[: len(strong)]] == [r[2] for r in strong]
                compared += 1
    engine.dispose()
    assert compared >= 30


def test_a_common_word_is_not_ranked_when_the_query_has_words_that_matter(store: LedgerStore) -> None:
    index = bounded_index(store, rank_at_most=3)
    hits = index.search("deploy checklist", 10)
    # "deploy" matches 8 blocks (> 3): only "checklist" is ranked, so deploy-only notes do not fill the page.
    assert sorted(h.content[:20] for h in hits) == ["Deploy note number 6", "Deploy note number 7"]
    assert len(SearchIndex(store, rank_at_most=100).search("deploy checklist", 10)) == 8  # unbounded: all of them


def test_a_query_of_common_words_ranks_only_its_newest_matches(store: LedgerStore) -> None:
    index = bounded_index(store, rank_at_most=3)
    hits = index.search("deploy service", 10)
    assert sorted(h.content[:20] for h in hits) == [f"Deploy note number {i}" for i in (5, 6, 7)]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # still ranked by score
    assert index.search("deploy nothing-matches-this", 10) != []  # a word that matches nothing is no rare word


# --- memory only: what its verify finds when its lists are altered behind its back -------------------------


def test_the_memory_stores_verify_names_an_event_or_a_tree_hash_altered_behind_its_back() -> None:
    store = MemoryStore(row_key=TEST_ROW_KEY)
    fill(store)
    rec = store._records[6]
    store._records[6] = dataclasses.replace(rec, data_json=rec.data_json.replace("again", "forged"))
    report = store.verify()
    assert not report.ok and report.first_bad_position == 7 and report.checked == 6
    store._records[6] = rec
    assert store.verify().ok
    store._hashes[3] = bytes(32)
    assert not store.verify().ok
    assert store.verify(tree=False).ok
    store.rebuild_tree()
    assert store.verify().ok
    store.dispose()


def test_a_ledger_on_the_memory_store_serves_threads_at_once_and_one_token_earns_one_stamp(
    make_ledger: LedgerFactory,
) -> None:
    ledger = make_ledger(MEMORY)
    agents = [Actor(f"agent-{i}", "mcp") for i in range(4)]
    sessions = [ledger.clock_in(a, "dev").session_id for a in agents]
    barrier = threading.Barrier(len(agents))
    errors: list[BaseException] = []
    stamps: list[str] = []

    def work(i: int) -> None:
        try:
            barrier.wait(timeout=READY_WITHIN)
            ledger.remember(agents[i], f"Widget note {i}: the widget service restarts nightly")
            ledger.search(agents[i], sessions[i], "widget")
            stamps.append(ledger.assert_compliance(agents[i], sessions[i]).status)
            shared = sessions[0]  # every thread also tries the first session's token, spent or not
            if i == 0:
                return
            stamps.append(ledger.assert_compliance(agents[0], shared).status)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(agents))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=READY_WITHIN)
    assert errors == []
    # Four sessions, four tokens: four stamps, whichever thread got the first session's; every other try fails.
    assert sorted(stamps) == ["FAIL"] * 3 + ["PASS"] * 4
    assert [r.position for r in ledger.store.iter_records()] == list(range(1, ledger.store.head()[0] + 1))
    assert ledger.verify().ok
    assert len(ledger.search(agents[1], sessions[1], "widget").results) == 4
