"""API keys over HTTP: revocation seen by another server at once, agent keys that read only their own, and an
auditor that reads everything and changes nothing over REST and MCP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api.rest.app import build_app
from api.settings import Settings
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.e2e.test_http import rpc, tool
from tests.server_support import HTTP_TIMEOUT, compliance_ledger_serve, running

OPERATOR = Actor("operator", "cli", admin=True)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_a_key_revoked_through_one_server_is_refused_by_another_on_its_next_request(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    node_a, node_b = make_ledger(db_url), make_ledger(db_url)  # two services, one database, separate caches
    admin = bearer(node_a.issue_api_key(OPERATOR, "boss", role="admin").api_key)
    alice = node_a.issue_api_key(OPERATOR, "alice")
    settings = Settings(home=tmp_path)
    with running(node_a, settings) as a, running(node_b, settings) as b, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        before = http.post(f"{b}/sessions", json={"role": "dev"}, headers=bearer(alice.api_key))
        mcp_before = rpc(http, b, "tools/list", {}, headers=bearer(alice.api_key))
        revoked = http.post(
            f"{a}/admin/keys/{alice.key_id}/revoke", json={"reason": "token leaked in a log"}, headers=admin
        )
        head = node_b.store.head()
        after = http.post(f"{b}/sessions", json={"role": "dev"}, headers=bearer(alice.api_key))
        mcp_after = http.post(
            f"{b}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "clock_in", "arguments": {}}},
            headers={"Content-Type": "application/json", **bearer(alice.api_key)},
        )
        listed = http.get(f"{b}/admin/keys", headers=admin).json()
    assert before.status_code == 201 and "tools" in mcp_before["result"]
    assert revoked.status_code == 200 and revoked.json()["revoked_by"] == "boss"
    assert after.status_code == 401 and "revoked" in after.json()["error"]["message"]
    assert mcp_after.status_code == 401 and "revoked" in mcp_after.json()["error"]["message"]
    assert node_b.store.head() == head
    [alice_row] = [k for k in listed if k["key_id"] == alice.key_id]
    assert (alice_row["reason"], alice_row["revoked_by"]) == ("token leaked in a log", "boss")


def test_a_key_revoked_between_a_search_and_its_assert_is_refused_at_the_assert_and_nothing_is_recorded(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    # The serving node's key ring is cached (it has just accepted alice); the revocation comes from another node
    # sharing the database, and the very next request must see it.
    node_a, node_b = make_ledger(db_url), make_ledger(db_url)
    alice = node_a.issue_api_key(OPERATOR, "alice")
    with running(node_a, Settings(home=tmp_path)) as a, httpx.Client(base_url=a, timeout=HTTP_TIMEOUT) as http:
        sid = http.post("/sessions", json={"role": "dev"}, headers=bearer(alice.api_key)).json()["session_id"]
        searched = http.post(
            "/memory/search", json={"session_id": sid, "query": "schema"}, headers=bearer(alice.api_key)
        )
        node_b.revoke_api_key(OPERATOR, alice.key_id, "laptop stolen")
        head = node_a.store.head()
        refused = http.post("/compliance/assert", json={"session_id": sid}, headers=bearer(alice.api_key))
        again = http.post("/memory/search", json={"session_id": sid, "query": "x"}, headers=bearer(alice.api_key))
        listed = http.get(f"/sessions/{sid}", headers=bearer(alice.api_key))
    assert searched.status_code == 200
    for answer in (refused, again, listed):
        assert answer.status_code == 401 and "revoked" in answer.json()["error"]["message"]
    assert node_a.store.head() == head


def test_a_key_issued_by_another_node_works_on_its_first_request_and_an_unknown_key_is_a_401_before_the_body(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    node_a, node_b = make_ledger(db_url), make_ledger(db_url)
    node_a.issue_api_key(OPERATOR, "alice")
    with running(node_a, Settings(home=tmp_path)) as a, httpx.Client(base_url=a, timeout=HTTP_TIMEOUT) as http:
        unknown = http.post("/sessions", json={"role": "dev"}, headers=bearer("clk_not-a-key"))
        carol = node_b.issue_api_key(OPERATOR, "carol")  # after node A's key ring was read
        first = http.post("/sessions", json={"role": "dev"}, headers=bearer(carol.api_key))
        malformed = http.post("/memory/search", json={"unexpected": 1}, headers=bearer("clk_not-a-key"))
        no_key = http.post("/memory/search", json={"unexpected": 1})
        invalid = http.post("/memory/search", json={"unexpected": 1}, headers=bearer(carol.api_key))
    assert unknown.status_code == 401 and "not known" in unknown.json()["error"]["message"]
    assert first.status_code == 201 and first.json()["agent"] == "carol"
    assert malformed.status_code == 401 and no_key.status_code == 401
    assert invalid.status_code == 422


def test_a_key_revoked_from_the_cli_is_refused_by_a_running_serve_process(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from api.cli import app

    ledger = make_ledger(db_url)
    alice = ledger.issue_api_key(OPERATOR, "alice")
    with compliance_ledger_serve(tmp_path, db_url) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        before = http.post("/sessions", json={"role": "dev"}, headers=bearer(alice.api_key))
        revoked = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", db_url, "keys", "revoke", alice.key_id])
        after = http.post("/sessions", json={"role": "dev"}, headers=bearer(alice.api_key))
    assert before.status_code == 201 and revoked.exit_code == 0, revoked.stderr
    assert after.status_code == 401 and "revoked" in after.json()["error"]["message"]


# --- agent keys read only their own (TestClient on a real database) ------------------------------------------


Keyed = tuple[Ledger, TestClient, dict[str, Any]]


@pytest.fixture
def keyed(make_ledger: LedgerFactory, db_url: str, tmp_path: Path) -> Iterator[Keyed]:
    """A ledger with an agent key each for alice and bob, an auditor and an admin, and some history."""
    ledger = make_ledger(db_url)
    keys = {
        name: bearer(ledger.issue_api_key(OPERATOR, name, role=role).api_key)
        for name, role in [("alice", "agent"), ("bob", "agent"), ("dash", "auditor"), ("boss", "admin")]
    }
    with TestClient(build_app(ledger, Settings(home=tmp_path))) as client:
        yield ledger, client, keys


def test_an_agent_key_reads_only_its_own_sessions_events_reports_and_metrics(
    keyed: Keyed,
) -> None:
    ledger, http, keys = keyed
    sids = {}
    for name in ("alice", "bob"):
        sids[name] = http.post("/sessions", json={"role": "dev"}, headers=keys[name]).json()["session_id"]
        for i in range(3):
            http.post("/memory/search", json={"query": f"{name} {i}", "session_id": sids[name]}, headers=keys[name])
        http.post("/compliance/assert", json={"session_id": sids[name]}, headers=keys[name])

    own = http.get(f"/sessions/{sids['alice']}", headers=keys["alice"])
    foreign = http.get(f"/sessions/{sids['bob']}", headers=keys["alice"])
    pages, after = [], 0
    while after is not None:
        page = http.get("/events", params={"after": after, "limit": 2}, headers=keys["alice"]).json()
        pages.append(page["events"])
        after = page["next_after"]
    report = http.get("/reports/compliance", headers=keys["alice"]).json()
    other_report = http.get("/reports/compliance", params={"agent": "bob"}, headers=keys["alice"])
    enforcement = http.get("/reports/enforcement", params={"agent": "bob"}, headers=keys["alice"])
    metrics = {name: http.get("/metrics", headers=keys[name]).status_code for name in ("alice", "dash", "boss")}
    key_list = {name: http.get("/admin/keys", headers=keys[name]).status_code for name in ("alice", "dash", "boss")}

    assert own.status_code == 200 and foreign.status_code == 403 and "another agent" in foreign.text
    events = [e for page in pages for e in page]
    mine = [r.position for r in ledger.store.iter_events() if r.agent == "alice"]
    assert [e["position"] for e in events] == mine and len(mine) == 5
    assert {e["meta"]["agent"] for e in events} == {"alice"} and all(len(p) == 2 for p in pages[:-1])
    assert [row["agent"] for row in report["agents"]] == ["alice"]
    assert other_report.status_code == 403 and enforcement.status_code == 403
    assert metrics == {"alice": 403, "dash": 200, "boss": 200}
    assert key_list == {"alice": 403, "dash": 200, "boss": 200}
    everything = http.get("/events", params={"limit": 1000}, headers=keys["dash"]).json()["events"]
    assert {e["meta"]["agent"] for e in everything} >= {"alice", "bob", "operator"}


def test_an_agent_key_lists_open_tasks_and_the_closed_tasks_it_took_part_in(
    keyed: Keyed,
) -> None:
    _, http, keys = keyed
    liaison = http.post("/sessions", json={"role": "liaison"}, headers=keys["bob"]).json()["session_id"]
    for task_id in ("open", "closed", "shared"):
        http.post("/tasks", json={"task_id": task_id, "title": task_id}, headers=keys["bob"])
    http.patch("/tasks/shared/dna", json={"set": {"pdsa_ref": "https://example.org/p"}}, headers=keys["alice"])
    for task_id in ("closed", "shared"):
        moved = http.post(
            f"/tasks/{task_id}/transitions", json={"to_status": "cancelled", "session_id": liaison}, headers=keys["bob"]
        )
        assert moved.json()["status"] == "transitioned"

    alice_sees = [t["task_id"] for t in http.get("/tasks", headers=keys["alice"]).json()]
    bob_sees = [t["task_id"] for t in http.get("/tasks", headers=keys["bob"]).json()]
    closed = http.get("/tasks/closed", headers=keys["alice"])
    auditor_sees = http.get("/tasks/closed", headers=keys["dash"])

    assert alice_sees == ["open", "shared"] and bob_sees == ["open", "closed", "shared"]
    assert closed.status_code == 403 and auditor_sees.status_code == 200


# --- the auditor changes nothing -------------------------------------------------------------------------------

READ_POSTS = {"/stamps/verify"}


def test_an_auditor_is_refused_by_every_state_changing_route_and_nothing_is_recorded(
    keyed: Keyed,
) -> None:
    ledger, http, keys = keyed
    sid = http.post("/sessions", json={"role": "dev"}, headers=keys["alice"]).json()["session_id"]
    http.post("/memory/search", json={"query": "x", "session_id": sid}, headers=keys["alice"])
    receipt = http.post("/compliance/assert", json={"session_id": sid}, headers=keys["alice"]).json()["receipt"]
    http.post("/tasks", json={"task_id": "t-1", "title": "A task"}, headers=keys["alice"])
    key_id = ledger.api_key_list(OPERATOR)[0].key_id
    values = {"session_id": sid, "task_id": "t-1", "key_id": key_id, "block_id": "blk_0123456789abcdef01234567"}
    writes = [
        (method.upper(), path)
        for path, operations in http.get("/openapi.json").json()["paths"].items()
        for method in operations
        if method not in {"get", "head"} and path not in READ_POSTS
    ]
    head = ledger.store.head()

    answers = {}
    for method, path in writes:
        url = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)
        answers[(method, path)] = http.request(method, url, json={}, headers=keys["dash"])
    verified = http.post("/stamps/verify", json={"receipt": receipt}, headers=keys["dash"])

    assert {p for _, p in writes} >= {"/sessions", "/memory/blocks", "/tasks/{task_id}/transitions", "/api/v1/memory"}
    assert {p for _, p in writes} >= {"/admin/keys/{key_id}/revoke", "/admin/sessions/{session_id}/anchor/unlock"}
    assert {p for _, p in writes} >= {"/memory/blocks/{block_id}/supersede", "/memory/blocks/{block_id}/forget"}
    refused = {k: (r.status_code, r.json()["error"]["code"]) for k, r in answers.items()}
    assert refused == {k: (403, "forbidden") for k in answers}
    assert all("auditor" in r.json()["error"]["message"] for r in answers.values())
    assert verified.status_code == 200 and verified.json()["valid"] is True
    assert ledger.store.head() == head


READ_ONLY_TOOLS = {"verify_stamp", "task_get", "task_list"}


def write_tool_arguments(sid: str, block_id: str) -> dict[str, dict[str, Any]]:
    """Arguments an agent could use for each tool that records something."""
    notes = {"work_notes": "Audited the gate and found it sound.", "progress_made": "Checked every route."}
    return {
        "clock_in": {"role": "dev"},
        "clock_out": {"session_id": sid},
        "anchor_challenge": {"session_id": sid},
        "memory_remember": {"content": "Auditors read, agents write.", "session_id": sid},
        "memory_search": {"query": "audit", "session_id": sid},
        "memory_recall": {"query": "audit"},
        "memory_curate": {},
        "memory_outcome": {"block_ids": [block_id], "signal": 1.0},
        "memory_supersede": {"block_id": block_id, "content": "Auditors read; agents write."},
        "memory_forget": {"block_id": block_id, "reason": "audit"},
        "memory_setup": {"identity": "I audit", "session_id": sid},
        "assert_compliance": {"session_id": sid},
        "odyssean_anchor": {"role": "dev", "proof_candidate": "===ODYSSEAN_ANCHOR_PROOF::v5.0===", "session_id": sid},
        "task_create": {"task_id": "audit-1", "title": "Audit"},
        "task_update_dna": {"task_id": "t-1", "dna": {"pdsa_ref": "https://example.org/p"}},
        "task_transition": {"task_id": "t-1", "to_status": "cancelled", "session_id": sid},
        "manage_task": {"action": "update", "task_id": "t-1", **notes},
        "manage_context": {"action": "add_progress", "task_id": "t-1", "progress_made": "Checked every route."},
        "manage_subtask": {"action": "create", "task_id": "t-1", "subtask_id": "s-1", "title": "Audit the gate"},
        "query_brain": {"prompt": "What do we know about audits?"},
        "contribute_to_brain": {"prompt": "Auditors read everything in the ledger and never change anything."},
    }


def test_over_mcp_http_an_auditor_may_only_call_the_read_only_tools(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    alice = bearer(ledger.issue_api_key(OPERATOR, "alice").api_key)
    auditor = bearer(ledger.issue_api_key(OPERATOR, "dash", role="auditor").api_key)
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        sid = tool(http, base, "clock_in", {"role": "dev"}, headers=alice)["structuredContent"]["session_id"]
        block = tool(http, base, "memory_remember", {"content": "Audits are events.", "session_id": sid}, headers=alice)
        tool(http, base, "memory_search", {"query": "audits", "session_id": sid}, headers=alice)
        stamp = tool(http, base, "assert_compliance", {"session_id": sid}, headers=alice)["structuredContent"]
        tool(http, base, "task_create", {"task_id": "t-1", "title": "A task"}, headers=alice)
        listed = {t["name"] for t in rpc(http, base, "tools/list", {}, headers=auditor)["result"]["tools"]}
        args = write_tool_arguments(sid, block["structuredContent"]["block_id"])
        head = ledger.store.head()

        writers = sorted(listed - READ_ONLY_TOOLS)
        answers = {name: tool(http, base, name, args[name], headers=auditor) for name in writers}
        verified = tool(http, base, "verify_stamp", {"receipt": stamp["receipt"]}, headers=auditor)
        got = tool(http, base, "task_get", {"task_id": "t-1"}, headers=auditor)
        tasks = tool(http, base, "task_list", {}, headers=auditor)

    assert listed - READ_ONLY_TOOLS == set(args), "classify every tool: read-only, or with arguments here"
    errors = {name: (a.get("isError"), "auditor" in a["content"][0]["text"]) for name, a in answers.items()}
    assert errors == {name: (True, True) for name in answers}
    assert ledger.store.head() == head
    assert verified["structuredContent"]["valid"] is True
    assert got["structuredContent"]["task_id"] == "t-1"
    assert [t["task_id"] for t in tasks["structuredContent"]["result"]] == ["t-1"]


def test_without_keys_loopback_callers_keep_full_access(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    with TestClient(build_app(ledger, Settings(home=tmp_path))) as http:
        sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        keys = http.get("/admin/keys")
        metrics = http.get("/metrics")
        state = http.get(f"/sessions/{sid}")
    assert keys.status_code == 200 and keys.json() == []
    assert metrics.status_code == 200 and state.status_code == 200
