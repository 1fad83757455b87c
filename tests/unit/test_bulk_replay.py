"""Bulk replay (``ProjectionRunner.run``: routed by event type, folded in place) leaves exactly the states that
the per-event immutable fold (``ProjectionRunner.apply``) leaves, on random logs cut at random positions, and it
never changes a state it handed out before.

The logs are made of the real event classes, encoded and decoded by the real mapper (``ledger.mapper``), with
session events on their own and on other streams, sessions never started, old payload versions, and metadata
with and without an agent.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Hashable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.canonical import canonical_json, format_ts
from ledger.core.chain import StoredRecord
from ledger.core.events import (
    VOCABULARY,
    AnchorAttempted,
    AnchorChallengeIssued,
    AnchorLocked,
    AnchorRefused,
    AnchorUnlocked,
    ComplianceRefused,
    ComplianceStamped,
    DomainEvent,
    MemoryCurated,
    MemoryDuplicateRejected,
    MemoryOutcomeRecorded,
    MemoryRecalled,
    MemoryRemembered,
    MemorySearched,
    ParameterChecked,
    RecordedEvent,
    SessionEnded,
    SessionStarted,
    StopHookDecided,
    TaskCreated,
    TaskTransitioned,
    TaskTransitionRefused,
    TurnStarted,
)
from ledger.core.mapper import decode, decode_row, encode, encode_meta
from projections import codec
from projections.runner import (
    ACTIVE_TIME,
    ALL,
    COMPLIANCE,
    ENFORCEMENT,
    MEMORY,
    SESSIONS,
    TRAFFIC,
    ProjectionRunner,
    run_together,
)

T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)
SESSIONS_IDS = ("s0", "s1", "s2")
AGENTS = ("alice", "bob", "carol", None)  # None: metadata without an agent
BLOCKS = ("b0", "b1", "b2", "b3", "b4")
REQUESTS = (None, None, "r1", "r2")
CHALLENGES = ("ach_" + "a" * 22, "ach_" + "b" * 22)
FAST = settings(max_examples=150, deadline=None)

States = dict[str, dict[Hashable, Any]]

# The session's own events are drawn more often, so searches, stamps and cuts meet in one session.
KINDS = (
    *("start", "search", "stamp") * 4,
    "end",
    "recall",
    "stamp_v1",
    "refuse",
    "anchor",
    "challenge",
    "lock",
    "anchor_refused",
    "unlock",
    "remember",
    "duplicate",
    "curate",
    "outcome",
    "transition",
    "transition_refused",
    "check",
    "task_created",
    "turn",
    "stop",
)

# One drawn step: what happens, in which session, by which agent, on which stream, and a few free choices.
steps = st.lists(
    st.tuples(
        st.sampled_from(KINDS),
        st.integers(0, len(SESSIONS_IDS) - 1),
        st.sampled_from(AGENTS),
        st.integers(0, 9),  # stream: 0-7 the event's own stream, 8 a session stream, 9 the memory stream
        st.booleans(),
        st.integers(0, 3),
        st.lists(st.sampled_from(BLOCKS), max_size=4),
        st.integers(0, 3),  # seconds to the next event (0: same moment, as events appended together)
    ),
    max_size=60,
)


def _event(kind: str, sid: str, flag: bool, n: int, blocks: list[str], last_search: dict[str, int]) -> DomainEvent:
    """A real event of ``kind`` (``flag`` and ``n`` vary its fields)."""
    query = None if n == 0 else f"q{n}"
    match kind:
        case "start":
            return SessionStarted(
                session_id=sid, agent="alice", role="dev", focus=query, files=n, context_files=blocks[:2]
            )
        case "end":
            return SessionEnded(session_id=sid)
        case "search":
            expires = T0 + _dt.timedelta(minutes=n) if flag else None
            return MemorySearched(
                session_id=sid,
                query=query or "",
                limit=5,
                result_ids=blocks,
                count=len(blocks),
                token_expires_at=expires,
            )
        case "recall":
            return MemoryRecalled(
                session_id=sid if flag else None,
                query=query,
                frame="task",
                top_k=3,
                block_ids=blocks,
                guaranteed_ids=blocks[:1],
                tokens=10,
                active_hours=1.5,
            )
        case "stamp" | "stamp_v1":
            # Usually the session's latest search, so the token is consumed; sometimes another position.
            position = last_search.get(sid, 0) if n else 1
            request = None if kind == "stamp_v1" else REQUESTS[n]
            return ComplianceStamped(
                session_id=sid, search_position=position, count=len(blocks), stamp="ok", request_id=request
            )
        case "refuse":
            return ComplianceRefused(session_id=sid, reason="no_search", message="search first", request_id=REQUESTS[n])
        case "anchor":
            return AnchorAttempted(
                session_id=sid,
                role="dev",
                tier="default",
                attempt=n,
                first_in_session=flag,
                validated=n % 2 == 0,
                errors=[],
                warnings=[],
                proof_candidate="p",
                canonical_proof="p",
                challenge_id=CHALLENGES[n % len(CHALLENGES)] if flag else None,
            )
        case "challenge":
            return AnchorChallengeIssued(
                session_id=sid,
                challenge_id=CHALLENGES[n % len(CHALLENGES)],
                path="src/app.py",
                line=n + 1,
                line_digest="d" * 64,
                expires_at=T0 + _dt.timedelta(minutes=n),
            )
        case "lock":
            return AnchorLocked(session_id=sid, failed_attempts=n)
        case "anchor_refused":
            return AnchorRefused(session_id=sid)
        case "unlock":
            return AnchorUnlocked(session_id=sid, reason="reviewed")
        case "remember":
            block = blocks[0] if blocks else "b0"
            tags = ["constitutional"] if flag else [f"t{n}"]
            return MemoryRemembered(block_id=block, content=f"fact {block}", tags=tags, session_id=sid)
        case "duplicate":
            return MemoryDuplicateRejected(block_id=blocks[0] if blocks else "b1")
        case "curate":
            pruned = [(blocks[0], blocks[1])] if len(blocks) > 1 else []
            return MemoryCurated(
                trigger="auto" if flag else "manual",
                active_hours=float(n),
                archived=blocks[:1],
                edges_pruned=pruned,
                constitutional_reinforced=blocks[1:2],
                reinforced=blocks[2:],
            )
        case "outcome":
            return MemoryOutcomeRecorded(block_ids=blocks, signal=n / 3)
        case "transition":
            return TaskTransitioned(
                task_id="t1",
                from_status="todo",
                to_status="doing",
                acting_role="dev",
                rule="start",
                role_before="dev",
                role_after="dev",
            )
        case "transition_refused":
            return TaskTransitionRefused(
                task_id="t1",
                from_status="todo",
                to_status="done",
                acting_role="dev",
                codes=[f"c{n}", "c0"][: 1 + flag],
                reasons=["no"],
            )
        case "check":
            return ParameterChecked(
                tool="manage_task",
                action=f"a{n % 2}",
                base_level="soft",
                level="soft",
                outcome="ok" if flag else "warn",
                passed=flag,
                allowed=True,
            )
        case "task_created":
            return TaskCreated(task_id="t1", task_type="feature", title="x", status="todo", role="dev")
        case "turn":
            return TurnStarted(client="claude-code", client_session=sid if flag else None)
        case "stop":
            outcome = ("blocked", "allowed", "loop_guard", "blocked")[n]
            return StopHookDecided(client="claude-code", outcome=outcome, stop_hook_active=flag)
    raise AssertionError(kind)


def _own_stream(event: DomainEvent, sid: str) -> str:
    if isinstance(event, MemoryRemembered | MemoryDuplicateRejected):
        return f"block:{event.block_id}"
    if isinstance(event, MemoryCurated | MemoryOutcomeRecorded):
        return "memory"
    if isinstance(event, TaskTransitioned | TaskTransitionRefused | TaskCreated):
        return "task:t1"
    if isinstance(event, ParameterChecked):
        return "enforcement:alice"
    if isinstance(event, TurnStarted | StopHookDecided):
        return "turns:alice:-"
    if isinstance(event, MemoryRecalled) and event.session_id is None:
        return "memory"
    return f"session:{sid}"


def build_log(drawn: list[tuple[Any, ...]]) -> list[RecordedEvent]:
    """Turn drawn steps into stored records (as the store writes them) and decode them with the mapper."""
    versions: dict[str, int] = {}
    last_search: dict[str, int] = {}
    moment = T0
    log: list[RecordedEvent] = []
    for position, (kind, s, agent, where, flag, n, blocks, gap) in enumerate(drawn, 1):
        sid = SESSIONS_IDS[s]
        event = _event(kind, sid, flag, n, blocks, last_search)
        stream = _own_stream(event, sid) if where < 8 else (f"session:{sid}" if where == 8 else "memory")
        if isinstance(event, MemorySearched | MemoryRecalled) and stream.startswith("session:"):
            last_search[stream.removeprefix("session:")] = position
        type_name, schema_version, data_json = encode(event)
        if kind == "stamp_v1":  # stored before request ids existed: read back through the upcaster
            schema_version = 1
            data_json = canonical_json({k: v for k, v in event.model_dump(mode="json").items() if k != "request_id"})
        versions[stream] = versions.get(stream, 0) + 1
        meta = {"source": "mcp"} if agent is None else {"agent": agent, "source": "mcp", "session_id": sid}
        record = StoredRecord(
            position=position,
            stream=stream,
            version=versions[stream],
            type=type_name,
            schema_version=schema_version,
            data_json=data_json,
            meta_json=encode_meta(meta),
            recorded_at=format_ts(moment),
            prev_hash="0" * 64,
            hash=f"{position:064x}",
        )
        rec = decode(record)
        assert rec == decode_row(
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
        log.append(rec)
        moment += _dt.timedelta(seconds=gap)
    return log


def reference(log: list[RecordedEvent], projections: Any = ALL) -> list[tuple[States, Any]]:
    """The immutable fold's states (and last moment) after each prefix of ``log``: index = position."""
    runner = ProjectionRunner(projections)
    out = [(runner.snapshot(), runner.last_recorded_at)]
    for rec in log:
        runner.apply(rec)
        out.append((runner.snapshot(), runner.last_recorded_at))
    return out


