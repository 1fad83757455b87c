"""Every command that takes a session id refuses a session the caller does not own — another agent's, an unknown
or malformed one, or one already clocked out — before anything is appended (issue 10, hole 7).

The MCP test is generic: it lists the tools through a real client and calls every tool whose input schema has a
``session_id``, so a new tool cannot skip the check unnoticed. The REST test does the same over the OpenAPI
document for every route that writes in a session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from api.mcp.server import build_mcp
from api.rest.app import build_app
from api.settings import Settings
from ledger.memory import decisions as memory
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory

ALICE, BOB, OPERATOR = Actor("alice", "cli"), Actor("bob", "cli"), Actor("operator", "cli", admin=True)
UPDATE = {
    "work_notes": "Implemented the token refresh endpoint and wired it into the router.",
    "progress_made": "Refresh tokens now rotate on every use; the old one is revoked.",
}
SUMMARY = "Implemented the refresh endpoint and its rotation. Tested expiry and reuse, all passing."
STATEMENT = "Session ownership is checked once, in the service layer, before anything is appended to the log."
UNKNOWN = "ses_" + "0" * 20
BLOCK = "A block alice can rate after she used it."
BLOCK_ID = "blk_alices_rated_block"  # stands for the block's id, which is keyed per ledger: see own_block


def own_block(ledger: Ledger, value: Any) -> Any:
    """``value`` (arguments, a path and body) with :data:`BLOCK_ID` replaced by the id ``BLOCK`` has in
    ``ledger``."""
    return json.loads(json.dumps(value).replace(BLOCK_ID, ledger.kernel.block_id(memory.normalise(BLOCK))))


DESCRIPTION = "A subtask created to prove that the arguments are valid."

# Minimal valid arguments of every MCP tool that takes a session_id (the session is added per call). A tool that
# gains a session_id must be listed here, or the test fails.
MCP_CASES: dict[str, list[dict[str, Any]]] = {
    "clock_out": [{}],
    "memory_remember": [{"content": "Alice keeps her own notes about the refresh endpoint rotation."}],
    "memory_search": [{"query": "refresh endpoint"}],
    "memory_recall": [{"query": "refresh endpoint"}, {}],
    "memory_outcome": [{"block_ids": ["<block>"], "signal": 1.0}],
    "memory_setup": [{"seed": False, "values": ["Alice values tests that fail before the fix."]}],
    "memory_supersede": [{"block_id": BLOCK_ID, "content": "A block alice rated and then corrected."}],
    "assert_compliance": [{}],
    "odyssean_anchor": [{"role": "dev", "proof_candidate": "not a proof yet"}],
    "anchor_challenge": [{}],
    "query_brain": [{"prompt": "how does the refresh endpoint rotate tokens?"}],
    "contribute_to_brain": [{"prompt": STATEMENT}],
    "task_transition": [{"task_id": "t-1", "to_status": "active"}],
    "manage_task": [
        {"action": "create", "task_id": "t-new", "title": "New task", "description": "A task created to prove it."},
        {"action": "update", "task_id": "t-1", **UPDATE},
        {"action": "complete", "task_id": "t-1", "completion_summary": SUMMARY},
    ],
    "manage_context": [
        {"action": "update", "task_id": "t-1", "data": {"auth": "JWT in httpOnly cookies"}},
        {"action": "add_insight", "task_id": "t-1", "insight": "Refresh must be serialised per user or tabs collide."},
        {"action": "add_progress", "task_id": "t-1", "progress_made": "The login endpoint returns signed tokens."},
    ],
    "manage_subtask": [
        {"action": "create", "task_id": "t-1", "subtask_id": "s-new", "title": "Sub", "description": DESCRIPTION},
        {"action": "update", "task_id": "t-1", "subtask_id": "s-1", **UPDATE},
        {"action": "complete", "task_id": "t-1", "subtask_id": "s-1", "completion_summary": SUMMARY},
    ],
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def world(make_ledger: LedgerFactory, db_url: str, project: Path, tmp_path: Path) -> tuple[Ledger, Path, str]:
    """A ledger where alice has a task (t-1, with subtask s-1) and a memory block."""
    ledger = make_ledger(db_url, project_roots=[str(tmp_path / "projects")])
    ledger.task_create(ALICE, "t-1", "Refresh tokens")
    ledger.manage_subtask(
        ALICE, "create", {"task_id": "t-1", "subtask_id": "s-1", "title": "Sub", "description": DESCRIPTION}
    )
    ledger.remember(ALICE, BLOCK, [], _own_session(ledger, project))
    return ledger, project, db_url


def _own_session(ledger: Ledger, project: Path, *, closed: bool = False) -> str:
    sid = ledger.clock_in(ALICE, "dev", str(project)).session_id
    if closed:
        ledger.clock_out(ALICE, sid)
    return sid


def _refusals(ledger: Ledger, project: Path) -> list[tuple[str, str]]:
    """(session id, what the error must say) for every session alice may not act in."""
    return [
        (ledger.clock_in(BOB, "dev").session_id, "belongs to another agent"),
        (UNKNOWN, "does not exist"),
        ("not-a-session", "is not a session id"),
        (_own_session(ledger, project, closed=True), "has been clocked out"),
    ]


@pytest.mark.anyio
async def test_every_mcp_tool_that_takes_a_session_refuses_one_the_caller_does_not_own(
    world: tuple[Ledger, Path, str],
) -> None:
    ledger, project, _ = world
    async with Client(build_mcp(ledger, agent="alice")) as client:
        listed = (await client.list_tools()).tools
        with_session = {t.name for t in listed if "session_id" in (t.input_schema.get("properties") or {})}
        assert with_session == set(MCP_CASES), "list minimal arguments for every tool that takes a session_id"
        for name, cases in MCP_CASES.items():
            for case in cases:
                args = own_block(ledger, {k: ([BLOCK_ID] if v == ["<block>"] else v) for k, v in case.items()})
                for sid, problem in _refusals(ledger, project):
                    head = ledger.store.head()
                    result = await client.call_tool(name, {**args, "session_id": sid})
                    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                    assert result.is_error, f"{name}({args}) accepted session {sid!r}: {result.structured_content}"
                    assert problem in text, f"{name}: {text!r} does not say {problem!r}"
                    assert ledger.store.head() == head, f"{name} appended in session {sid!r}"
                # The same arguments in alice's own open session are accepted: the session was the problem.
                own = await client.call_tool(name, {**args, "session_id": _own_session(ledger, project)})
                assert not own.is_error, f"{name}({args}) in alice's own session: {own.content}"


def test_parameter_checks_record_only_sessions_of_the_caller(world: tuple[Ledger, Path, str]) -> None:
    """The hole as found: manage_task(update) and manage_context(add_insight) took bob's session and recorded
    it in alice's ParameterChecked event."""
    ledger, _, _ = world
    bobs = ledger.clock_in(BOB, "dev").session_id
    head = ledger.store.head()
    for call in (
        lambda: ledger.manage_task(ALICE, "update", {"task_id": "t-1", **UPDATE}, bobs),
        lambda: ledger.manage_context(ALICE, "add_insight", {"task_id": "t-1", "insight": "x" * 20}, bobs),
    ):
        with pytest.raises(Exception, match="belongs to another agent"):
            call()
    assert ledger.store.head() == head
    assert not [r for r in ledger.store.iter_events(types=["ParameterChecked"]) if r.meta.get("session_id") == bobs]


