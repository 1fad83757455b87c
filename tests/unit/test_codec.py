"""The snapshot codec: every state type round-trips, large tables go one entry per line, and a payload it did
not write is a CodecError, never a crash or a half-built state."""

from __future__ import annotations

import datetime as _dt

import pytest

from projections import codec
from projections.compliance import AgentCompliance
from projections.decay import Tier
from projections.memory import BlockView, EdgeView
from projections.sessions import SessionView, Token

T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)


def block(i: int) -> BlockView:
    return BlockView(
        block_id=f"blk_{i:04d}",
        tags=("build", f"t{i % 7}"),
        category="fact",
        tier=Tier.STANDARD,
        lam=0.01,
        created_at=T0,
        created_by=None if i % 2 else "alice",
        last_reinforced_at=T0 + _dt.timedelta(minutes=i),
        archived_at=None if i % 3 else T0,
    )


def state(blocks: int) -> dict[str, object]:
    session = SessionView(
        session_id="s",
        agent="a",
        role="dev",
        working_dir=None,
        focus=None,
        started_at=T0,
        token=Token(3, T0, "q", 2, ("x", "y"), None, consumed_position=4),
        answers={"req-1": 4},
    )
    return {
        "position": 7,
        "last_recorded_at": T0,
        "states": {"sessions": {"s": session}, "compliance": {"a": AgentCompliance("a", refusal_codes=(("x", 1),))}},
        "aggregates": {
            "memory": {
                "blocks": {f"blk_{i:04d}": block(i) for i in range(blocks)},
                "edges": {("blk_0000", "blk_0001"): EdgeView("blk_0000", "blk_0001", 2, T0, T0)},
                "agents": frozenset({"a", "b"}),
            }
        },
    }


@pytest.mark.parametrize("blocks", [3, codec.SPILL_AT + 1, 3 * codec.SPILL_AT])
def test_states_round_trip_small_and_spilled(blocks: int) -> None:
    value = state(blocks)
    payload = codec.dumps(value)
    assert codec.loads(payload) == value
    lines = payload.count(b"\n") + 1
    assert lines == (1 + blocks if blocks > codec.SPILL_AT else 1)  # a large table: one line per entry


@pytest.mark.parametrize(
    "mangle",
    [
        lambda p: p + b'\n["extra", 1]',  # more lines than the tables
        lambda p: p.rsplit(b"\n", 1)[0],  # a table entry missing
        lambda p: p.replace(b'{"@":0}', b'{"@":5}', 1),  # a table it does not hold
        lambda p: p.replace(b'"o":["BlockView"', b'"o":["Popen"', 1),  # a class it does not know
        lambda p: b"not json",
        lambda p: b"",
    ],
)
def test_a_payload_it_did_not_write_is_a_codec_error(mangle: object) -> None:
    payload = codec.dumps(state(codec.SPILL_AT + 5))
    with pytest.raises(codec.CodecError):
        codec.loads(mangle(payload))  # type: ignore[operator]


def test_an_unregistered_type_is_refused_when_writing() -> None:
    with pytest.raises(codec.CodecError, match="register it"):
        codec.dumps({"x": object()})