def cuts_of(log: list[RecordedEvent], drawn: list[int]) -> list[int]:
    return sorted({min(c, len(log)) for c in drawn} | {len(log)})


@FAST
@given(steps, st.lists(st.integers(0, 60), max_size=5))
def test_bulk_replay_in_pieces_equals_the_immutable_fold_at_every_cut(
    drawn: list[tuple[Any, ...]], cut_draws: list[int]
) -> None:
    log = build_log(drawn)
    expected = reference(log)
    runner = ProjectionRunner(ALL)
    handed_out: list[tuple[int, States]] = []
    done = 0
    for cut in cuts_of(log, cut_draws):
        assert runner.run(log[done:cut]) == cut - done
        done = cut
        states, last = expected[cut]
        assert runner.position == cut
        assert runner.snapshot() == states
        assert runner.last_recorded_at == last
        handed_out.append((cut, runner.snapshot()))
    # What a run handed out is never changed by a later run (bulk replay owns copies, not the states it found).
    for cut, states in handed_out:
        assert states == expected[cut][0]


@FAST
@given(steps, st.integers(0, 60), st.integers(0, 60))
def test_bulk_replay_continues_a_runner_fed_event_by_event_or_restored_from_a_snapshot(
    drawn: list[tuple[Any, ...]], first: int, second: int
) -> None:
    log = build_log(drawn)
    expected = reference(log)
    a, b = sorted((min(first, len(log)), min(second, len(log))))
    runner = ProjectionRunner(ALL)
    for rec in log[:a]:
        runner.apply(rec)
    before = runner.snapshot()
    runner.run(log)  # events up to ``a`` are skipped: already applied
    assert runner.snapshot() == expected[len(log)][0]
    assert before == expected[a][0]

    partial = ProjectionRunner(ALL)
    partial.run(log[:b])
    restored = ProjectionRunner(ALL)
    restored.restore(codec.loads(codec.dumps(partial.dump())))
    restored.run(log[b:])
    partial.run(log[b:])
    assert restored.snapshot() == partial.snapshot() == expected[len(log)][0]
    assert restored.position == partial.position == len(log)


@FAST
@given(steps)
def test_several_runners_fed_together_equal_each_ones_immutable_fold(drawn: list[tuple[Any, ...]]) -> None:
    log = build_log(drawn)
    sets = [[COMPLIANCE], [MEMORY, ACTIVE_TIME], [TRAFFIC], [SESSIONS, ENFORCEMENT]]
    runners = [ProjectionRunner(s) for s in sets]
    seen: list[int] = []
    assert run_together(runners, iter(log), seen.append) == len(log)
    assert seen[-1] == len(log)
    for projections, runner in zip(sets, runners, strict=True):
        assert runner.snapshot() == reference(log, projections)[-1][0], runner.name


def test_the_vocabularys_event_classes_are_leaves() -> None:
    # The folds and bulk replay's routes match events on their exact type (``type(e) is``), which equals
    # ``isinstance`` only while no event class derives from another.
    for cls in VOCABULARY:
        assert cls.__subclasses__() == [], cls.__name__