# --- REST -----------------------------------------------------------------------------------------------------

# Minimal valid bodies of every REST route that writes in a session ("{s}" is the session id).
REST_CASES: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("post", "/sessions/{session_id}/clock-out"): ("/sessions/{s}/clock-out", {}),
    ("post", "/memory/blocks"): ("/memory/blocks", {"content": STATEMENT}),
    ("post", "/memory/recall"): ("/memory/recall", {"query": "refresh"}),
    ("post", "/memory/outcome"): ("/memory/outcome", {"block_ids": [BLOCK_ID], "signal": 1}),
    ("post", "/memory/search"): ("/memory/search", {"query": "refresh"}),
    ("post", "/memory/blocks/{block_id}/supersede"): (
        f"/memory/blocks/{BLOCK_ID}/supersede",
        {"content": "A block alice rated and then corrected."},
    ),
    ("post", "/compliance/assert"): ("/compliance/assert", {}),
    ("post", "/anchors"): ("/anchors", {"role": "dev", "proof_candidate": "not a proof yet"}),
    ("post", "/anchors/challenges"): ("/anchors/challenges", {}),
    ("post", "/tasks/{task_id}/transitions"): ("/tasks/t-1/transitions", {"to_status": "active"}),
    ("post", "/api/v1/memory"): ("/api/v1/memory", {"prompt": STATEMENT}),
}
ADMIN_ROUTES = {  # a person acts on any agent's session
    ("post", "/admin/sessions/{session_id}/anchor/unlock"),
    ("post", "/sessions/{session_id}/erase"),
}


def _session_routes(openapi: dict[str, Any]) -> set[tuple[str, str]]:
    """Every writing route with a session_id in its path or JSON body."""
    schemas = openapi["components"]["schemas"]
    found = set()
    for path, ops in openapi["paths"].items():
        for method, op in ops.items():
            if method == "get":
                continue
            params = {p["name"] for p in op.get("parameters", [])}
            ref = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")
            body = set(schemas[ref.rsplit("/", 1)[1]].get("properties", {})) if ref else set()
            if "session_id" in params | body:
                found.add((method, path))
    return found


def test_every_rest_route_that_writes_in_a_session_refuses_another_agents_with_403(
    world: tuple[Ledger, Path, str], tmp_path: Path
) -> None:
    ledger, project, url = world
    alice = {"Authorization": f"Bearer {ledger.issue_api_key(OPERATOR, 'alice').api_key}"}
    ledger.issue_api_key(OPERATOR, "bob")
    app = build_app(ledger, Settings(home=tmp_path, database_url=url))
    with TestClient(app) as http:
        assert _session_routes(http.get("/openapi.json").json()) == set(REST_CASES) | ADMIN_ROUTES
        for key in REST_CASES:
            for sid, status, problem in [
                (ledger.clock_in(BOB, "dev").session_id, 403, "belongs to another agent"),
                (UNKNOWN, 404, "does not exist"),
                ("not-a-session", 422, "is not a session id"),
                (_own_session(ledger, project, closed=True), 409, "has been clocked out"),
            ]:
                method, (path, body) = key[0], own_block(ledger, REST_CASES[key])
                in_body = {} if "{s}" in path else {"session_id": sid}
                head = ledger.store.head()
                response = http.request(method, path.format(s=sid), json={**body, **in_body}, headers=alice)
                assert response.status_code == status, f"{key} with {sid}: {response.status_code} {response.text}"
                assert problem in response.json()["error"]["message"]
                assert ledger.store.head() == head, f"{key} appended with session {sid}"
