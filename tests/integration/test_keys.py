"""API keys: roles, revocation seen across processes, an auditor that changes nothing, and agent keys that read only
their own. The rules are the key handlers': ``ledger`` is on the in-memory store; a v1 row written into the table
and a second process on the same database need a real one (``sql_ledger``, ``db_url``: SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ledger.core.canonical import canonical_json, format_ts
from ledger.core.chain import StoredRecord, record_hash
from ledger.core.errors import Conflict, Forbidden, InvalidInput, LedgerError, NotFound, Unauthorized
from ledger.memory import decisions as memory
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.store_support import insert_as_ledger

OPERATOR = Actor("operator", "cli", admin=True)
ALICE = Actor("alice", "rest", role="agent", by_key=True)
BOB = Actor("bob", "rest", role="agent", by_key=True)
AUDITOR = Actor("carol", "rest", role="auditor", by_key=True)


@pytest.fixture
def ledger(memory_ledger: Ledger) -> Ledger:
    return memory_ledger


@pytest.fixture
def sql_ledger(make_ledger: LedgerFactory, db_url: str) -> Ledger:
    return make_ledger(db_url)


def test_a_key_stored_as_a_v1_admin_flag_is_read_back_as_an_admin_role(sql_ledger: Ledger) -> None:
    ledger = sql_ledger
    from ledger.keys.decisions import digest

    position, prev_hash = ledger.store.head()
    plaintext = "clk_legacy-admin-key"
    fields: dict[str, Any] = dict(
        position=position + 1,
        stream="apikeys",
        version=1,
        type="ApiKeyIssued",
        schema_version=1,
        data_json=canonical_json(
            {"key_id": "key_0123456789", "agent": "boss", "key_sha256": digest(plaintext), "admin": True}
        ),
        meta_json=canonical_json({"agent": "operator", "source": "cli", "admin": True}),
        recorded_at=format_ts(ledger.clock()),
        prev_hash=prev_hash,
    )
    insert_as_ledger(ledger.store, StoredRecord(**fields, hash=record_hash(**fields)))  # as a v1 ledger wrote it

    key = ledger.identify(plaintext)
    [listed] = ledger.api_key_list(OPERATOR)
    assert ledger.store.verify().ok
    assert key is not None and (key.agent, key.role) == ("boss", "admin")
    assert (listed.key_id, listed.role, listed.issued_by) == ("key_0123456789", "admin", "operator")


def test_a_key_revoked_by_another_process_is_refused_on_the_next_request(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    node_a, node_b = make_ledger(db_url), make_ledger(db_url)
    created = node_a.issue_api_key(OPERATOR, "alice")
    seen_before = node_b.identify(created.api_key)  # node B has the key in its cached ring now

    node_a.revoke_api_key(OPERATOR, created.key_id, "laptop stolen")

    assert seen_before is not None and seen_before.agent == "alice"
    with pytest.raises(Unauthorized, match="revoked"):
        node_b.identify(created.api_key)
    [listed] = node_b.api_key_list(OPERATOR)
    assert (listed.revoked_by, listed.reason) == ("operator", "laptop stolen")


def test_revoking_every_key_keeps_authentication_on(ledger: Ledger) -> None:
    created = ledger.issue_api_key(OPERATOR, "alice")
    ledger.revoke_api_key(OPERATOR, created.key_id)
    with pytest.raises(Unauthorized, match="requires an API key"):
        ledger.identify(None)


def test_rotate_issues_a_new_key_for_the_same_agent_and_role_and_revokes_the_old_in_one_append(
    ledger: Ledger,
) -> None:
    old = ledger.issue_api_key(OPERATOR, "dash", role="auditor")
    head = ledger.store.head()[0]

    new = ledger.rotate_api_key(OPERATOR, old.key_id)

    records = list(ledger.store.iter_events(head))
    assert [r.event.type_name for r in records] == ["ApiKeyIssued", "ApiKeyRevoked"]
    assert records[0].recorded_at == records[1].recorded_at and records[0].meta == records[1].meta
    assert (new.agent, new.role, new.replaces) == ("dash", "auditor", old.key_id)
    with pytest.raises(Unauthorized, match="revoked"):
        ledger.identify(old.api_key)
    now = ledger.identify(new.api_key)
    assert now is not None and (now.key_id, now.role) == (new.key_id, "auditor")


@pytest.mark.parametrize(
    ("command", "error"),
    [
        (lambda ledger: ledger.revoke_api_key(OPERATOR, "key_0000000000"), NotFound),
        (lambda ledger: ledger.rotate_api_key(OPERATOR, "key_0000000000"), NotFound),
        (lambda ledger: ledger.revoke_api_key(OPERATOR, "alice"), InvalidInput),
        (lambda ledger: ledger.revoke_api_key(OPERATOR, ledger.api_key_list(OPERATOR)[1].key_id), Conflict),
        (lambda ledger: ledger.rotate_api_key(OPERATOR, ledger.api_key_list(OPERATOR)[1].key_id), Conflict),
        (lambda ledger: ledger.revoke_api_key(ALICE, ledger.api_key_list(OPERATOR)[0].key_id), Forbidden),
        (lambda ledger: ledger.issue_api_key(ALICE, "mallory", role="admin"), Forbidden),
        (lambda ledger: ledger.issue_api_key(OPERATOR, "mallory", role="root"), InvalidInput),
    ],
    ids=[
        "revoke-unknown",
        "rotate-unknown",
        "revoke-malformed",
        "revoke-twice",
        "rotate-revoked",
        "agent-revokes",
        "agent-issues",
        "unknown-role",
    ],
)
def test_key_commands_that_cannot_apply_say_why_and_append_nothing(
    ledger: Ledger, command: Callable[[Ledger], object], error: type[LedgerError]
) -> None:
    ledger.issue_api_key(OPERATOR, "alice")
    revoked = ledger.issue_api_key(OPERATOR, "bob")
    ledger.revoke_api_key(OPERATOR, revoked.key_id)
    head = ledger.store.head()

    with pytest.raises(error) as raised:
        command(ledger)

    assert raised.value.hint
    assert ledger.store.head() == head


# --- the auditor: reads everything, changes nothing ------------------------------------------------------------

KNOWN = "Every decision of the ledger is an event in the hash chain."
COMMANDS: dict[str, Callable[[Ledger, str], object]] = {
    "clock_in": lambda led, sid: led.clock_in(AUDITOR, "dev"),
    "clock_out": lambda led, sid: led.clock_out(AUDITOR, sid),
    "search": lambda led, sid: led.search(AUDITOR, sid, "anything"),
    "assert_compliance": lambda led, sid: led.assert_compliance(AUDITOR, sid),
    "anchor": lambda led, sid: led.anchor(AUDITOR, sid, "dev", "===ODYSSEAN_ANCHOR_PROOF::v5.0===\n"),
    "unlock": lambda led, sid: led.unlock_anchor(AUDITOR, sid, "reviewed"),
    "remember": lambda led, sid: led.remember(AUDITOR, "An auditor must never write to the ledger.", [], None),
    "setup_memory": lambda led, sid: led.setup_memory(AUDITOR, identity="I audit"),
    "recall": lambda led, sid: led.recall(AUDITOR, "ledger", "attention", 5, None),
    "curate": lambda led, sid: led.curate(AUDITOR),
    "outcome": lambda led, sid: led.outcome(AUDITOR, [memory.block_id_for(KNOWN)], 1.0, None, None),
    "task_create": lambda led, sid: led.task_create(AUDITOR, "audit-1", "Audit"),
    "task_update_dna": lambda led, sid: led.task_update_dna(AUDITOR, "t-1", {"pdsa_ref": "https://x.example"}),
    "task_transition": lambda led, sid: led.task_transition(AUDITOR, "t-1", "cancelled", sid),
    "check_parameters": lambda led, sid: led.check_parameters(AUDITOR, "manage_task", "update", {"task_id": "t-1"}),
    "manage_task": lambda led, sid: led.manage_task(
        AUDITOR, "update", {"task_id": "t-1", "work_notes": "audited the ledger today", "progress_made": "half"}
    ),
    "brain": lambda led, sid: led.brain.ask(AUDITOR, "What do we know about the ledger?"),
    "issue_key": lambda led, sid: led.issue_api_key(AUDITOR, "x"),
    "revoke_key": lambda led, sid: led.revoke_api_key(AUDITOR, led.api_key_list(OPERATOR)[0].key_id),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_an_auditor_is_refused_every_command_that_appends_and_nothing_is_recorded(ledger: Ledger, name: str) -> None:
    ledger.issue_api_key(OPERATOR, "alice")
    sid = ledger.clock_in(ALICE, "dev").session_id
    ledger.task_create(ALICE, "t-1", "A task")
    ledger.remember(ALICE, KNOWN, [], sid)
    head = ledger.store.head()

    with pytest.raises(Forbidden, match="auditor"):
        COMMANDS[name](ledger, sid)

    assert ledger.store.head() == head


def test_an_auditor_reads_every_agents_sessions_events_reports_and_tasks(ledger: Ledger) -> None:
    sid = ledger.clock_in(ALICE, "dev").session_id
    ledger.search(ALICE, sid, "anything")
    ledger.task_create(BOB, "t-bob", "Bob's task")

    state = ledger.session_state(sid, viewer=AUDITOR)
    rows, _ = ledger.events_page(AUDITOR, limit=1000)
    report = ledger.compliance_report(viewer=AUDITOR)
    tasks = ledger.task_list(viewer=AUDITOR)

    assert state.agent == "alice"
    assert {r.type for r in rows} >= {"SessionStarted", "MemorySearched", "TaskCreated"}
    assert [a.agent for a in report.agents] == ["alice"]
    assert [t.task_id for t in tasks] == ["t-bob"]


# --- agent keys read only their own ------------------------------------------------------------------------------


def test_an_agent_key_reads_only_its_own_sessions(ledger: Ledger) -> None:
    mine = ledger.clock_in(ALICE, "dev").session_id
    theirs = ledger.clock_in(BOB, "dev").session_id

    assert ledger.session_state(mine, viewer=ALICE).agent == "alice"
    with pytest.raises(Forbidden, match="another agent"):
        ledger.session_state(theirs, viewer=ALICE)
    with pytest.raises(Forbidden):
        ledger.session_state(theirs, viewer=ALICE, position=ledger.store.head()[0])


def test_an_agent_key_pages_through_only_its_own_events_without_gaps_or_leaks(ledger: Ledger) -> None:
    a = ledger.clock_in(ALICE, "dev").session_id
    b = ledger.clock_in(BOB, "dev").session_id
    for i in range(7):  # interleaved, so every page boundary has the other agent's events around it
        ledger.search(ALICE, a, f"alice {i}")
        ledger.search(BOB, b, f"bob {i}")
        ledger.search(BOB, b, f"bob again {i}")
    everything = [r.position for r in ledger.store.iter_records() if r.meta_json.find('"agent":"alice"') >= 0]

    pages: list[list[int]] = []
    after: int | None = 0
    while after is not None:
        rows, after = ledger.events_page(ALICE, after=after, limit=3)
        pages.append([r.position for r in rows])
        assert all('"agent":"alice"' in r.meta_json for r in rows)
    typed, _ = ledger.events_page(ALICE, event_type="MemorySearched", limit=100)
    foreign_stream, _ = ledger.events_page(ALICE, stream=f"session:{b}", limit=100)

    assert [p for page in pages for p in page] == everything and len(everything) == 8
    assert all(len(page) == 3 for page in pages[:-1])
    assert len(typed) == 7 and foreign_stream == []


def test_an_agent_key_sees_only_its_own_report_rows(ledger: Ledger) -> None:
    for who in (ALICE, BOB):
        sid = ledger.clock_in(who, "dev").session_id
        ledger.search(who, sid, "x")
        ledger.assert_compliance(who, sid)

    own = ledger.compliance_report(viewer=ALICE)
    then = ledger.compliance_report(viewer=ALICE, position=ledger.store.head()[0])
    with pytest.raises(Forbidden, match="own report rows"):
        ledger.compliance_report("bob", viewer=ALICE)

    assert [a.agent for a in own.agents] == ["alice"] and [a.agent for a in then.agents] == ["alice"]
    assert [a.agent for a in ledger.compliance_report(viewer=OPERATOR).agents] == ["alice", "bob"]


def test_an_agent_key_sees_open_tasks_and_closed_tasks_it_created_or_acted_on(ledger: Ledger) -> None:
    liaison = ledger.clock_in(BOB, "liaison").session_id
    ledger.task_create(BOB, "open-bob", "Still open")
    ledger.task_create(BOB, "closed-bob", "Closed by bob alone")
    ledger.task_create(BOB, "closed-shared", "Closed after alice worked on it")
    ledger.task_update_dna(ALICE, "closed-shared", {"pdsa_ref": "https://example.org/pdsa"})
    ledger.task_create(ALICE, "closed-alice", "Alice's own")
    for task in ("closed-bob", "closed-shared", "closed-alice"):
        assert ledger.task_transition(BOB, task, "cancelled", liaison).status == "transitioned"

    listed = [t.task_id for t in ledger.task_list(viewer=ALICE)]
    open_one = ledger.task_get("open-bob", viewer=ALICE)
    with pytest.raises(Forbidden, match="another agent"):
        ledger.task_get("closed-bob", viewer=ALICE)
    earlier = ledger.task_get("closed-bob", viewer=ALICE, position=ledger.store.head()[0] - 3)

    assert listed == ["open-bob", "closed-shared", "closed-alice"]
    assert open_one.status == "ready" and earlier.status == "ready"
    assert len(ledger.task_list(viewer=BOB)) == 4 and len(ledger.task_list()) == 4


def test_identities_not_proven_by_a_key_read_everything_as_before(ledger: Ledger) -> None:
    stdio_agent = Actor("alice", "mcp")  # stdio / loopback without keys: named by whoever runs it
    theirs = ledger.clock_in(BOB, "dev").session_id
    ledger.task_create(BOB, "t-1", "x")
    liaison = ledger.clock_in(BOB, "liaison").session_id
    ledger.task_transition(BOB, "t-1", "cancelled", liaison)

    assert ledger.session_state(theirs, viewer=stdio_agent).agent == "bob"
    assert [t.task_id for t in ledger.task_list(viewer=stdio_agent)] == ["t-1"]
    assert len(ledger.events_page(stdio_agent, limit=1000)[0]) == ledger.store.head()[0]
