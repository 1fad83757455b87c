"""The transparency-log tree in the store, on a real SQLite file and a real PostgreSQL schema: kept in the append
transaction (exactly the committed events, whatever the writers and groups), its roots and proofs checked against
the RFC 9162 verification, O(log n) hashes in one indexed query at any size, bad parameters refused, and a tree
behind or ahead of the log refused, built and rebuilt."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.core.chain import StoredRecord
from ledger.core.errors import ConcurrencyError, IntegrityViolation, InvalidInput, NotInitialised
from ledger.core.events import MemorySearched, SessionStarted
from ledger.core.storage import SqlEventStore, make_engine
from ledger.core.tlog import merkle
from tests.integration.test_tamper import disable_chain_triggers
from tests.store_support import TEST_ROW_KEY

META = {"agent": "alice", "source": "cli"}
StoreFactory = Callable[..., SqlEventStore]


@pytest.fixture
def make_store(db_url: str) -> Iterator[StoreFactory]:
    stores: list[SqlEventStore] = []

    def factory(**options: Any) -> SqlEventStore:
        store = SqlEventStore(make_engine(db_url), row_key=TEST_ROW_KEY, **options)
        store.create_schema()
        stores.append(store)
        return store

    yield factory
    for store in stores:
        store.dispose()


@pytest.fixture
def store(make_store: StoreFactory) -> SqlEventStore:
    return make_store()


def searched(sid: str, n: int = 0) -> MemorySearched:
    return MemorySearched(session_id=sid, query=f"q{n}", limit=10, result_ids=[], count=0)


def fill(store: SqlEventStore, sessions: int, per_append: int = 1, appends: int = 1) -> None:
    for s in range(sessions):
        sid = f"s{s}"
        store.append(f"session:{sid}", 0, [SessionStarted(session_id=sid, agent="alice", role="dev")], META)
        for a in range(appends):
            version = 1 + a * per_append
            store.append(f"session:{sid}", version, [searched(sid, version + i) for i in range(per_append)], META)


def leaves(store: SqlEventStore) -> list[bytes]:
    return [merkle.leaf_hash(bytes.fromhex(r.hash)) for r in store.iter_records()]


def root_of(hashes: list[bytes]) -> bytes:
    tree = merkle.CompactRange()
    for h in hashes:
        tree.append(h)
    return tree.root()


def stored_table(store: SqlEventStore) -> list[tuple[int, bytes]]:
    """The tree's stored hashes as (index, hash), read from the rows: each row keeps what its leaf stored."""
    with store.read_cursor() as cur:
        cur.execute("SELECT position, tree FROM events WHERE tree IS NOT NULL ORDER BY position")
        rows = cur.fetchall()
    blob = b""
    for position, tree in rows:
        assert merkle.stored_hash_index(0, int(position) - 1) == len(blob) // 32  # no leaf skipped
        assert len(tree) == 32 * merkle.hashes_stored_with(int(position) - 1)
        blob += bytes(tree)
    return [(i, blob[32 * i : 32 * (i + 1)]) for i in range(len(blob) // 32)]


def raw(store: SqlEventStore, statement: str, params: Any = ()) -> None:
    with store.engine.begin() as conn:
        conn.exec_driver_sql(store.sql(statement), tuple(params))


def assert_tree_matches_the_log(store: SqlEventStore) -> None:
    """The stored tree holds exactly the hashes the log's chain hashes give, and proofs at every size verify."""
    hashes = leaves(store)
    n = len(hashes)
    assert store.tree_size() == n == store.head()[0]
    expected: list[bytes] = []
    for i, h in enumerate(hashes):
        expected.extend(merkle.new_stored_hashes(i, h, lambda ids: [expected[j] for j in ids]))
    assert stored_table(store) == list(enumerate(expected))
    for size in range(1, n + 1):
        root = store.tree_root(size)
        assert root == root_of(hashes[:size])
        for index in {0, size // 2, size - 1}:
            merkle.verify_inclusion(index, size, hashes[index], store.prove_inclusion(index, size), root)
        for old in {1, size // 2 or 1, size}:
            merkle.verify_consistency(old, size, store.prove_consistency(old, size), root_of(hashes[:old]), root)
    assert store.verify().ok


def test_every_append_extends_the_tree_in_its_transaction(store: SqlEventStore) -> None:
    assert store.tree_size() == 0 and store.tree_root(0) == merkle.EMPTY_ROOT
    fill(store, sessions=3, per_append=3, appends=4)  # single events and batches of three, several streams
    assert_tree_matches_the_log(store)
    for p in (1, 20, store.head()[0]):
        record = store.get(p)
        assert record is not None and store.leaf_data(p) == bytes.fromhex(record.hash)


def test_sixteen_writers_and_a_second_store_leave_exactly_the_committed_events_in_the_tree(
    make_store: StoreFactory,
) -> None:
    one, two = make_store(), make_store()  # two stores: each finds heads the other wrote
    errors: list[BaseException] = []

    def writer(store: SqlEventStore, n: int) -> None:
        try:
            sid = f"w{n}"
            store.append(f"session:{sid}", 0, [SessionStarted(session_id=sid, agent="alice", role="dev")], META)
            for v in range(1, 13):
                store.append(f"session:{sid}", v, [searched(sid, v)], META)
                with contextlib.suppress(ConcurrencyError):  # a race all of them lose but one: refused, no trace
                    store.append("session:shared", 0, [searched("shared")], META)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(one if n % 2 else two, n)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert one.head()[0] == 16 * 13 + 1
    assert_tree_matches_the_log(one)


def test_an_append_refused_by_the_database_leaves_no_hash_and_no_authenticator(store: SqlEventStore) -> None:
    fill(store, sessions=2)
    before = (stored_table(store), store.tree_size())
    # A trigger refusing one stream's rows: that member fails alone; a commit that fails writes nothing at all.
    if store.dialect == "sqlite":
        raw(
            store,
            "CREATE TRIGGER refuse_s0 BEFORE INSERT ON events WHEN NEW.stream = 'session:s0' "
            "BEGIN SELECT RAISE(ABORT, 'refused by a test'); END",
        )
    else:
        raw(
            store,
            "CREATE FUNCTION refuse_s0() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF NEW.stream = 'session:s0' THEN RAISE EXCEPTION 'refused by a test'; END IF; RETURN NEW; END $$",
        )
        raw(store, "CREATE TRIGGER refuse_s0 BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_s0()")
    with pytest.raises(Exception, match="refused by a test"):
        store.append("session:s0", 2, [searched("s0", 9)], META)
    assert (stored_table(store), store.tree_size()) == before
    with pytest.raises(ConcurrencyError):
        store.append("session:s1", 0, [searched("s1")], META)
    assert (stored_table(store), store.tree_size()) == before
    with store.read_cursor() as cur:
        cur.execute("SELECT COUNT(*), MAX(position) FROM events WHERE mac IS NOT NULL")
        assert tuple(cur.fetchone()) == (store.head()[0], store.head()[0])
    store.append("session:s1", 2, [searched("s1", 2)], META)
    assert_tree_matches_the_log(store)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE events SET tree = tree",
        "UPDATE events SET mac = mac",
        "UPDATE events SET tree = NULL WHERE position = 2",
        "UPDATE events SET mac = NULL WHERE position = 2",
        "UPDATE events SET tree = substr(tree, 1, 32) WHERE position = 2",
        "UPDATE events SET mac = tree WHERE position = 3",
    ],
)
def test_a_rows_authenticator_and_tree_hashes_once_written_never_change(store: SqlEventStore, statement: str) -> None:
    fill(store, sessions=1, appends=2)
    with pytest.raises(sa.exc.DBAPIError, match="events is append-only"):
        raw(store, statement)
    assert_tree_matches_the_log(store)


def test_bad_sizes_and_indexes_are_refused_with_a_hint(store: SqlEventStore) -> None:
    fill(store, sessions=2, appends=2)  # 6 leaves
    refused: list[tuple[Callable[[], Any], str]] = [
        (lambda: store.tree_root(7), "size 7 is past the tree, which has 6 leaves"),
        (lambda: store.tree_root(-1), "whole number"),
        (lambda: store.tree_root(True), "whole number"),
        (lambda: store.prove_inclusion(6, 6), "leaf index 6 is not in a tree of 6 leaves"),
        (lambda: store.prove_inclusion(0, 7), "past the tree"),
        (lambda: store.prove_inclusion(-1, 6), "whole number"),
        (lambda: store.prove_consistency(0, 6), "no consistency proof from size 0 to size 6"),
        (lambda: store.prove_consistency(5, 4), "no consistency proof from size 5 to size 4"),
        (lambda: store.prove_consistency(1, 9), "past the tree"),
        (lambda: store.leaf_data(0), "positions start at 1"),
        (lambda: store.leaf_data(7), "the log has no event at position 7"),
    ]
    for call, message in refused:
        with pytest.raises(InvalidInput, match=message) as caught:
            call()
        assert caught.value.hint
    assert store.prove_consistency(6, 6) == [] and store.prove_inclusion(0, 1) == []


class Counted:
    """Counts the statements a store runs on its read cursors and the stored hashes they ask for."""

    def __init__(self, store: SqlEventStore) -> None:
        self.statements: list[str] = []
        self.asked: list[int] = []
        inner, reader = store._read_cursor, store.tree_hashes
        counted = self

        @contextlib.contextmanager
        def cursor() -> Iterator[Any]:
            with inner() as cur:
                yield _Spy(cur, counted.statements)

        def hashes(indexes: Any) -> list[bytes]:
            counted.asked.append(len(indexes))
            return reader(indexes)

        store._read_cursor = cursor  # type: ignore[method-assign]
        store.tree_hashes = hashes  # type: ignore[method-assign]


class _Spy:
    def __init__(self, cur: Any, log: list[str]) -> None:
        self._cur, self._log = cur, log

    def execute(self, sql: str, params: Any = ()) -> Any:
        self._log.append(sql)
        return self._cur.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)


def test_a_proof_reads_log_n_hashes_in_one_indexed_query_at_10_and_at_10000_leaves(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    store.append("s", 0, [searched("s", i) for i in range(10)], META)
    small = _proof_cost(store, 10)
    for start in range(10, 10_000, 1000):
        store.append("s", start, [searched("s", i) for i in range(start, min(start + 1000, 10_000))], META)
    large = _proof_cost(store, 10_000)
    # The same statements at both sizes: one to read the hashes (after the size was checked once), and the
    # hashes asked grow with log2(n) only (RFC 9162: at most ceil(log2 n) in a path, read as complete subtrees).
    assert small["statements"] == large["statements"] == 1
    assert small["asked"] <= 2 * 4 and large["asked"] <= 2 * 14
    fresh = make_store()  # a store that never saw this tree checks its size first: still a constant
    assert _proof_cost(fresh, 10_000, warm=False)["statements"] == 2
    plan = _plan(store)
    assert ("USING INDEX sqlite_autoindex_events" in plan) if store.dialect == "sqlite" else ("events_pkey" in plan), (
        plan
    )


def _proof_cost(store: SqlEventStore, size: int, warm: bool = True) -> dict[str, int]:
    """What one inclusion proof at ``size`` reads: statements run and hashes asked."""
    if warm:
        store.tree_size()
    counted = Counted(store)
    proof = store.prove_inclusion(size // 3, size)
    cost = {"statements": len(counted.statements), "asked": counted.asked[0]}
    del store._read_cursor, store.tree_hashes  # type: ignore[attr-defined]
    leaf = merkle.leaf_hash(store.leaf_data(size // 3 + 1))
    merkle.verify_inclusion(size // 3, size, leaf, proof, store.tree_root(size))
    assert len(proof) <= (size - 1).bit_length()
    return cost


def _plan(store: SqlEventStore) -> str:
    positions = sorted({merkle.stored_hash_leaf(i)[0] + 1 for i in merkle.compact_range_indexes(10_000)})
    marks = ", ".join("?" * len(positions))
    prefix = "EXPLAIN QUERY PLAN " if store.dialect == "sqlite" else "EXPLAIN "
    with store.read_cursor() as cur:
        if store.dialect == "postgresql":
            cur.execute("ANALYZE events")
        cur.execute(store.sql(f"{prefix}SELECT position, tree FROM events WHERE position IN ({marks})"), positions)
        return " ".join(str(part) for row in cur.fetchall() for part in row)


def test_a_tree_behind_the_log_refuses_appends_until_it_is_built(store: SqlEventStore) -> None:
    fill(store, sessions=2, appends=2)
    # An event written with its authenticator but without its leaf (a node of an older version, say).
    head, head_hash = store.head()
    record = _next_record(store, head, head_hash)
    with store.write_transaction() as cur:
        cur.execute(store.sql(_INSERT), (*_row(record), TEST_ROW_KEY.mac(bytes.fromhex(record.hash))))
    other = SqlEventStore(store.engine, row_key=TEST_ROW_KEY)  # a store that did not write the head
    with pytest.raises(NotInitialised, match="tree covers fewer") as caught:
        other.append("session:s1", 3, [searched("s1", 3)], META)
    assert "compliance-ledger init" in caught.value.hint
    assert store.head()[0] == head + 1 and store.tree_size() == head
    report = store.verify()
    assert not report.ok and report.first_bad_position == head + 1 and "covers only" in (report.reason or "")
    assert store.build_tree() == 1
    other.append("session:s1", 3, [searched("s1", 3)], META)
    assert_tree_matches_the_log(store)


@pytest.mark.parametrize("wrong", ["leaf", "length"])
def test_altered_tree_hashes_at_the_head_fail_closed_until_the_tree_is_rebuilt(
    store: SqlEventStore, wrong: str
) -> None:
    fill(store, sessions=2, appends=2)
    n = store.tree_size()
    disable_chain_triggers(store)  # DDL rights: the guard lets no written tree hash change
    length = 32 * merkle.hashes_stored_with(n - 1) + (32 if wrong == "length" else 0)
    raw(store, "UPDATE events SET tree = ? WHERE position = ?", (bytes(length), n))
    other = SqlEventStore(store.engine, row_key=TEST_ROW_KEY)  # a store that did not write the head
    with pytest.raises(IntegrityViolation, match=f"position {n}|leaf {n - 1}"):
        other.tree_size()
    if wrong == "length":
        with pytest.raises(IntegrityViolation, match=f"position {n}"):
            other.append("session:s1", 3, [searched("s1", 3)], META)
    assert not store.verify().ok
    assert store.rebuild_tree() == n
    other.append("session:s1", 3, [searched("s1", 3)], META)
    assert_tree_matches_the_log(store)


def test_rebuilding_gives_the_same_tree_and_build_has_nothing_to_add(store: SqlEventStore) -> None:
    fill(store, sessions=3, per_append=2, appends=3)
    before = stored_table(store)
    ticks: list[int] = []
    assert store.rebuild_tree(ticks.append) == store.head()[0] and ticks[-1] == store.head()[0]
    assert stored_table(store) == before
    assert store.build_tree() == 0
    assert_tree_matches_the_log(store)


_INSERT = (  # a row with its authenticator and no tree hashes
    "INSERT INTO events (position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash, "
    "mac) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _next_record(store: SqlEventStore, head: int, head_hash: str) -> StoredRecord:
    from ledger.core.canonical import format_ts
    from ledger.core.chain import chain_rows
    from ledger.core.clock import now
    from ledger.core.mapper import encode, encode_meta

    version = store.load_stream("session:s0").version
    [row] = chain_rows(
        position=head,
        version=version,
        stream="session:s0",
        recorded_at=format_ts(now()),
        prev_hash=head_hash,
        meta_json=encode_meta(META),
        encoded=[encode(searched("s0", 99))],
    )
    return StoredRecord(*row)


def _row(record: StoredRecord) -> tuple[Any, ...]:
    return (
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
