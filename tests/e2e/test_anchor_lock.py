"""A locked anchor blocks further action in its session until a person unlocks it (issue 10, hole 9; seed 001:
"After 2 retries, block further action (human intervention required)").

The lock is folded from the session's own events and checked in the one session check (``SessionGrants.open``), so
the tests go through every MCP tool and REST route that takes a session: each refuses a locked session before
anything is appended, except ``assert_compliance`` (a recorded FAIL, ``reason: anchor_locked``),
``odyssean_anchor`` (a recorded ``AnchorRefused``) and ``clock_out`` — whatever ``LEDGER_REQUIRE_ANCHOR`` says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from api.mcp.server import build_mcp
from api.rest.app import build_app
from api.settings import Settings
from ledger.core.errors import SessionLocked
from ledger.service import Actor, Ledger
from tests.anchor_support import proof
from tests.conftest import LedgerFactory
from tests.e2e.test_session_ownership import ALICE, BLOCK_ID, MCP_CASES, OPERATOR, REST_CASES, own_block, world
from tests.mcp_support import call

__all__ = ["world"]  # the fixture, shared with the ownership tests
WHILE_LOCKED = {"assert_compliance", "odyssean_anchor", "clock_out"}  # they answer a locked session themselves


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def locked_session(ledger: Ledger, project: Path, who: Actor = ALICE) -> str:
    """A session of ``who`` holding a valid search token, then locked by three failed anchor attempts."""
    sid = ledger.clock_in(who, "dev", str(project)).session_id
    ledger.search(who, sid, "refresh endpoint")
    for _ in range(3):
        assert not ledger.anchor(who, sid, "dev", proof(artifact="my response")).validated
    assert ledger.session_state(sid).anchor.locked
    return sid


def _session_types(ledger: Ledger, sid: str) -> list[str]:
    return [r.type for r in ledger.store.iter_records(stream=f"session:{sid}")]


@pytest.mark.anyio
async def test_a_locked_session_can_do_nothing_but_fail_the_gate_until_a_person_unlocks_it(
    world: tuple[Ledger, Path, str],
) -> None:
    ledger, project, _ = world
    sid = locked_session(ledger, project)
    async with Client(build_mcp(ledger, agent="alice")) as client:
        for name, cases in MCP_CASES.items():
            if name in WHILE_LOCKED:
                continue
            for case in cases:
                args = own_block(ledger, {k: ([BLOCK_ID] if v == ["<block>"] else v) for k, v in case.items()})
                head = ledger.store.head()
                result = await client.call_tool(name, {**args, "session_id": sid})
                text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                assert result.is_error, f"{name}({args}) acted in a locked session: {result.structured_content}"
                assert f"session {sid} is locked" in text and "human intervention required" in text, text
                assert f"compliance-ledger anchor unlock {sid} --reason TEXT" in text, text
                assert ledger.store.head() == head, f"{name} appended in a locked session"
        stamp = await call(client, "assert_compliance", {"session_id": sid})
        attempt = await call(client, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": proof()})
        tools = {t.name for t in (await client.list_tools()).tools}
        state = ledger.unlock_anchor(OPERATOR, sid, "went through the failed proofs with the agent")
        after = await call(client, "assert_compliance", {"session_id": sid})
        searched = await call(client, "memory_search", {"query": "refresh", "session_id": sid})
    assert stamp["status"] == "FAIL" and stamp["reason"] == "anchor_locked" and stamp.get("stamp") is None
    assert stamp["message"].startswith("⛔ GATE CLOSED.") and "human intervention required" in stamp["message"]
    assert f"compliance-ledger anchor unlock {sid}" in stamp["message"]
    assert attempt["validated"] is False and "human intervention required" in attempt["errors"][0]
    assert not any("unlock" in name for name in tools)  # the agent cannot lift its own lock
    assert state.anchor.locked is False
    # The token the locked FAIL left unused earns its stamp once a person has unlocked the session.
    assert after["status"] == "PASS" and searched["count"] >= 0
    types = _session_types(ledger, sid)
    assert types.count("ComplianceRefused") == 1 and "AnchorRefused" in types and "AnchorUnlocked" in types
    [refusal] = list(ledger.store.iter_events(stream=f"session:{sid}", types=["ComplianceRefused"]))
    assert refusal.event.reason == "anchor_locked"  # type: ignore[attr-defined]


def test_a_locked_session_may_still_clock_out(world: tuple[Ledger, Path, str]) -> None:
    ledger, project, _ = world
    sid = locked_session(ledger, project)
    assert ledger.clock_out(ALICE, sid).ended_at is not None
    state = ledger.unlock_anchor(OPERATOR, sid, "closed session: unlocked for the record")  # a person, open or closed
    assert state.anchor.locked is False and state.ended_at is not None


@pytest.mark.parametrize("require_anchor", [False, True])
def test_a_locked_session_moves_no_task_and_earns_no_stamp_whatever_require_anchor_says(
    make_ledger: LedgerFactory, db_url: str, project: Path, tmp_path: Path, require_anchor: bool
) -> None:
    """The hole as found: a locked session still earned stamps and moved tasks."""
    ledger = make_ledger(db_url, project_roots=[str(tmp_path / "projects")], require_anchor=require_anchor)
    sid = ledger.clock_in(ALICE, "dev", str(project)).session_id
    assert ledger.anchor(ALICE, sid, "dev", proof()).validated  # validated once ...
    ledger.task_create(ALICE, "t-9", "Claim me", role="dev")
    ledger.search(ALICE, sid, "what do we know about t-9")
    ledger.task_update_dna(ALICE, "t-9", {"memory_query_session": sid})
    for _ in range(3):  # ... then locked: the later lock wins
        ledger.anchor(ALICE, sid, "dev", proof(phase="B9"))
    head = ledger.store.head()
    with pytest.raises(SessionLocked) as refused:
        ledger.task_transition(ALICE, "t-9", "active", sid)
    stamp = ledger.assert_compliance(ALICE, sid)
    assert refused.value.code == "anchor_locked" and "human intervention required" in refused.value.message
    assert "anchor unlock" in refused.value.hint
    assert ledger.store.head()[0] == head[0] + 1  # only the gate's recorded FAIL
    assert ledger.task_get("t-9").status == "ready"
    assert (stamp.status, stamp.reason) == ("FAIL", "anchor_locked")
    assert ledger.session_state(sid).anchor.validated is False  # the lock voided the earlier validation

    ledger.unlock_anchor(OPERATOR, sid, "reviewed")
    moved = ledger.task_transition(ALICE, "t-9", "active", sid)
    after_unlock = ledger.assert_compliance(ALICE, sid)
    assert moved.status == "transitioned"
    if require_anchor:  # the unlock lets the agent retry; the stamp needs a fresh anchor
        assert (after_unlock.status, after_unlock.reason) == ("FAIL", "anchor_required")
        assert ledger.anchor(ALICE, sid, "dev", proof()).validated
        assert ledger.assert_compliance(ALICE, sid).status == "PASS"
    else:
        assert after_unlock.status == "PASS"


def test_every_rest_route_that_writes_in_a_session_refuses_a_locked_one_with_409(
    world: tuple[Ledger, Path, str], tmp_path: Path
) -> None:
    ledger, project, url = world
    alice = {"Authorization": f"Bearer {ledger.issue_api_key(OPERATOR, 'alice').api_key}"}
    app = build_app(ledger, Settings(home=tmp_path, database_url=url))
    answered: dict[str, Any] = {}
    with TestClient(app) as http:
        sid = locked_session(ledger, project)
        # clock-out last: it ends the session, which every other route must meet still locked
        for (method, _), case in sorted(REST_CASES.items(), key=lambda kv: "clock-out" in kv[1][0]):
            path, body = own_block(ledger, case)
            in_body = {} if "{s}" in path else {"session_id": sid}
            head = ledger.store.head()
            response = http.request(method, path.format(s=sid), json={**body, **in_body}, headers=alice)
            if path in ("/compliance/assert", "/anchors", "/sessions/{s}/clock-out"):
                assert response.status_code == 200, (path, response.text)
                answered[path] = response.json()
                continue
            assert response.status_code == 409, (path, response.status_code, response.text)
            error = response.json()["error"]
            assert error["code"] == "anchor_locked" and f"session {sid} is locked" in error["message"]
            assert "anchor unlock" in error["hint"]
            assert ledger.store.head() == head, f"{path} appended in a locked session"
    assert answered["/compliance/assert"]["reason"] == "anchor_locked"
    assert answered["/anchors"]["validated"] is False
    assert answered["/sessions/{s}/clock-out"]["ended_at"] is not None


def test_a_new_session_is_no_way_round_a_locked_one(world: tuple[Ledger, Path, str]) -> None:
    """Found while closing hole 9: a locked agent clocked out and in again and had fresh attempts."""
    ledger, project, _ = world
    sid = locked_session(ledger, project)
    head = ledger.store.head()
    with pytest.raises(SessionLocked) as refused:
        ledger.clock_in(ALICE, "dev", str(project))
    assert sid in refused.value.message and "human intervention required" in refused.value.message
    assert "anchor unlock" in refused.value.hint
    ledger.clock_out(ALICE, sid)  # ending the locked session frees nothing
    with pytest.raises(SessionLocked):
        ledger.clock_in(ALICE, "dev")
    assert ledger.store.head()[0] == head[0] + 1  # only the clock-out was recorded
    ledger.unlock_anchor(OPERATOR, sid, "reviewed with the agent's operator")
    assert ledger.clock_in(ALICE, "dev", str(project)).session_id != sid  # a person unlocked it: back to work
    assert ledger.clock_in(Actor("bob", "mcp"), "dev").session_id  # other agents were never affected


@pytest.mark.anyio
async def test_a_locked_out_agents_stdio_server_starts_and_says_why_it_cannot_act(
    world: tuple[Ledger, Path, str],
) -> None:
    ledger, project, _ = world
    sid = locked_session(ledger, project)
    async with Client(build_mcp(ledger, agent="alice", open_default_session=True)) as client:
        result = await client.call_tool("memory_search", {"query": "anything"})
        text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
        assert result.is_error and f"session {sid} is locked" in text and "anchor unlock" in text, text
