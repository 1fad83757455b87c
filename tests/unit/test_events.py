"""The event vocabulary through the one mapper: every type round-trips, old payloads are upcast on read."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from ledger.core import events as ev
from ledger.core.canonical import canonical_json, format_ts
from ledger.core.chain import GENESIS_HASH, StoredRecord, record_hash
from ledger.core.errors import InvalidInput
from ledger.core.mapper import decode, encode, encode_meta

RECORDED_AT = _dt.datetime(2026, 3, 2, 9, 0, 0, 123456, tzinfo=_dt.UTC)
META = {"agent": "alice", "source": "mcp", "session_id": "ses_" + "ab" * 10, "correlation_id": "c-1"}

SAMPLES: list[ev.DomainEvent] = [
    ev.LedgerInitialised(receipt_key_id="0123456789abcdef"),
    ev.SigningKeyBound(key_id="0123456789abcdef", public_key="A" * 43),
    ev.RowKeyBound(key_id="0123456789abcdef", vouched_through=0),
    ev.SettingsApplied(
        digest="a" * 64,
        values={"require_anchor": True, "workflow_file": {"sha256": "b" * 64, "text": "statuses: [ready]\n"}},
        sources={"workflow_file": "/etc/ledger/workflow.yaml"},
        node="node-1",
    ),
    ev.ApiKeyIssued(key_id="key_0123456789", agent="alice", key_sha256="a" * 64),
    ev.SessionStarted(session_id="ses_1", agent="alice", role="dev", working_dir="/srv/app", focus="the gate"),
    ev.SessionStarted(session_id="ses_2", agent="bob", role="reviewer"),
    ev.SessionEnded(session_id="ses_1"),
    ev.SessionEnded(session_id="ses_1", reason="lockout"),
    ev.MemoryRemembered(
        block_id="blk_1", content="Ünïcode ✓ memory\nwith lines", tags=["project/db", "x"], session_id="ses_1"
    ),
    ev.MemoryRemembered(block_id="blk_2", content="no tags, no session", tags=[]),
    ev.MemoryRemembered(block_id="blk_5", content="a thought", tags=["brain/thought"], context="reviewing the gate"),
    ev.MemoryRemembered(block_id="blk_3", content="saw the build fail", tags=["ci"], category="observation"),
    ev.MemoryRecalled(
        session_id="ses_1",
        query="database schema",
        frame="self",
        top_k=5,
        block_ids=["blk_1", "blk_2"],
        guaranteed_ids=["blk_1"],
        tokens=120,
        active_hours=12.5,
        token_expires_at=_dt.datetime(2026, 3, 2, 9, 30, tzinfo=_dt.UTC),
    ),
    ev.MemoryRecalled(
        session_id=None,
        query=None,
        frame="attention",
        top_k=3,
        block_ids=[],
        guaranteed_ids=[],
        tokens=6,
        active_hours=0.0,
    ),
    ev.MemoryCurated(
        trigger="auto",
        active_hours=40.25,
        archived=["blk_2"],
        edges_pruned=[("blk_1", "blk_3")],
        constitutional_reinforced=["blk_1"],
        reinforced=["blk_1", "blk_3"],
    ),
    ev.MemoryOutcomeRecorded(block_ids=["blk_1", "blk_3"], signal=0.15, session_id="ses_1", note="it misled me"),
    ev.MemorySuperseded(block_id="blk_1", by_block_id="blk_4", session_id="ses_1"),
    ev.MemoryForgotten(block_id="blk_3", reason="personal data: erasure request"),
    ev.MemoryErased(block_id="blk_3", reason="erasure request #12", key_ids=["0f" * 16], plaintext_in_log=False),
    ev.LedgerCarried(
        origin="compliance-ledger/" + "ab" * 16,
        checkpoint="compliance-ledger/" + "ab" * 16 + "\n7\nAAAA\n\n\u2014 compliance-ledger/ab sig\n",
        vkey="compliance-ledger/ab+12345678+AQID",
        head_position=7,
        head_hash="cd" * 32,
        blocks_carried=3,
        blocks_archived=1,
        blocks_left_out=2,
        left_out={"without": ["blk_3"], "erased": ["blk_4"], "forgotten": [], "present": []},
    ),
    ev.SessionErased(session_id="ses_1", reason="erasure request #12", key_ids=["1e" * 16], plaintext_events=2),
    ev.MemoryArchived(block_id="blk_2", reason="amended: folded into Economy"),
    ev.MemoryRestored(block_id="blk_2", reason="init --force: the constitution regenerated"),
    ev.MemoryLinked(block_id="blk_1", candidate_id="blk_4", similarity=0.93, method="cosine", session_id="ses_1"),
    ev.ContradictionFlagged(block_id="blk_5", contradicts="blk_1", similarity=0.89, method="words"),
    ev.TaskCreated(task_id="t-1", task_type="task", title="Ünïcode task", status="ready", role="dev", dna={"a": [1]}),
    ev.TaskDnaUpdated(task_id="t-1", set={"memory_query_session": "ses_1", "n": 1.5}, removed=["a"]),
    ev.TaskTransitioned(
        task_id="t-1",
        from_status="ready",
        to_status="active",
        acting_role="dev",
        rule="ready->active:dev",
        role_before="dev",
        role_after="dev",
        cleared_dna=[],
        evidence={"memory_query_session": 12},
    ),
    ev.ParameterChecked(
        tool="manage_task",
        action="complete",
        base_level="strict",
        level="strict",
        outcome="blocked",
        passed=False,
        allowed=False,
        missing=["completion_summary"],
        invalid={"files_created": "files_created: '../x' climbs out of the project"},
        task_id="t-1",
        session_id="ses_1",
    ),
    ev.TaskWorkRecorded(
        task_id="t-1", tool="manage_task", action="update", params={"work_notes": "Wrote the parser.", "n": [1]}
    ),
    ev.TurnStarted(client="claude-code", client_session="abc123"),
    ev.TurnStarted(client="claude-code", input_problem="stdin is not JSON"),
    *[
        ev.StopHookDecided(
            client="claude-code", client_session="abc123", outcome=o, turn_position=3, stop_hook_active=a
        )
        for o, a in (("blocked", False), ("allowed", True), ("loop_guard", True))
    ],
    ev.TaskTransitionRefused(
        task_id="t-1",
        from_status="active",
        to_status="review",
        acting_role="dev",
        codes=["dna_missing"],
        reasons=["DNA field memory_contribution_id is required"],
    ),
    ev.MemoryDuplicateRejected(block_id="blk_1", session_id="ses_1"),
    ev.MemorySearched(
        session_id="ses_1",
        query="database schema",
        limit=10,
        result_ids=["blk_1", "blk_2"],
        count=2,
        token_expires_at=_dt.datetime(2026, 3, 2, 9, 30, tzinfo=_dt.UTC),
    ),
    ev.MemorySearched(session_id="ses_1", query="nothing", limit=1, result_ids=[], count=0),
    ev.ComplianceStamped(session_id="ses_1", search_position=12, count=2, stamp="[COMPLIANCE] YES ..."),
    *[
        ev.ComplianceRefused(session_id="ses_1", reason=r, message="⛔ GATE CLOSED.")
        for r in ("no_search", "token_consumed", "token_expired", "anchor_required", "anchor_locked")
    ],
    ev.SessionStarted(
        session_id="ses_3",
        agent="carol",
        role="dev",
        working_dir="/srv/app",
        branch="main",
        files=3,
        phase="B1",
        context_files=["/srv/app/PROJECT-CONTEXT.oct.md"],
    ),
    ev.AnchorAttempted(
        session_id="ses_3",
        role="dev",
        tier="default",
        attempt=2,
        first_in_session=False,
        validated=False,
        errors=["TIER_DEFAULT requires 2 tensions, found 1"],
        warnings=[],
        proof_candidate="===…===",
        canonical_proof="",
        branch="main",
        phase="B1",
        files=3,
        challenge_id="ach_" + "a" * 22,
    ),
    ev.AnchorChallengeIssued(
        session_id="ses_3",
        challenge_id="ach_" + "a" * 22,
        path="src/app.py",
        line=17,
        line_digest="c" * 64,
        expires_at=_dt.datetime(2026, 3, 2, 9, 40, tzinfo=_dt.UTC),
    ),
    ev.AnchorLocked(session_id="ses_3", failed_attempts=3),
    ev.AnchorRefused(session_id="ses_3"),
    ev.AnchorUnlocked(session_id="ses_3", reason="reviewed with the agent"),
    ev.ApiKeyIssued(key_id="key_abcdef0123", agent="boss", key_sha256="b" * 64, role="admin"),
    ev.ApiKeyRevoked(key_id="key_abcdef0123", reason="rotated", replaced_by="key_0123456789"),
]


def store_record(type_name: str, schema_version: int, data_json: str, position: int = 7) -> StoredRecord:
    """A record as the store would hold it (valid hash), from already-encoded payload text."""
    fields: dict[str, Any] = dict(
        position=position,
        stream="session:ses_1",
        version=3,
        type=type_name,
        schema_version=schema_version,
        data_json=data_json,
        meta_json=encode_meta(META),
        recorded_at=format_ts(RECORDED_AT),
        prev_hash=GENESIS_HASH,
    )
    return StoredRecord(**fields, hash=record_hash(**fields))


def round_trip(event: ev.DomainEvent) -> ev.RecordedEvent:
    type_name, schema_version, data_json = encode(event)
    return decode(store_record(type_name, schema_version, data_json))


def test_the_samples_cover_every_event_type_in_the_vocabulary() -> None:
    assert {type(e).type_name for e in SAMPLES} == set(ev.EVENT_TYPES)
    assert len(ev.EVENT_TYPES) == len(ev.VOCABULARY)


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).type_name)
def test_every_event_type_round_trips_through_the_mapper(event: ev.DomainEvent) -> None:
    recorded = round_trip(event)
    assert recorded.event == event
    assert type(recorded.event) is type(event)
    assert recorded.position == 7 and recorded.stream == "session:ses_1" and recorded.version == 3
    assert recorded.recorded_at == RECORDED_AT
    assert dict(recorded.meta) == META
    assert recorded.agent == "alice"


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).type_name)
def test_the_mapper_stores_the_stable_type_name_current_version_and_canonical_json(
    event: ev.DomainEvent,
) -> None:
    type_name, schema_version, data_json = encode(event)
    assert type_name == type(event).type_name
    assert "." not in type_name  # a stable name, never a module path
    assert schema_version == type(event).schema_version
    assert data_json == canonical_json(json.loads(data_json))


def test_event_timestamps_are_stored_in_the_one_fixed_utc_format() -> None:
    moment = _dt.datetime(2026, 3, 2, 11, 30, tzinfo=_dt.timezone(_dt.timedelta(hours=2)))
    searched = ev.MemorySearched(session_id="s", query="q", limit=1, result_ids=[], count=0, token_expires_at=moment)
    _, _, data_json = encode(searched)
    assert json.loads(data_json)["token_expires_at"] == "2026-03-02T09:30:00.000000Z"
    assert round_trip(searched).event == searched


def test_events_are_frozen_and_refuse_unknown_fields() -> None:
    ended = ev.SessionEnded(session_id="ses_1")
    with pytest.raises(ValidationError):
        ended.reason = "changed"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        ev.SessionEnded(session_id="ses_1", extra="x")  # type: ignore[call-arg]


def test_event_timestamps_must_carry_an_offset() -> None:
    with pytest.raises(ValidationError, match="UTC offset"):
        ev.MemorySearched(
            session_id="s",
            query="q",
            limit=1,
            result_ids=[],
            count=0,
            token_expires_at=_dt.datetime(2026, 3, 2, 9, 30),
        )


# Any storable Unicode: every character with a UTF-8 form except NUL, which the encoder refuses (issue 10, hole 4).
STORABLE = st.characters(codec="utf-8", exclude_characters="\x00")


@given(
    content=st.text(STORABLE, min_size=1),
    tags=st.lists(st.text(STORABLE, min_size=1), max_size=5),
)
def test_remembered_content_and_tags_of_any_unicode_round_trip(content: str, tags: list[str]) -> None:
    event = ev.MemoryRemembered(block_id="blk_x", content=content, tags=tags)
    assert round_trip(event).event == event


# --- upcasting ----------------------------------------------------------------------------------------------


def test_a_stored_v1_memory_remembered_payload_is_read_back_at_the_current_version_with_a_tag_list() -> None:
    v1 = canonical_json({"block_id": "blk_old", "content": "an old memory", "tags": "a, b", "session_id": None})
    recorded = decode(store_record("MemoryRemembered", 1, v1))
    assert recorded.event == ev.MemoryRemembered(
        block_id="blk_old", content="an old memory", tags=["a", "b"], category="knowledge"
    )
    assert type(recorded.event).schema_version == 4


def test_a_stored_v2_memory_remembered_payload_is_read_back_as_v3_in_the_knowledge_category() -> None:
    v2 = canonical_json({"block_id": "blk_v2", "content": "a v2 memory", "tags": ["x"], "session_id": None})
    recorded = decode(store_record("MemoryRemembered", 2, v2))
    assert recorded.event == ev.MemoryRemembered(block_id="blk_v2", content="a v2 memory", tags=["x"])
    assert isinstance(recorded.event, ev.MemoryRemembered) and recorded.event.category == "knowledge"


def test_a_stored_v3_memory_remembered_payload_is_read_back_as_v4_without_provenance() -> None:
    v3 = canonical_json(
        {"block_id": "blk_v3", "content": "a v3 memory", "tags": ["x"], "category": "decision", "session_id": None}
    )
    recorded = decode(store_record("MemoryRemembered", 3, v3))
    assert recorded.event == ev.MemoryRemembered(
        block_id="blk_v3", content="a v3 memory", tags=["x"], category="decision", context=None
    )
    assert type(recorded.event).schema_version == 4


@pytest.mark.parametrize(
    ("stored_tags", "tags"),
    [("a, b", ["a", "b"]), ("solo", ["solo"]), ("", []), (" , x ,, ", ["x"]), (None, [])],
)
def test_the_v1_to_v2_upcaster_splits_comma_separated_tags(stored_tags: str | None, tags: list[str]) -> None:
    data: dict[str, Any] = {"block_id": "blk_old", "content": "c"}
    if stored_tags is not None:
        data["tags"] = stored_tags
    event = ev.from_payload("MemoryRemembered", 1, data)
    assert isinstance(event, ev.MemoryRemembered) and event.tags == tags


def test_a_current_payload_is_not_upcast_again() -> None:
    event = ev.from_payload("MemoryRemembered", 2, {"block_id": "b", "content": "c", "tags": ["a, b"]})
    assert isinstance(event, ev.MemoryRemembered) and event.tags == ["a, b"]


@pytest.mark.parametrize(("admin", "role"), [(True, "admin"), (False, "agent"), (None, "agent")])
def test_a_stored_v1_api_key_payload_with_an_admin_flag_is_read_back_with_a_role(admin: bool | None, role: str) -> None:
    data: dict[str, Any] = {"key_id": "key_abcdef0123", "agent": "boss", "key_sha256": "b" * 64}
    if admin is not None:
        data["admin"] = admin
    recorded = decode(store_record("ApiKeyIssued", 1, canonical_json(data)))
    assert recorded.event == ev.ApiKeyIssued(key_id="key_abcdef0123", agent="boss", key_sha256="b" * 64, role=role)
    assert type(recorded.event).schema_version == 2


def test_a_stored_v1_anchor_attempt_is_read_back_as_v2_answering_no_challenge() -> None:
    v1 = {
        "session_id": "ses_old",
        "role": "dev",
        "tier": "quick",
        "attempt": 1,
        "first_in_session": True,
        "validated": True,
        "errors": [],
        "warnings": [],
        "proof_candidate": "===…===",
        "canonical_proof": "===…===",
        "branch": "main",
        "phase": "B1",
        "files": 2,
    }
    recorded = decode(store_record("AnchorAttempted", 1, canonical_json(v1)))
    assert recorded.event == ev.AnchorAttempted(**v1, challenge_id=None)
    assert type(recorded.event).schema_version == 2


def test_a_stored_v1_recall_is_read_back_as_v2_counting_every_block_shown() -> None:
    v1 = {
        "session_id": "ses_old",
        "query": "retries",
        "frame": "attention",
        "top_k": 2,
        "block_ids": ["b1", "b2"],
        "guaranteed_ids": [],
        "tokens": 40,
        "active_hours": 1.5,
        "token_expires_at": None,
    }
    recorded = decode(store_record("MemoryRecalled", 1, canonical_json(v1)))
    assert recorded.event == ev.MemoryRecalled(**v1, relevant_ids=None)
    assert type(recorded.event).schema_version == 2


def test_every_old_version_of_every_type_has_an_upcaster_to_the_next() -> None:
    for name, cls in ev.EVENT_TYPES.items():
        for version in range(1, cls.schema_version):
            assert (name, version) in ev.UPCASTERS, f"{name} v{version} has no upcaster"


def test_an_unknown_event_type_raises_unknown_event_type() -> None:
    with pytest.raises(ev.UnknownEventType, match="unknown event type 'TeleportHappened'"):
        decode(store_record("TeleportHappened", 1, "{}"))
    with pytest.raises(ev.UnknownEventType):
        ev.from_payload("ledger.core.events.SessionEnded", 1, {"session_id": "s"})


def test_a_payload_newer_than_this_code_raises_unknown_event_type() -> None:
    data = canonical_json({"block_id": "b", "content": "c", "tags": ["a"]})
    with pytest.raises(ev.UnknownEventType, match="newer than this code"):
        decode(store_record("MemoryRemembered", 5, data))
    with pytest.raises(ev.UnknownEventType, match="newer than this code"):
        ev.from_payload("SessionEnded", 2, {"session_id": "s"})


# --- text that cannot be stored -----------------------------------------------------------------------------


def test_a_payload_with_a_lone_surrogate_is_refused_as_invalid_input_before_it_reaches_the_chain() -> None:
    event = ev.SessionStarted(session_id="ses_1", agent="alice", role="dev", focus="half a pair \ud800")
    with pytest.raises(InvalidInput) as caught:
        encode(event)
    assert "\ud800" not in caught.value.message  # the message itself must stay renderable
    assert caught.value.hint


def test_metadata_with_a_lone_surrogate_is_refused_as_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        encode_meta({"agent": "\udfff"})
