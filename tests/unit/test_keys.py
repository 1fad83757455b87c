"""Pure key decisions, the key-ring fold and the access rules, with plain asserts."""

from __future__ import annotations

import datetime as _dt
from types import MappingProxyType

import pytest

from ledger.core import access
from ledger.core.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthorized
from ledger.core.events import ApiKeyIssued, ApiKeyRevoked, DomainEvent, RecordedEvent
from ledger.kernel import Actor
from ledger.keys import decisions as keys
from ledger.workflow import decisions as workflow
from projections.apikeys import KeyRing, advance
from projections.tasks import TaskView

T0 = _dt.datetime(2026, 1, 31, 12, tzinfo=_dt.UTC)


def recorded(events: list[DomainEvent], first_version: int = 1, agent: str = "operator") -> list[RecordedEvent]:
    return [
        RecordedEvent(
            position=100 + v,
            stream="apikeys",
            version=v,
            recorded_at=T0 + _dt.timedelta(minutes=v),
            meta=MappingProxyType({"agent": agent}),
            event=e,
            hash="h",
        )
        for v, e in enumerate(events, first_version)
    ]


def ring_with(*events: DomainEvent) -> KeyRing:
    return advance(KeyRing(), recorded(list(events)), len(events))


ALICE = keys.new_key()
ISSUED = ApiKeyIssued(key_id=ALICE.key_id, agent="alice", key_sha256=ALICE.sha256, role="auditor")


def test_a_new_key_is_random_and_its_id_is_the_start_of_its_hash() -> None:
    other = keys.new_key()
    assert ALICE.plaintext.startswith("clk_") and ALICE.plaintext != other.plaintext
    assert ALICE.sha256 == keys.digest(ALICE.plaintext) and ALICE.key_id == "key_" + ALICE.sha256[:10]


def test_the_ring_folds_issue_and_revocation_and_finds_keys_by_hash() -> None:
    ring = ring_with(ISSUED, ApiKeyRevoked(key_id=ALICE.key_id, reason="left"))
    view = ring.find(ALICE.sha256)
    assert view is not None and view.role == "auditor" and view.issued_by == "operator"
    assert view.revoked_at == T0 + _dt.timedelta(minutes=2) and view.reason == "left" and view.revoked
    assert ring.version == 2 and ring.ever_issued and ring.active() == []


def test_advancing_with_nothing_new_keeps_the_ring_and_a_second_revocation_changes_nothing() -> None:
    ring = ring_with(ISSUED, ApiKeyRevoked(key_id=ALICE.key_id, reason="first"))
    again = advance(ring, recorded([ApiKeyRevoked(key_id=ALICE.key_id, reason="second")], 3, "mallory"), 3)
    assert advance(ring, [], 2) is ring
    view = again.keys[ALICE.key_id]
    assert (view.reason, view.revoked_by) == ("first", "operator")


def test_identify_without_any_key_issued_is_open_and_with_keys_needs_a_live_one() -> None:
    ring = ring_with(ISSUED)
    revoked = ring_with(ISSUED, ApiKeyRevoked(key_id=ALICE.key_id))
    assert keys.identify(KeyRing(), None) is None
    assert keys.identify(ring, ALICE.plaintext) == ring.keys[ALICE.key_id]
    for bad_ring, presented, says in [
        (ring, None, "requires an API key"),
        (ring, "clk_guess", "not known"),
        (revoked, ALICE.plaintext, "revoked"),
        (revoked, None, "requires an API key"),
    ]:
        with pytest.raises(Unauthorized, match=says):
            keys.identify(bad_ring, presented)


def test_rotate_issues_for_the_same_agent_and_role_then_revokes_in_one_decision() -> None:
    new = keys.new_key()
    issued, revoked = keys.decide_rotate(ring_with(ISSUED), ALICE.key_id, new)
    assert isinstance(issued, ApiKeyIssued) and isinstance(revoked, ApiKeyRevoked)
    assert (issued.key_id, issued.agent, issued.role) == (new.key_id, "alice", "auditor")
    assert (revoked.key_id, revoked.replaced_by) == (ALICE.key_id, new.key_id)


def test_revoke_and_rotate_refuse_unknown_malformed_and_revoked_keys() -> None:
    ring = ring_with(ISSUED, ApiKeyRevoked(key_id=ALICE.key_id))
    with pytest.raises(NotFound, match="not known"):
        keys.decide_revoke(ring, "key_ffffffffff", None)
    with pytest.raises(InvalidInput, match="not a key id"):
        keys.decide_revoke(ring, "alice", None)
    with pytest.raises(Conflict, match="already revoked"):
        keys.decide_rotate(ring, ALICE.key_id, keys.new_key())


@pytest.mark.parametrize("name", sorted(keys.RESERVED_AGENTS))
def test_no_key_is_issued_under_the_names_the_ledger_uses_for_itself_and_the_operator(name: str) -> None:
    with pytest.raises(InvalidInput, match="the ledger records"):
        keys.decide_issue(KeyRing(), name, "admin", keys.new_key())


def test_a_reason_is_trimmed_optional_and_bounded() -> None:
    assert keys.check_reason("  stolen  ") == "stolen" and keys.check_reason("   ") is None
    for bad in ("x" * (keys.MAX_REASON_CHARS + 1), "a\x00b", "\ud800"):
        with pytest.raises(InvalidInput):
            keys.check_reason(bad)


def test_actor_roles_and_the_admin_shorthand_agree() -> None:
    assert Actor("a", admin=True).role == "admin" and Actor("a", role="admin").admin
    assert Actor("a").role == "agent" and not Actor("a", role="auditor").admin
    with pytest.raises(ValueError):
        Actor("a", admin=True, role="auditor")


def test_read_scope_limits_only_agent_keys() -> None:
    assert access.read_scope(Actor("a", "rest", role="agent", by_key=True)) == "a"
    assert access.read_scope(Actor("a", "mcp")) is None  # stdio or no keys: not proven by a key
    assert access.read_scope(Actor("a", "rest", role="auditor", by_key=True)) is None
    assert access.read_scope(Actor("a", "rest", role="admin", by_key=True)) is None
    with pytest.raises(Forbidden):
        access.require_writer(Actor("a", "rest", role="auditor", by_key=True))


def task(status: str, actors: set[str]) -> TaskView:
    return TaskView("t", "task", "T", status, "dev", MappingProxyType({}), T0, None, actors=frozenset(actors))


@pytest.mark.parametrize(
    ("status", "actors", "visible"),
    [
        ("ready", {"bob"}, True),
        ("review", {"bob"}, True),
        ("blocked", {"bob"}, True),
        ("complete", {"bob"}, False),
        ("cancelled", {"bob"}, False),
        ("complete", {"bob", "alice"}, True),
    ],
)
def test_an_agent_sees_open_tasks_and_closed_ones_it_took_part_in(status: str, actors: set[str], visible: bool) -> None:
    assert workflow.task_visible("alice", task(status, actors)) is visible
    assert workflow.task_visible(None, task(status, actors))
