"""The hash chain and the canonical JSON / timestamp format it is computed over (pure, no database)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.canonical import canonical_json, format_ts, parse_ts
from ledger.core.chain import GENESIS_HASH, StoredRecord, record_hash, verify_chain

# Text the ledger can store: any Unicode scalar value (lone surrogates are not UTF-8 and not JSON text).
TEXT = st.text(st.characters(codec="utf-8"), max_size=20)
JSON_SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False, allow_infinity=False) | TEXT
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=20,
)
JSON_OBJECTS = st.dictionaries(TEXT, JSON_VALUES, max_size=6)
# Years 1000-9999: the range in which the fixed-width format is defined (the clock never leaves it).
MOMENTS = st.datetimes(
    min_value=_dt.datetime(1000, 1, 2), max_value=_dt.datetime(9999, 12, 30), timezones=st.timezones()
)
HEX64 = st.text("0123456789abcdef", min_size=64, max_size=64)


def make_chain(payloads: list[dict[str, Any]], stream: str = "session:s1") -> list[StoredRecord]:
    """Build a valid chain of records the way the store does."""
    records: list[StoredRecord] = []
    prev = GENESIS_HASH
    for position, data in enumerate(payloads, 1):
        fields: dict[str, Any] = dict(
            position=position,
            stream=stream,
            version=position,
            type="MemorySearched",
            schema_version=1,
            data_json=canonical_json(data),
            meta_json=canonical_json({"agent": "alice"}),
            recorded_at=format_ts(_dt.datetime(2026, 1, 1, 12, 0, position, tzinfo=_dt.UTC)),
            prev_hash=prev,
        )
        rec = StoredRecord(**fields, hash=record_hash(**fields))
        records.append(rec)
        prev = rec.hash
    return records


CHAIN = make_chain([{"query": f"q{i}", "n": i} for i in range(6)])


# --- record_hash ------------------------------------------------------------------------------------------


@given(
    position=st.integers(1, 2**53),
    stream=TEXT,
    version=st.integers(1, 2**31),
    type_name=TEXT,
    schema_version=st.integers(1, 100),
    data=JSON_OBJECTS,
    meta=JSON_OBJECTS,
    recorded_at=MOMENTS,
    prev_hash=HEX64,
)
def test_record_hash_is_the_sha256_of_the_canonical_json_of_the_whole_record(
    position: int,
    stream: str,
    version: int,
    type_name: str,
    schema_version: int,
    data: dict[str, Any],
    meta: dict[str, Any],
    recorded_at: _dt.datetime,
    prev_hash: str,
) -> None:
    ts = format_ts(recorded_at)
    whole = {
        "position": position,
        "stream": stream,
        "version": version,
        "type": type_name,
        "schema_version": schema_version,
        "data": data,
        "meta": meta,
        "recorded_at": ts,
        "prev_hash": prev_hash,
    }
    expected = hashlib.sha256(canonical_json(whole).encode("utf-8")).hexdigest()
    assert (
        record_hash(
            position=position,
            stream=stream,
            version=version,
            type=type_name,
            schema_version=schema_version,
            data_json=canonical_json(data),
            meta_json=canonical_json(meta),
            recorded_at=ts,
            prev_hash=prev_hash,
        )
        == expected
    )


def test_a_stored_record_computes_its_own_hash_from_its_columns() -> None:
    rec = CHAIN[2]
    assert rec.computed_hash() == rec.hash
    assert dataclasses.replace(rec, stream="session:other").computed_hash() != rec.hash


def test_every_column_of_a_record_is_covered_by_its_hash() -> None:
    rec = CHAIN[0]
    changed: dict[str, Any] = {
        "position": 99,
        "stream": "x",
        "version": 7,
        "type": "MemoryRemembered",
        "schema_version": 2,
        "data_json": '{"query":"q9"}',
        "meta_json": '{"agent":"mallory"}',
        "recorded_at": "2026-01-01T12:00:09.000000Z",
        "prev_hash": "f" * 64,
    }
    for column, value in changed.items():
        assert dataclasses.replace(rec, **{column: value}).computed_hash() != rec.hash, column


# --- verify_chain -----------------------------------------------------------------------------------------


def test_an_intact_chain_verifies() -> None:
    report = verify_chain(CHAIN)
    assert report.ok and report.checked == len(CHAIN) and report.head_position == len(CHAIN)
    assert report.first_bad_position is None and report.reason is None


def test_an_empty_chain_verifies() -> None:
    report = verify_chain([])
    assert report.ok and report.checked == 0 and report.head_position == 0


def test_verify_chain_detects_altered_data_at_its_position() -> None:
    records = list(CHAIN)
    records[3] = dataclasses.replace(records[3], data_json='{"n":3,"query":"forged"}')
    report = verify_chain(records)
    assert not report.ok
    assert report.first_bad_position == 4
    assert report.checked == 3 and report.head_position == 3
    assert report.reason is not None and "hash" in report.reason


def test_rehashing_an_altered_record_breaks_the_link_to_its_successor() -> None:
    records = list(CHAIN)
    forged = dataclasses.replace(records[1], data_json='{"n":1,"query":"forged"}')
    records[1] = dataclasses.replace(forged, hash=forged.computed_hash())
    report = verify_chain(records)
    assert not report.ok and report.first_bad_position == 3
    assert report.reason is not None and "prev_hash" in report.reason


def test_verify_chain_detects_an_altered_prev_hash() -> None:
    records = list(CHAIN)
    records[2] = dataclasses.replace(records[2], prev_hash="e" * 64)
    report = verify_chain(records)
    assert not report.ok and report.first_bad_position == 3
    assert report.reason is not None and "prev_hash" in report.reason


def test_verify_chain_detects_a_first_record_that_does_not_start_at_genesis() -> None:
    records = list(CHAIN)
    forged = dataclasses.replace(records[0], prev_hash="1" * 64)
    records[0] = dataclasses.replace(forged, hash=forged.computed_hash())
    report = verify_chain(records)
    assert not report.ok and report.first_bad_position == 1


def test_verify_chain_names_a_missing_position() -> None:
    records = CHAIN[:2] + CHAIN[3:]
    report = verify_chain(records)
    assert not report.ok
    assert report.first_bad_position == 3
    assert report.reason == "position 3 is missing"
    assert report.checked == 2 and report.head_position == 2


def test_verify_chain_names_a_missing_first_position() -> None:
    report = verify_chain(CHAIN[1:])
    assert not report.ok and report.first_bad_position == 1 and report.reason == "position 1 is missing"


def test_verify_chain_can_resume_from_a_verified_prefix() -> None:
    report = verify_chain(CHAIN[3:], start_position=4, start_prev_hash=CHAIN[2].hash)
    assert report.ok and report.checked == len(CHAIN) - 3 and report.head_position == len(CHAIN)
    assert not verify_chain(CHAIN[3:], start_position=4).ok


# --- canonical JSON -----------------------------------------------------------------------------------------


@given(JSON_VALUES)
def test_canonical_json_round_trips_and_is_a_fixed_point(value: Any) -> None:
    text = canonical_json(value)
    assert json.loads(text) == value
    assert canonical_json(json.loads(text)) == text


@given(JSON_OBJECTS)
def test_canonical_json_does_not_depend_on_key_order(value: dict[str, Any]) -> None:
    reversed_order = dict(reversed(list(value.items())))
    assert canonical_json(reversed_order) == canonical_json(value)


def test_canonical_json_sorts_keys_uses_no_whitespace_and_writes_real_utf8() -> None:
    assert canonical_json({"b": [1, {"d": None, "c": True}], "a": "é ✓ 日本"}) == (
        '{"a":"é ✓ 日本","b":[1,{"c":true,"d":null}]}'
    )


def test_canonical_json_refuses_nan() -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


# --- timestamps ---------------------------------------------------------------------------------------------


@given(MOMENTS)
def test_format_ts_then_parse_ts_gives_back_the_same_moment_in_utc(moment: _dt.datetime) -> None:
    text = format_ts(moment)
    assert len(text) == 27 and text.endswith("Z")
    back = parse_ts(text)
    # Compared in UTC: Python never calls an ambiguous local time (a DST fold) equal across zones.
    assert back == moment.astimezone(_dt.UTC)
    assert back.utcoffset() == _dt.timedelta(0)
    assert format_ts(back) == text


@given(MOMENTS, MOMENTS)
def test_formatted_timestamps_sort_in_time_order(a: _dt.datetime, b: _dt.datetime) -> None:
    a, b = a.astimezone(_dt.UTC), b.astimezone(_dt.UTC)
    assert (format_ts(a) < format_ts(b)) == (a < b)
    assert (format_ts(a) == format_ts(b)) == (a == b)


def test_format_ts_writes_the_one_fixed_utc_format() -> None:
    moment = _dt.datetime(2026, 1, 31, 14, 0, 0, 5, tzinfo=_dt.timezone(_dt.timedelta(hours=2)))
    assert format_ts(moment) == "2026-01-31T12:00:00.000005Z"


def test_format_ts_refuses_a_naive_datetime() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        format_ts(_dt.datetime(2026, 1, 31, 12, 0))


def test_parse_ts_accepts_any_iso_time_with_an_offset_and_converts_it_to_utc() -> None:
    expected = _dt.datetime(2026, 1, 31, 12, 0, tzinfo=_dt.UTC)
    assert parse_ts("2026-01-31T12:00:00Z") == expected
    assert parse_ts("2026-01-31T13:30:00+01:30") == expected
    assert parse_ts("2026-01-31T12:00:00.000000Z") == expected


def test_parse_ts_refuses_a_time_without_an_offset() -> None:
    with pytest.raises(ValueError, match="no UTC offset"):
        parse_ts("2026-01-31T12:00:00")
