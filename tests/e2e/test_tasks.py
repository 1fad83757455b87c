"""The seed's gated workflow end to end through real MCP clients (one per agent), REST on loopback, and the CLI."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from api.cli import app
from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.mcp_support import call
from tests.server_support import HTTP_TIMEOUT, running


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def agent(ledger: Ledger, name: str, role: str) -> AsyncIterator[tuple[Client, str]]:
    """An MCP client acting as ``name``, with a session opened in ``role``."""
    async with Client(build_mcp(ledger, agent=name)) as client:
        session = await call(client, "clock_in", {"role": role})
        yield client, session["session_id"]


@pytest.mark.anyio
async def test_claim_after_query_contribute_before_review_rework_forces_a_requery_over_mcp(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    async with agent(ledger, "dev-bot", "dev") as (dev, dev_sid), agent(ledger, "qa-bot", "qa") as (qa, qa_sid):
        await call(dev, "task_create", {"task_id": "gate-1", "title": "Gate the workflow on memory", "role": "dev"})
        tools = {t.name for t in (await dev.list_tools()).tools}
        lazy = await call(dev, "task_transition", {"task_id": "gate-1", "to_status": "active", "session_id": dev_sid})
        await call(dev, "memory_search", {"query": "workflow gates", "session_id": dev_sid})
        await call(dev, "task_update_dna", {"task_id": "gate-1", "dna": {"memory_query_session": dev_sid}})
        claimed = await call(
            dev, "task_transition", {"task_id": "gate-1", "to_status": "active", "session_id": dev_sid}
        )
        learned = await call(
            dev,
            "memory_remember",
            {"content": "Gates must verify DNA against the ledger, not just presence.", "session_id": dev_sid},
        )
        await call(
            dev, "task_update_dna", {"task_id": "gate-1", "dna": {"memory_contribution_id": learned["block_id"]}}
        )
        review = await call(dev, "task_transition", {"task_id": "gate-1", "to_status": "review", "session_id": dev_sid})
        rework = await call(qa, "task_transition", {"task_id": "gate-1", "to_status": "rework", "session_id": qa_sid})
        await call(dev, "task_update_dna", {"task_id": "gate-1", "dna": {"memory_query_session": dev_sid}})
        stale = await call(dev, "task_transition", {"task_id": "gate-1", "to_status": "active", "session_id": dev_sid})
        await call(dev, "memory_recall", {"query": "what did review say", "session_id": dev_sid})
        again = await call(dev, "task_transition", {"task_id": "gate-1", "to_status": "active", "session_id": dev_sid})
        got = await call(qa, "task_get", {"task_id": "gate-1"})
        listed = (await qa.call_tool("task_list", {"status": "active"})).structured_content
        forged = await qa.call_tool("task_update_dna", {"task_id": "gate-1", "dna": {"pdsa_ref": "not a url"}})
    assert {"task_create", "task_get", "task_list", "task_update_dna", "task_transition"} <= tools
    assert lazy["status"] == "refused" and lazy["codes"] == ["dna_missing"]
    assert claimed["status"] == "transitioned" and claimed["evidence"]["memory_query_session"] > 0
    assert review["status"] == "transitioned" and review["task"]["role"] == "qa"
    assert rework["status"] == "transitioned" and rework["task"]["dna"] == {}
    assert stale["status"] == "refused" and stale["codes"] == ["dna_unverified"]
    assert again["status"] == "transitioned" and got["status"] == "active" and got["role"] == "dev"
    assert listed is not None and [t["task_id"] for t in listed["result"]] == ["gate-1"]
    assert forged.is_error and "http(s) address" in str(forged.content)


def test_task_routes_on_loopback(make_ledger: LedgerFactory, db_url: str, tmp_path: Path) -> None:
    ledger = make_ledger(db_url)
    who = Actor("local", "rest")
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        created = http.post("/tasks", json={"task_id": "r-1", "title": "Over REST", "role": "dev"})
        sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        refused = http.post("/tasks/r-1/transitions", json={"to_status": "active", "session_id": sid})
        ledger.search(who, sid, "rest task")
        patched = http.patch("/tasks/r-1/dna", json={"set": {"memory_query_session": sid}})
        moved = http.post("/tasks/r-1/transitions", json={"to_status": "active", "session_id": sid})
        one = http.get("/tasks/r-1")
        earlier = http.get("/tasks/r-1", params={"position": created.json()["position"]})
        many = http.get("/tasks", params={"status": "active"})
        missing = http.get("/tasks/nope")
        bad = http.post("/tasks/r-1/transitions", json={"to_status": "flying", "session_id": sid})
        report = http.get("/reports/compliance").json()
    assert created.status_code == 201 and patched.status_code == 200
    assert refused.json()["status"] == "refused" and moved.json()["status"] == "transitioned"
    assert one.json()["status"] == "active" and earlier.json()["status"] == "ready"
    assert [t["task_id"] for t in many.json()] == ["r-1"]
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert bad.status_code == 422 and "send one of" in bad.json()["error"]["hint"]
    [local] = [a for a in report["agents"] if a["agent"] == "local"]
    assert local["transitions"] == 1 and local["refusal_reasons"] == {"dna_missing": 1}


def test_the_cli_speaks_the_seeds_update_dna_and_transition_habits(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    ledger = make_ledger(url)
    dev = Actor("dev-bot", "cli")

    def cli(*args: str) -> Any:
        return CliRunner().invoke(app, ["--home", str(tmp_path), "--db", url, *args], env={"COLUMNS": "200"})

    created = cli("task", "create", "c-1", "From the terminal", "--role", "dev")
    sid = ledger.clock_in(dev, "dev").session_id
    ledger.search(dev, sid, "terminal task")
    refused = cli("task", "transition", "c-1", "active", "dev", "--agent", "dev-bot")
    dna = cli("task", "dna", "c-1", f'{{"memory_query_session": "{sid}"}}', "--agent", "dev-bot")
    moved = cli("task", "transition", "c-1", "active", "dev", "--agent", "dev-bot")
    shown = cli("task", "show", "c-1", "--json")
    listed = cli("task", "list")
    bad_json = cli("task", "dna", "c-1", "{nope")
    assert created.exit_code == 0 and "c-1 [task] ready (role dev)" in created.stdout
    assert refused.exit_code == 1 and "DNA field memory_query_session is required" in refused.stderr
    assert dna.exit_code == 0 and f'dna.memory_query_session = "{sid}"' in dna.stdout
    assert moved.exit_code == 0 and "ready -> active (ready->active:dev)" in moved.stdout
    assert '"status": "active"' in shown.stdout and "c-1" in listed.stdout
    assert bad_json.exit_code == 2 and "not JSON" in bad_json.stderr


@pytest.mark.anyio
async def test_the_brains_session_and_thought_ids_are_what_the_dna_gates_accept(make_ledger: LedgerFactory) -> None:
    """Seed 003: query the brain, write its session into the DNA, claim; contribute, write the thought, hand on."""
    ledger = make_ledger()
    async with agent(ledger, "dev-bot", "dev") as (dev, dev_sid):
        await call(dev, "task_create", {"task_id": "brainy", "title": "Use the brain", "role": "dev"})
        asked = await call(dev, "query_brain", {"prompt": "how do we gate workflow transitions", "session_id": None})
        brain_session = asked["trace"]["session_id"]
        await call(dev, "task_update_dna", {"task_id": "brainy", "dna": {"memory_query_session": brain_session}})
        claimed = await call(
            dev, "task_transition", {"task_id": "brainy", "to_status": "active", "session_id": dev_sid}
        )
        given = await call(
            dev,
            "contribute_to_brain",
            {"prompt": "Workflow gates must check DNA against ledger events, never only that a field is set."},
        )
        thought = given["trace"]["thought_id"]
        await call(dev, "task_update_dna", {"task_id": "brainy", "dna": {"memory_contribution_id": thought}})
        handed = await call(dev, "task_transition", {"task_id": "brainy", "to_status": "review", "session_id": dev_sid})
    assert claimed["status"] == "transitioned", claimed["reasons"]
    assert handed["status"] == "transitioned", handed["reasons"]
    assert handed["evidence"]["memory_contribution_id"] > claimed["position"]


@pytest.mark.anyio
async def test_a_role_keyed_row_applies_to_the_tasks_role_not_the_callers_over_mcp(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    """Issue 10, hole 10 as found: a qa actor sent a liaison-owned task from review to rework, and the generic row
    re-routed it to dev. Seed 003: the ``:liaison`` row is chosen because the TASK is liaison's (requireRole);
    its allowedActors then say only liaison may act."""
    ledger = make_ledger(db_url)
    async with (
        agent(ledger, "qa-bot", "qa") as (qa, qa_sid),
        agent(ledger, "liaison-bot", "liaison") as (liaison, liaison_sid),
    ):
        for task_id, role in (("content-1", "liaison"), ("code-1", "dev")):
            await call(
                liaison, "task_create", {"task_id": task_id, "title": "In review", "role": role, "status": "review"}
            )
        by_qa = await call(qa, "task_transition", {"task_id": "content-1", "to_status": "rework", "session_id": qa_sid})
        kept = await call(qa, "task_get", {"task_id": "content-1"})
        by_liaison = await call(
            liaison, "task_transition", {"task_id": "content-1", "to_status": "rework", "session_id": liaison_sid}
        )
        # A dev-owned task in review takes the generic row: qa sends it back to dev, liaison may not.
        liaison_on_dev = await call(
            liaison, "task_transition", {"task_id": "code-1", "to_status": "rework", "session_id": liaison_sid}
        )
        qa_on_dev = await call(
            qa, "task_transition", {"task_id": "code-1", "to_status": "rework", "session_id": qa_sid}
        )
    assert by_qa["status"] == "refused" and by_qa["codes"] == ["actor_not_allowed"]
    assert "review->rework:liaison is for liaison, not qa" in by_qa["reasons"][0]
    assert (kept["status"], kept["role"]) == ("review", "liaison")
    assert by_liaison["status"] == "transitioned" and by_liaison["rule"] == "review->rework:liaison"
    assert by_liaison["task"]["role"] == "liaison"
    assert liaison_on_dev["status"] == "refused" and liaison_on_dev["codes"] == ["actor_not_allowed"]
    assert qa_on_dev["status"] == "transitioned" and qa_on_dev["rule"] == "review->rework"
    assert qa_on_dev["task"]["role"] == "dev"


@pytest.mark.anyio
async def test_a_contribution_must_be_one_the_brain_would_store_over_mcp(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    """Issue 10, hole 10: an "ok done" block no longer hands a task on; a declarative learning does."""
    ledger = make_ledger(db_url)
    async with agent(ledger, "dev-bot", "dev") as (dev, sid):
        await call(dev, "task_create", {"task_id": "ok-1", "title": "Hand me on", "role": "dev"})
        await call(dev, "memory_search", {"query": "hand on", "session_id": sid})
        await call(dev, "task_update_dna", {"task_id": "ok-1", "dna": {"memory_query_session": sid}})
        await call(dev, "task_transition", {"task_id": "ok-1", "to_status": "active", "session_id": sid})
        outcomes = []
        for content in (
            "ok done",
            "What should the next agent check first when the refresh tokens expire early?",
            "Refresh tokens must rotate on every use; the old token is revoked at once.",
        ):
            block = await call(dev, "memory_remember", {"content": content, "session_id": sid})
            await call(
                dev, "task_update_dna", {"task_id": "ok-1", "dna": {"memory_contribution_id": block["block_id"]}}
            )
            outcomes.append(
                await call(dev, "task_transition", {"task_id": "ok-1", "to_status": "review", "session_id": sid})
            )
    short, question, statement = outcomes
    for refused, why in ((short, "not longer than 50 characters"), (question, "it ends with '?'")):
        assert refused["status"] == "refused" and refused["codes"] == ["dna_unverified"]
        [reason] = refused["reasons"]
        assert reason.startswith("DNA memory_contribution_id: ") and why in reason
        assert "declarative statement of more than 50 characters" in reason and "memory_contribution_id" in reason
        assert refused["task"]["status"] == "active"
    assert statement["status"] == "transitioned" and statement["task"]["role"] == "qa"
