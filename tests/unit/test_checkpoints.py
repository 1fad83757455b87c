"""Checkpoints as pure values: signing, strict parsing, when one is due, and the append-only file."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

import pytest

from ledger.audit import checkpoints
from ledger.core import signing
from ledger.core.errors import InvalidInput

T0 = _dt.datetime(2026, 5, 1, 12, 0, tzinfo=_dt.UTC)
KEY = signing.SigningKey.generate()
HASH = "ab" * 32


def signed(position: int = 10, at: _dt.datetime = T0) -> checkpoints.Checkpoint:
    return checkpoints.sign(KEY, position=position, head_hash=HASH, now=at)


def test_a_signed_checkpoint_round_trips_through_its_line_and_checks_with_the_public_key_only() -> None:
    cp = signed()
    again = checkpoints.parse_text(cp.to_line())
    public = signing.PublicKey.from_text(KEY.public.pem)
    assert again == cp and again.signed_by(public)
    assert cp.claims() == {
        "type": "compliance-ledger/checkpoint",
        "v": 1,
        "position": 10,
        "head_hash": HASH,
        "recorded_at": "2026-05-01T12:00:00.000000Z",
        "key_id": KEY.key_id,
    }


@pytest.mark.parametrize(
    ("field", "value"),
    [("position", 11), ("head_hash", "cd" * 32), ("recorded_at", "2026-05-01T12:00:01.000000Z")],
)
def test_changing_any_claim_breaks_the_signature(field: str, value: Any) -> None:
    document = signed().document()
    document["checkpoint"][field] = value
    assert not checkpoints.parse(document).signed_by(KEY.public)


@pytest.mark.parametrize(
    "position", ["1e999", "Infinity", "NaN", "-Infinity", str(2**64), "0", "-1", "true", '"10"', "10.0"]
)
def test_absurd_positions_are_refused_as_malformed_never_a_crash(position: str) -> None:
    line = signed().to_line().replace('"position":10', f'"position":{position}')
    with pytest.raises(InvalidInput, match="not a checkpoint"):
        checkpoints.parse_text(line)


@pytest.mark.parametrize(
    "text", ["", "[]", "{}", '{"alg": "HS256"}', "null", '{"alg":"Ed25519","checkpoint":[],"signature":"x"}']
)
def test_what_is_not_a_checkpoint_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput):
        checkpoints.parse_text(text)


def test_unknown_claims_are_refused() -> None:
    document = signed().document()
    document["checkpoint"]["extra"] = 1
    with pytest.raises(InvalidInput, match="unknown fields"):
        checkpoints.parse(document)


def test_nothing_to_checkpoint_in_an_empty_log() -> None:
    with pytest.raises(InvalidInput):
        checkpoints.sign(KEY, position=0, head_hash=HASH, now=T0)


EVERY = _dt.timedelta(minutes=10)


@pytest.mark.parametrize(
    ("last", "head", "minutes_later", "due"),
    [
        (None, 0, 0, False),  # nothing to sign
        (None, 1, 0, True),  # the first one
        (10, 10, 60, False),  # the head has not moved, however long ago
        (10, 9, 60, False),  # behind the last one: never signed over (verify reveals it)
        (10, 12, 1, False),  # moved a little, not long ago
        (10, 13, 1, True),  # every 3 events
        (10, 11, 10, True),  # every 10 minutes once the head moved
    ],
)
def test_a_checkpoint_is_due_every_n_events_or_m_minutes_once_the_head_moved(
    last: int | None, head: int, minutes_later: int, due: bool
) -> None:
    previous = None if last is None else signed(last)
    now = T0 + _dt.timedelta(minutes=minutes_later)
    assert checkpoints.due(previous, head, now, every_events=3, every=EVERY) is due


def test_the_checkpointer_appends_when_due_resumes_from_its_file_and_forces_one_at_shutdown(tmp_path: Path) -> None:
    state = {"head": 5, "now": T0}
    file = checkpoints.CheckpointLog(tmp_path / "cp.jsonl")

    def writer() -> checkpoints.Checkpointer:
        return checkpoints.Checkpointer(
            make=lambda: checkpoints.sign(KEY, position=state["head"], head_hash=HASH, now=state["now"]),  # type: ignore[arg-type]
            head=lambda: state["head"],  # type: ignore[arg-type,return-value]
            log=file,
            every_events=100,
            every=EVERY,
            clock=lambda: state["now"],  # type: ignore[arg-type,return-value]
        )

    first = writer()
    written = [first.run_once()]
    state["head"] = 7
    written.append(first.run_once())  # moved, but neither 100 events nor 10 minutes
    state["now"] = T0 + EVERY
    written.append(first.run_once())
    state["head"] = 8
    restarted = writer()  # a new process reads the last checkpoint back from the file
    written.append(restarted.run_once())
    written.append(restarted.run_once(force=True))

    assert [w.position if w else None for w in written] == [5, None, 7, None, 8]
    assert [json.loads(line)["checkpoint"]["position"] for line in file.path.read_text().splitlines()] == [5, 7, 8]
    assert file.latest() == written[-1]


def test_a_line_torn_by_a_crash_is_skipped_and_the_next_checkpoint_starts_on_its_own_line(tmp_path: Path) -> None:
    file = checkpoints.CheckpointLog(tmp_path / "cp.jsonl")
    assert file.latest() is None
    file.append(signed(10))
    with file.path.open("a") as fh:
        fh.write('{"alg": "Ed25')
    before = file.latest()
    file.append(signed(12))
    sources = list(checkpoints.read_sources([file.path]))

    assert before == signed(10)
    assert file.latest() == signed(12)
    assert [(s.checkpoint.position if s.checkpoint else s.problem is not None) for s in sources] == [10, True, 12]
