"""The brain API (seed 003 Layer B) on real parts: the seed's AC-B2..AC-B6 as plain JSON-RPC POSTs against
`compliance-ledger serve` and a loopback uvicorn server, the REST route ``/api/v1/memory``, and the MCP tools
on an in-memory client."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.core.events import MemoryRemembered, MemorySearched
from ledger.memory.decisions import MAX_CONTENT_CHARS, normalise
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.e2e.test_http import rpc
from tests.server_support import HTTP_TIMEOUT, compliance_ledger_serve, running

SEED_STATEMENT = (
    "Test contribution from MCP wrapper acceptance test — this is a declarative statement over fifty characters long."
)
ROLES = "Role separation keeps reviewers independent from the implementers of every change."
OPERATOR = Actor("operator", "cli", admin=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def serve(tmp_path: Path) -> Callable[..., Any]:
    def start(ledger: Ledger, **overrides: Any) -> Any:
        return running(ledger, Settings(home=tmp_path, **overrides))

    return start


def call(http: httpx.Client, base: str, name: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = rpc(http, base, "tools/call", {"name": name, "arguments": args}, **kw)["result"]
    assert not result["isError"], result["content"]
    return dict(result["structuredContent"])


def ask(http: httpx.Client, base: str, body: dict[str, Any], status: int = 200, **kw: Any) -> dict[str, Any]:
    response = http.post(f"{base}/api/v1/memory", json=body, **kw)
    assert response.status_code == status, response.text
    return dict(response.json())


def thought_id(ledger: Ledger, text: str) -> str:
    """The id a thought of ``text`` gets in ``ledger`` (a keyed hash of its normalised text)."""
    return ledger.kernel.block_id(normalise(text))


def remembered(ledger: Ledger) -> list[Any]:
    return list(ledger.store.iter_events(types=[MemoryRemembered.type_name]))


def searches(ledger: Ledger) -> list[Any]:
    return list(ledger.store.iter_events(types=[MemorySearched.type_name]))


def key_for(ledger: Ledger, agent: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {ledger.issue_api_key(OPERATOR, agent).api_key}"}


# --- the seed's acceptance commands against `compliance-ledger serve` ------------------------------------------


def test_the_seed_ac_b2_to_b6_pass_against_compliance_ledger_serve(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    with (
        compliance_ledger_serve(tmp_path, db_url, LEDGER_CORS_ORIGINS='["*"]') as base,
        httpx.Client(headers={"Content-Type": "application/json"}, timeout=HTTP_TIMEOUT) as http,
    ):
        # AC-B2: initialize (the seed's protocol version is accepted and answered).
        init = rpc(
            http,
            base,
            "initialize",
            {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "test", "version": "1.0"}},
        )["result"]
        assert init["protocolVersion"] == "2024-11-05"
        assert "tools" in init["capabilities"]
        # AC-B3: tools/list
        listed = {t["name"]: t for t in rpc(http, base, "tools/list", {}, id=2)["result"]["tools"]}
        assert {"query_brain", "contribute_to_brain"} <= set(listed)
        for name in ("query_brain", "contribute_to_brain"):
            assert set(listed[name]["inputSchema"]["properties"]) == {"prompt", "context", "session_id"}
        # AC-B4: tools/call query_brain
        queried = call(http, base, "query_brain", {"prompt": "role separation"}, id=3)
        # AC-B5: tools/call contribute_to_brain with the seed's statement
        contributed = call(http, base, "contribute_to_brain", {"prompt": SEED_STATEMENT}, id=4)
        # AC-B6: curl -s -I -X OPTIONS (with CORS configured)
        options = httpx.options(f"{base}/mcp", timeout=HTTP_TIMEOUT)
    assert queried["trace"]["thoughts_retrieved"] == len(queried["result"]["sources"])
    assert queried["trace"]["thoughts_contributed"] == 0 and queried["trace"]["prompt_kind"] == "too_short"
    assert contributed["trace"]["thoughts_contributed"] == 1
    assert contributed["trace"]["thought_id"] == thought_id(ledger, SEED_STATEMENT)
    assert contributed["result"]["response"].startswith(f"Stored your thought {thought_id(ledger, SEED_STATEMENT)}.")
    assert options.status_code == 204
    assert options.headers["access-control-allow-origin"] == "*"
    assert "POST" in options.headers["access-control-allow-methods"]
    # The retrieval and the contribution are events of the calling agent, in real ledger sessions.
    query_session = ledger.session_state(queried["trace"]["session_id"])
    assert query_session.agent == "local" and query_session.role == "brain" and query_session.ended_at is None
    [stored] = [r for r in remembered(ledger) if r.event.block_id == thought_id(ledger, SEED_STATEMENT)]
    assert stored.agent == "local" and stored.event.session_id == contributed["trace"]["session_id"]
    assert stored.event.tags == ["brain/thought"]


def test_over_http_the_answers_carry_the_session_and_thought_ids_and_continue_a_session(
    make_ledger: LedgerFactory, serve: Any
) -> None:
    ledger = make_ledger()
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        first = call(http, base, "contribute_to_brain", {"prompt": ROLES, "context": "reviewing the workflow table"})
        sid = first["trace"]["session_id"]
        second = call(http, base, "query_brain", {"prompt": "Who reviews a change?", "session_id": sid})
        stamp = call(http, base, "assert_compliance", {"session_id": sid})
    assert first["trace"]["session_opened"] is True and first["trace"]["thought_id"] == thought_id(ledger, ROLES)
    assert ledger.session_state(sid).focus == "reviewing the workflow table"  # the context, as provenance
    assert second["trace"]["session_id"] == sid and second["trace"]["session_opened"] is False
    assert [s["thought_id"] for s in second["result"]["sources"]] == [thought_id(ledger, ROLES)]
    assert second["result"]["sources"][0]["contributor"] == "local"
    assert stamp["status"] == "PASS"  # the brain query was a recorded memory search in that session


def test_contribute_to_brain_answers_with_the_seeds_texts_and_retrieves_when_it_does_not_store(
    make_ledger: LedgerFactory, serve: Any
) -> None:
    ledger = make_ledger()
    question_text = "Why do reviewers never implement what they review in this workflow?"
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        stored = rpc(http, base, "tools/call", {"name": "contribute_to_brain", "arguments": {"prompt": ROLES}})
        before = len(remembered(ledger))
        question = rpc(
            http, base, "tools/call", {"name": "contribute_to_brain", "arguments": {"prompt": question_text}}
        )
        after = len(remembered(ledger))
    stored_text = stored["result"]["content"][0]["text"]
    assert stored_text.startswith("Thought stored successfully.\n\n")
    assert json.loads(stored_text.split("\n\n", 1)[1]) == stored["result"]["structuredContent"]
    assert stored["result"]["structuredContent"]["message"] == "Thought stored successfully."
    asked = question["result"]
    assert asked["isError"] is False
    text = asked["content"][0]["text"]
    assert text.startswith("Not stored (too short or interrogative). Still retrieved related thoughts:\n\n")
    answer = asked["structuredContent"]
    assert answer["message"] == "Not stored (too short or interrogative). Still retrieved related thoughts:"
    assert json.loads(text.split("\n\n", 1)[1]) == answer
    assert answer["trace"]["contribution"] == "not_stored" and answer["trace"]["thought_id"] is None
    assert [s["thought_id"] for s in answer["result"]["sources"]] == [thought_id(ledger, ROLES)]  # it still retrieved
    assert after == before  # and stored nothing
    [search] = [r for r in searches(ledger) if r.event.session_id == answer["trace"]["session_id"]]
    assert search.event.result_ids == [thought_id(ledger, ROLES)]


def test_contribute_to_brain_refuses_a_prompt_under_the_seeds_minimum_and_records_nothing(
    make_ledger: LedgerFactory, serve: Any
) -> None:
    ledger = make_ledger()
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        head = ledger.store.head()
        short = rpc(http, base, "tools/call", {"name": "contribute_to_brain", "arguments": {"prompt": "too short"}})
        impersonating = rpc(
            http,
            base,
            "tools/call",
            {"name": "query_brain", "arguments": {"prompt": "role separation", "agent_id": "thomas"}},
        )
        assert ledger.store.head() == head
    assert short["result"]["isError"] is True  # the seed's z.string().min(51)
    assert "more than 50 characters" in short["result"]["content"][0]["text"]
    assert "query_brain" in short["result"]["content"][0]["text"]
    assert impersonating["result"]["isError"] is True  # identity is never a tool argument


def test_a_thought_keeps_its_context_as_provenance_shown_with_it_in_search_results(
    make_ledger: LedgerFactory, serve: Any
) -> None:
    ledger = make_ledger()
    context = "reviewing the workflow table of the gate"
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        given = call(http, base, "contribute_to_brain", {"prompt": ROLES, "context": context})
        plain = call(http, base, "contribute_to_brain", {"prompt": SEED_STATEMENT})
        found = call(http, base, "query_brain", {"prompt": "role separation reviewers implementers"})
        over_rest = ask(http, base, {"prompt": "Who reviews the implementers?", "agent_id": "bob"})
    assert given["trace"]["context"] == context
    [rec] = [r for r in remembered(ledger) if r.event.block_id == given["trace"]["thought_id"]]
    assert rec.event.context == context  # recorded in the event itself
    [plain_rec] = [r for r in remembered(ledger) if r.event.block_id == plain["trace"]["thought_id"]]
    assert plain_rec.event.context is None
    for answer in (found, over_rest):
        [source] = [s for s in answer["result"]["sources"] if s["thought_id"] == thought_id(ledger, ROLES)]
        assert source["context"] == context and source["contributor"] == "local"
    # The provenance survives a restart: a new ledger on the same database folds it from the log.
    # ... and with the thought itself: its history (memory show, GET /memory/blocks/{id}) shows the stored context.
    assert ledger.memory_block(thought_id(ledger, ROLES)).history[0].detail["context"] == context
    answer = make_ledger().brain.ask(Actor("carol", "mcp"), "role separation reviewers")
    assert [s.context for s in answer.result.sources if s.thought_id == thought_id(ledger, ROLES)] == [context]


# --- CORS ---------------------------------------------------------------------------------------------------------

PREFLIGHT = {
    "Origin": "https://claude.ai",
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "content-type,mcp-session-id,authorization",
}


def test_cors_is_off_by_default(make_ledger: LedgerFactory, serve: Any) -> None:
    with serve(make_ledger()) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        bare = http.options(f"{base}/mcp")
        preflight = http.options(f"{base}/api/v1/memory", headers=PREFLIGHT)
        cross = http.post(
            f"{base}/api/v1/memory", json={"prompt": "role separation"}, headers={"Origin": "https://claude.ai"}
        )
        mcp = http.post(
            f"{base}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Origin": "https://claude.ai"},
        )
    for response in (bare, preflight, cross, mcp):
        assert "access-control-allow-origin" not in response.headers
    # OPTIONS answers as the README says, 204 with what the endpoint allows, but without CORS headers a browser's
    # preflight still fails.
    for response in (bare, preflight):
        assert response.status_code == 204 and response.headers["allow"] == "GET, POST, DELETE, OPTIONS"
        assert not any(name.startswith("access-control-") for name in response.headers)
    assert mcp.status_code == 403  # the MCP transport refuses a foreign Origin


def test_cors_star_answers_preflights_with_204_on_the_mcp_and_brain_routes_only(
    make_ledger: LedgerFactory, serve: Any
) -> None:
    with serve(make_ledger(), cors_origins=["*"]) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        preflights = [http.options(f"{base}{path}", headers=PREFLIGHT) for path in ("/mcp", "/api/v1/memory")]
        bare = http.options(f"{base}/api/v1/health")
        listed = http.post(
            f"{base}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Origin": "https://claude.ai"},
        )
        answered = http.post(
            f"{base}/api/v1/memory", json={"prompt": "role separation"}, headers={"Origin": "https://claude.ai"}
        )
        other = http.get(f"{base}/health", headers={"Origin": "https://claude.ai"})
        other_preflight = http.options(f"{base}/sessions", headers=PREFLIGHT)
    for response in preflights:
        assert response.status_code == 204 and response.content == b""
        assert response.headers["access-control-allow-origin"] == "*"
        assert response.headers["access-control-allow-methods"] == "GET, POST, DELETE, OPTIONS"
        allowed_headers = response.headers["access-control-allow-headers"].lower()
        assert {"content-type", "mcp-session-id", "authorization", "x-api-key"} <= set(allowed_headers.split(", "))
    assert bare.status_code == 204 and bare.headers["access-control-allow-origin"] == "*"
    assert bare.headers["access-control-expose-headers"] == "Mcp-Session-Id, Retry-After, X-Request-ID"
    assert listed.status_code == 200 and listed.headers["access-control-allow-origin"] == "*"
    assert "query_brain" in listed.text
    assert answered.status_code == 200 and answered.headers["access-control-allow-origin"] == "*"
    assert answered.headers["access-control-expose-headers"] == "Mcp-Session-Id, Retry-After, X-Request-ID"
    assert other.status_code == 200 and "access-control-allow-origin" not in other.headers
    assert other_preflight.status_code == 405 and "access-control-allow-origin" not in other_preflight.headers


def test_cors_with_named_origins_allows_only_those(make_ledger: LedgerFactory, serve: Any) -> None:
    with serve(make_ledger(), cors_origins=["https://claude.ai"]) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        allowed = http.options(f"{base}/mcp", headers=PREFLIGHT)
        refused = http.options(f"{base}/mcp", headers={**PREFLIGHT, "Origin": "https://evil.example"})
        foreign = http.post(
            f"{base}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Origin": "https://evil.example"},
        )
    assert allowed.status_code == 204 and allowed.headers["access-control-allow-origin"] == "https://claude.ai"
    assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
    assert foreign.status_code == 403 and "access-control-allow-origin" not in foreign.headers


def test_a_browser_preflight_may_send_every_header_current_mcp_clients_send(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    """What the TypeScript SDK sends after initialize (protocol version, session, resumption, the SEP-2243 routing
    headers, trace context), from a page on an allowed origin, against `compliance-ledger serve`."""
    mcp_headers = "content-type,mcp-protocol-version,mcp-session-id,mcp-method,mcp-name,last-event-id"
    sent = f"{mcp_headers},authorization,traceparent,tracestate"
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    make_ledger(url)
    with (
        compliance_ledger_serve(tmp_path, url, LEDGER_CORS_ORIGINS='["https://app.example"]') as base,
        httpx.Client() as http,
    ):
        preflights = {
            method: http.options(
                f"{base}/mcp",
                headers={
                    "Origin": "https://app.example",
                    "Access-Control-Request-Method": method,
                    "Access-Control-Request-Headers": sent,
                },
            )
            for method in ("POST", "GET", "DELETE")
        }
        posted = http.post(
            f"{base}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Origin": "https://app.example", "MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"},
        )
    for preflight in preflights.values():
        assert preflight.status_code == 204, preflight.text
        assert preflight.headers["access-control-allow-origin"] == "https://app.example"
        assert set(sent.split(",")) <= set(preflight.headers["access-control-allow-headers"].lower().split(", "))
    assert posted.status_code == 200 and posted.headers["access-control-allow-origin"] == "https://app.example"
    exposed = posted.headers["access-control-expose-headers"].lower().split(", ")
    assert {"mcp-session-id", "retry-after"} <= set(exposed)


def test_a_cors_origin_must_be_star_or_an_origin() -> None:
    assert Settings(cors_origins=["https://claude.ai/", "*"]).cors_origins == ["https://claude.ai", "*"]
    with pytest.raises(ValueError, match="scheme://host"):
        Settings(cors_origins=["claude.ai/path"])


# --- REST: POST /api/v1/memory ------------------------------------------------------------------------------------


def test_a_declarative_statement_is_stored_with_its_contributor_and_found_by_others(
    make_ledger: LedgerFactory, db_url: str, serve: Any
) -> None:
    ledger = make_ledger(db_url)
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        stored = ask(http, base, {"prompt": ROLES, "agent_id": "alice", "agent_name": "Alice A."})
        found = ask(http, base, {"prompt": "Who reviews the implementers' change?", "agent_id": "bob"})
    trace = stored["trace"]
    assert trace["agent_id"] == "alice" and trace["agent_name"] == "Alice A." and trace["agent_id_ignored"] is False
    assert trace["thoughts_contributed"] == 1 and trace["contribution_threshold_met"] is True
    assert trace["contribution"] == "stored" and trace["thought_id"] == thought_id(ledger, ROLES)
    session = ledger.session_state(trace["session_id"])
    assert session.agent == "alice" and session.role == "brain" and session.ended_at is None
    [rec] = [r for r in remembered(ledger) if r.event.block_id == trace["thought_id"]]
    assert rec.agent == "alice" and rec.event.content == ROLES and rec.event.category == "thought"
    assert found["trace"]["agent_id"] == "bob" and found["trace"]["thoughts_contributed"] == 0
    assert found["trace"]["prompt_kind"] == "question"
    [source] = [s for s in found["result"]["sources"] if s["thought_id"] == thought_id(ledger, ROLES)]
    assert source["contributor"] == "alice" and source["content"] == ROLES
    assert found["result"]["response"].startswith("Found ")
    [search] = [r for r in searches(ledger) if r.event.session_id == found["trace"]["session_id"]]
    assert search.agent == "bob" and thought_id(ledger, ROLES) in search.event.result_ids


@pytest.mark.parametrize(
    ("prompt", "kind"),
    [
        ("Why does role separation keep reviewers independent from the implementers of a change?", "question"),
        ("How do reviewers stay independent from the implementers of every change in the workflow", "question"),
        ("Based on that, reviewers should stay independent from the implementers of every change.", "follow_up"),
        ("As you said, role separation keeps reviewers independent from the implementers of changes.", "follow_up"),
        ("role separation", "too_short"),
    ],
    ids=["why-question", "how-question", "based-on", "as-you-said", "short"],
)
def test_questions_follow_ups_and_short_prompts_retrieve_but_are_not_stored(
    make_ledger: LedgerFactory, serve: Any, prompt: str, kind: str
) -> None:
    ledger = make_ledger()
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        ask(http, base, {"prompt": ROLES, "agent_id": "alice"})
        before = len(remembered(ledger))
        answer = ask(http, base, {"prompt": prompt, "agent_id": "bob"})
    trace = answer["trace"]
    assert trace["prompt_kind"] == kind and trace["contribution"] == "not_stored"
    assert trace["thoughts_contributed"] == 0 and trace["thought_id"] is None
    assert trace["contribution_threshold_met"] is False
    assert trace["thoughts_retrieved"] >= 1  # every call retrieves
    assert len(remembered(ledger)) == before
    assert "Not stored as a thought" in answer["result"]["response"]


def test_a_duplicate_statement_reports_the_existing_thought_and_is_not_a_contribution(
    make_ledger: LedgerFactory, serve: Any
) -> None:
    ledger = make_ledger()
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        first = ask(http, base, {"prompt": ROLES, "agent_id": "alice"})
        again = ask(http, base, {"prompt": "  " + ROLES.upper() + " ", "agent_id": "bob"})
    assert first["trace"]["thoughts_contributed"] == 1
    trace = again["trace"]
    assert trace["thought_id"] == first["trace"]["thought_id"]
    assert trace["contribution"] == "duplicate" and trace["thoughts_contributed"] == 0
    assert trace["contribution_threshold_met"] is True
    assert "already exists" in again["result"]["response"]
    assert [r.agent for r in remembered(ledger) if r.event.block_id == trace["thought_id"]] == ["alice"]


def test_highways_appear_after_3_retrievals_by_2_agents(make_ledger: LedgerFactory, serve: Any) -> None:
    ledger = make_ledger()
    alice, bob = key_for(ledger, "alice"), key_for(ledger, "bob")
    lonely = "Bench results are ratios against a baseline measured in the same run on the same machine."
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        ask(http, base, {"prompt": ROLES, "agent_id": "alice"}, headers=alice)
        ask(http, base, {"prompt": lonely, "agent_id": "alice"}, headers=alice)
        answers = [
            ask(http, base, {"prompt": "role separation", "agent_id": who}, headers=key)
            for who, key in [("alice", alice), ("alice", alice), ("bob", bob)]
        ]
        alone = [ask(http, base, {"prompt": "bench baseline ratios"}, headers=alice) for _ in range(4)]
        health = http.get(f"{base}/api/v1/health")
    thought = thought_id(ledger, ROLES)
    assert [a["result"]["highways_nearby"] for a in answers[:2]] == [[], []]
    [highway] = answers[2]["result"]["highways_nearby"]
    assert highway == {"thought_id": thought, "content": ROLES, "retrievals": 3, "agents": 2}
    [source] = [s for s in answers[2]["result"]["sources"] if s["thought_id"] == thought]
    assert source["highway"] is True and source["retrievals"] == 3
    assert "is a highway" in answers[2]["result"]["response"]
    # Retrieved 4 times, but by one agent only: not a highway.
    assert alone[-1]["result"]["highways_nearby"] == []
    assert [
        s["retrievals"] for s in alone[-1]["result"]["sources"] if s["thought_id"] == thought_id(ledger, lonely)
    ] == [4]
    assert health.status_code == 200 and health.json()["highways"] == 1


def test_with_api_keys_the_key_names_the_agent_not_the_body(make_ledger: LedgerFactory, serve: Any) -> None:
    ledger = make_ledger()
    alice = key_for(ledger, "alice")
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        answer = ask(http, base, {"prompt": ROLES, "agent_id": "bob", "agent_name": "Bob"}, headers=alice)
        same = ask(http, base, {"prompt": "role separation", "agent_id": "alice"}, headers=alice)
        head = ledger.store.head()
        anonymous = ask(http, base, {"prompt": "role separation", "agent_id": "alice"}, status=401)
        assert ledger.store.head() == head
        over_mcp = call(http, base, "query_brain", {"prompt": "role separation"}, headers=alice)
    trace = answer["trace"]
    assert trace["agent_id"] == "alice" and trace["agent_id_ignored"] is True
    assert ledger.session_state(trace["session_id"]).agent == "alice"
    assert [r.agent for r in remembered(ledger) if r.event.block_id == trace["thought_id"]] == ["alice"]
    assert same["trace"]["agent_id_ignored"] is False
    assert anonymous["error"]["code"] == "unauthorized"
    assert over_mcp["trace"]["agent_id"] == "alice"


def test_a_session_is_continued_only_by_its_own_agent(make_ledger: LedgerFactory, serve: Any) -> None:
    ledger = make_ledger()
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        first = ask(http, base, {"prompt": ROLES, "agent_id": "alice"})
        sid = first["trace"]["session_id"]
        again = ask(http, base, {"prompt": "role separation", "agent_id": "alice", "session_id": sid})
        head = ledger.store.head()
        other = ask(http, base, {"prompt": "role separation", "agent_id": "bob", "session_id": sid}, status=403)
        unknown = ask(
            http, base, {"prompt": "role separation", "agent_id": "bob", "session_id": "ses_" + "0" * 20}, status=404
        )
        assert ledger.store.head() == head
        ledger.clock_out(Actor("alice", "rest"), sid)
        closed = ask(http, base, {"prompt": "role separation", "agent_id": "alice", "session_id": sid}, status=409)
    assert again["trace"]["session_id"] == sid and again["trace"]["session_opened"] is False
    assert other["error"]["code"] == "forbidden" and "another agent" in other["error"]["message"]
    assert unknown["error"]["code"] == "not_found" and unknown["error"]["hint"]
    assert closed["error"]["code"] == "conflict"


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"prompt": ""}, 422, "prompt is empty"),
        ({"prompt": "   "}, 422, "prompt is empty"),
        ({"prompt": "x " * (MAX_CONTENT_CHARS // 2 + 1)}, 422, f"the limit is {MAX_CONTENT_CHARS}"),
        ({"prompt": "?!?"}, 422, "no searchable words"),
        ({"prompt": "role separation", "context": "x" * 2001}, 422, "context is"),
        ({"prompt": "role separation", "agent_id": ""}, 422, "agent name"),
        ({"prompt": "role separation", "session_id": "not-a-session"}, 422, "session"),
        ({"agent_id": "alice"}, 422, "prompt"),
        ({"prompt": "role separation", "agent": "alice"}, 422, "unknown field 'agent'"),
    ],
    ids=["empty", "blank", "too-long", "no-words", "long-context", "bad-agent", "bad-session", "no-prompt", "extra"],
)
def test_bad_input_is_refused_with_a_hint_and_records_nothing(
    make_ledger: LedgerFactory, serve: Any, body: dict[str, Any], status: int, says: str
) -> None:
    ledger = make_ledger()
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        head = ledger.store.head()
        answer = ask(http, base, body, status=status)
        assert ledger.store.head() == head
    assert set(answer["error"]) == {"code", "message", "hint"}
    assert says in answer["error"]["message"] and answer["error"]["hint"]


def test_the_brain_health_route(make_ledger: LedgerFactory, serve: Any) -> None:
    ledger = make_ledger()
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        health = http.get(f"{base}/api/v1/health")
    assert health.status_code == 200
    assert health.json() == {
        "status": "ok",
        "database": "sqlite",
        "head_position": ledger.store.head()[0],
        "highways": 0,
    }


# --- MCP on an in-memory client (stdio-like: one agent, a default session) ----------------------------------------


@pytest.mark.anyio
async def test_over_stdio_the_brain_uses_the_default_session(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    async with Client(build_mcp(ledger, agent="agent-a", open_default_session=True)) as client:
        contributed = (await client.call_tool("contribute_to_brain", {"prompt": ROLES})).structured_content
        queried = (await client.call_tool("query_brain", {"prompt": "role separation"})).structured_content
        stamp = (await client.call_tool("assert_compliance", {})).structured_content
        explicit = await client.call_tool("query_brain", {"prompt": "roles", "session_id": "ses_" + "1" * 20})
    assert contributed is not None and queried is not None and stamp is not None
    sid = contributed["trace"]["session_id"]
    assert queried["trace"]["session_id"] == sid and contributed["trace"]["session_opened"] is False
    assert ledger.session_state(sid).agent == "agent-a" and ledger.session_state(sid).role == "agent"
    assert [s["contributor"] for s in queried["result"]["sources"]] == ["agent-a"]
    assert stamp["status"] == "PASS"
    assert explicit.is_error is True
