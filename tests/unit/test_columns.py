"""ColumnTable: a dict of frozen states stored by column. It must behave exactly like the dict it replaces —
same keys, equal values, first-set order — through writes, overwrites, evictions from its hot set, deletes,
copies and the snapshot wire, and refuse a wire payload it did not write."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections import codec, columns
from projections.active_hours import SessionSpan
from projections.columns import ColumnTable
from projections.decay import Tier
from projections.memory import BlockView

T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)
moments = st.integers(min_value=0, max_value=10**12).map(lambda us: T0 + _dt.timedelta(microseconds=us))


def micros(moment: _dt.datetime) -> int:
    return (moment - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)) // _dt.timedelta(microseconds=1)


KEYS = [f"blk_{i:02d}" for i in range(12)] + ["blk_x", "blk_é1"]  # most of one width (packable), two not


@st.composite
def blocks(draw: Any, key: str) -> BlockView:
    return BlockView(
        block_id=key,
        tags=tuple(draw(st.lists(st.sampled_from(["a", "self/value", "self/constitutional"]), max_size=3))),
        category=draw(st.sampled_from(["fact", "knowledge"])),
        tier=draw(st.sampled_from(list(Tier))),
        lam=draw(st.floats(min_value=0, max_value=1)),
        created_at=draw(moments),
        created_by=draw(st.none() | st.sampled_from(["alice", "bob"])),
        last_reinforced_at=draw(moments),
        confidence=draw(st.floats(min_value=0, max_value=1)),
        outcomes=draw(st.integers(min_value=0, max_value=2**62)),
        archived_at=draw(st.none() | moments),
        position=draw(st.integers(min_value=0, max_value=2**40)),
        origin=draw(st.integers(min_value=0, max_value=2**40)),
    )


@st.composite
def operations(draw: Any) -> list[tuple[str, str, Any]]:
    ops: list[tuple[str, str, Any]] = []
    for _ in range(draw(st.integers(min_value=0, max_value=40))):
        key = draw(st.sampled_from(KEYS))
        kind = draw(st.sampled_from(["set", "set", "set", "none", "odd", "del", "copy"]))
        if kind == "set":
            ops.append(("set", key, draw(blocks(key))))
        elif kind == "odd":  # a state whose key field is not its key stays an object
            ops.append(("set", key, draw(blocks("blk_other"))))
        elif kind == "none":
            ops.append(("set", key, None))
        else:
            ops.append((kind, key, None))
    return ops


def play(ops: list[tuple[str, str, Any]], hot: int) -> tuple[dict[str, Any], ColumnTable[str, Any]]:
    model: dict[str, Any] = {}
    table: ColumnTable[str, Any] = ColumnTable(BlockView, "block_id", hot=hot)
    for kind, key, value in ops:
        if kind == "set":
            model[key] = value
            table[key] = value
        elif kind == "copy":  # a snapshot's copy packs the keys (PACK_AT is low in these tests)
            table = table.copy() if len(model) % 2 else (table.copy(), table)[1]
        elif key in model:
            del model[key]
            del table[key]
    return model, table


@settings(max_examples=150, deadline=None)
@given(ops=operations(), hot=st.integers(min_value=1, max_value=4))
def test_a_column_table_behaves_as_the_dict_it_replaces(ops: list[tuple[str, str, Any]], hot: int) -> None:
    with mock.patch.object(columns, "PACK_AT", 2):
        model, table = play(ops, hot)
    assert len(table) == len(model)
    assert set(table) == set(model)
    assert dict(table.items()) == model
    assert all(table[k] == v and table.get(k) == v and k in table for k, v in model.items())
    assert table.get("missing", 7) == 7 and "missing" not in table
    with pytest.raises(KeyError):
        table["missing"]
    assert dict(table.field("tags")) == {k: v.tags for k, v in model.items() if v is not None}
    keys, (tags, archived, lam, outcomes) = table.gather("tags", "archived_at", "lam", "outcomes")
    assert len(keys) == len(set(keys)) and all(len(c) == len(keys) for c in (tags, archived, lam, outcomes))
    assert dict(zip(keys, zip(tags, archived, lam, outcomes, strict=True), strict=True)) == {
        k: (v.tags, None if v.archived_at is None else micros(v.archived_at), v.lam, v.outcomes)
        for k, v in model.items()
        if v is not None
    }
    assert codec.loads(codec.dumps({"t": table})) == {"t": model}


@settings(max_examples=50, deadline=None)
@given(ops=operations())
def test_keys_keep_the_order_they_were_first_set_in_when_nothing_is_deleted(ops: list[tuple[str, str, Any]]) -> None:
    ops = [op for op in ops if op[0] == "set" and op[2] is not None and op[2].block_id == op[1]]
    model, table = play(ops, hot=2)
    assert list(table) == list(model)


def test_a_copy_does_not_change_when_the_table_does() -> None:
    table: ColumnTable[str, SessionSpan] = ColumnTable(SessionSpan, "session_id", hot=1)
    table["s1"] = SessionSpan("s1", T0, T0)
    table["s2"] = SessionSpan("s2", T0, T0)
    copy = table.copy()
    table["s1"] = SessionSpan("s1", T0, T0 + _dt.timedelta(hours=1), T0 + _dt.timedelta(hours=1))
    table["s3"] = SessionSpan("s3", T0, T0)
    assert dict(copy.items()) == {"s1": SessionSpan("s1", T0, T0), "s2": SessionSpan("s2", T0, T0)}
    assert table["s1"].ended_at == T0 + _dt.timedelta(hours=1)


def wire() -> dict[str, Any]:
    table: ColumnTable[str, SessionSpan] = ColumnTable(SessionSpan, "session_id")
    for i in range(3):
        table[f"s{i}"] = SessionSpan(f"s{i}", T0, T0, None if i else T0)
    data: dict[str, Any] = json.loads(codec.dumps({"spans": table}))
    return data


@pytest.mark.parametrize(
    "mangle",
    [
        lambda c: c.update(started_at="!!not base64!!"),
        lambda c: c.update(started_at="AAAA"),  # 3 bytes: not a whole number of 8-byte values
        lambda c: c.update(started_at=""),  # no rows for three keys
        lambda c: c.pop("ended_at"),  # a column missing
    ],
)
def test_a_column_payload_it_did_not_write_is_a_codec_error(mangle: Any) -> None:
    data = wire()
    columns = data["value"]["d"][0][1]["c"][2]["columns"]
    mangle(columns)
    with pytest.raises(codec.CodecError):
        codec.loads(json.dumps(data).encode())


def test_a_coded_value_out_of_range_or_an_unknown_class_is_a_codec_error() -> None:
    table: ColumnTable[str, BlockView] = ColumnTable(BlockView, "block_id")
    table["b"] = BlockView("b", ("a",), "fact", Tier.STANDARD, 0.1, T0, None, T0)
    data: dict[str, Any] = json.loads(codec.dumps({"blocks": table}))
    spec = data["value"]["d"][0][1]["c"]
    spec[2]["columns"]["category"]["i"] = "BQAAAA=="  # code 5 of a column holding one value
    with pytest.raises(codec.CodecError):
        codec.loads(json.dumps(data).encode())
    spec[0] = "Popen"
    with pytest.raises(codec.CodecError):
        codec.loads(json.dumps(data).encode())


def test_numbers_and_moments_are_stored_as_arrays_and_only_other_fields_are_coded() -> None:
    table: ColumnTable[str, BlockView] = ColumnTable(BlockView, "block_id")
    kinds = {name: type(column).__name__ for name, column in table._columns.items()}
    assert kinds["lam"] == kinds["created_at"] == kinds["archived_at"] == kinds["origin"] == "array"
    assert kinds["tags"] == kinds["tier"] == kinds["created_by"] == "_Codes"


def test_a_large_table_packs_its_keys_when_copied_or_restored_and_still_finds_every_one() -> None:
    table: ColumnTable[str, SessionSpan] = ColumnTable(SessionSpan, "session_id")
    ids = [f"ses_{i:06d}" for i in range(columns.PACK_AT + 10)]
    for i, sid in enumerate(ids):
        table[sid] = SessionSpan(sid, T0, T0 + _dt.timedelta(seconds=i))
    copy = table.copy()
    restored = codec.loads(codec.dumps({"t": table}))["t"]
    for packed in (table, copy, restored):
        assert packed._index.count == len(ids) and not packed._index.dict  # all packed
        assert all(packed[sid].last_event_at == T0 + _dt.timedelta(seconds=i) for i, sid in enumerate(ids))
        assert "ses_999999" not in packed and packed.get("ses_00000") is None and packed.get(5) is None
    table["ses_new001"] = SessionSpan("ses_new001", T0, T0)  # a new key after packing goes to the dict
    del table[ids[3]]  # deleting a packed key unpacks first
    assert len(table) == len(ids) and ids[3] not in table and table["ses_000004"].session_id == "ses_000004"


@pytest.mark.parametrize(
    ("ids", "hexed"),
    [
        ([f"blk_{i:024x}" for i in range(columns.PACK_AT + 5)], True),  # block ids: prefix + lower-case hex
        ([f"blk_{i:023x}" for i in range(columns.PACK_AT + 5)], False),  # an odd number of digits: ASCII
        ([f"blk_{i:024X}" for i in range(columns.PACK_AT + 5)], False),  # upper case: ASCII (it would not round-trip)
    ],
)
def test_hex_ids_pack_as_bytes_half_the_size_and_lookups_match_the_exact_text(ids: list[str], hexed: bool) -> None:
    table: ColumnTable[str, SessionSpan] = ColumnTable(SessionSpan, "session_id")
    for i, sid in enumerate(ids):
        table[sid] = SessionSpan(sid, T0, T0 + _dt.timedelta(seconds=i))
    restored = codec.loads(codec.dumps({"t": table}))["t"]
    for packed in (table.copy(), restored):
        index = packed._index
        assert index.count == len(ids) and index.hexed is hexed
        assert len(index.blob) == len(ids) * (12 if hexed else len(ids[0]))
        assert [packed[sid].last_event_at for sid in ids] == [T0 + _dt.timedelta(seconds=i) for i in range(len(ids))]
        assert sorted(k for k, _ in index.items()) == sorted(ids)
        other_case = ids[10].swapcase().replace("BLK_", "blk_")  # the same digits in the other case
        assert other_case not in packed and packed.get(ids[10][:-2] + " a") is None  # fromhex skips spaces


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(["bench", "self/value", "self/goal", "selfish", "team/x"]), max_size=3)),
    st.sampled_from(["self/", "self", "team/", "bench", "nothing/"]),
)
def test_the_graphs_tag_prefix_query_is_a_filter_over_every_block(tag_sets: list[list[str]], prefix: str) -> None:
    """Only hierarchical tags are indexed; a prefix query answers as a scan of every block's tags would."""
    from ledger.core.events import MemoryRemembered, RecordedEvent
    from projections.memory import MemoryGraph

    graph = MemoryGraph()
    for i, tags in enumerate(tag_sets, 1):
        event = MemoryRemembered(block_id=f"blk_{i:03d}", content=f"text {i}", tags=tags)
        graph.apply(RecordedEvent(i, f"block:blk_{i:03d}", 1, T0, {}, event, "0" * 64))
    expected = sorted(b.block_id for b in graph.blocks.values() if any(t.startswith(prefix) for t in b.tags))
    assert [b.block_id for b in graph.live_blocks(prefix)] == expected


@pytest.mark.parametrize(
    "mangle",
    [
        lambda p: p.update(keys=p["keys"][::-1]),  # not sorted: bisection would miss keys
        lambda p: p.update(keys=p["keys"][:-1]),  # not a whole number of keys
        lambda p: p.update(rows="AAAAAA=="),  # rows that do not name each row once
        lambda p: p.update(width=0),
    ],
)
def test_a_packed_key_payload_it_did_not_write_is_a_codec_error(mangle: Any) -> None:
    table: ColumnTable[str, SessionSpan] = ColumnTable(SessionSpan, "session_id")
    for i in range(columns.PACK_AT + 1):
        table[f"ses_{i:06d}"] = SessionSpan(f"ses_{i:06d}", T0, T0)
    data: dict[str, Any] = json.loads(codec.dumps({"t": table}))
    mangle(data["value"]["d"][0][1]["c"][2]["packed"])
    with pytest.raises(codec.CodecError):
        codec.loads(json.dumps(data).encode())
