"""Credentials at the door on every interface: a real MCP client (in memory) and REST on a loopback server, on
SQLite and PostgreSQL. Each kind, in every tool or route that takes caller text, is a tool error / a 422
``secret_in_text`` that names the kind and the field and does not repeat the credential; nothing is appended, and
the credential is in no file under the ledger's home and not in the schema's ``pg_dump``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.core.events import MemoryRemembered, MemorySearched
from tests.conftest import LedgerFactory
from tests.mcp_support import call
from tests.secret_samples import SAMPLES, leaked_into_dump, leaked_into_files
from tests.server_support import HTTP_TIMEOUT, running

UPDATE = {
    "progress_made": "Refresh tokens now rotate on every use; the old one is revoked.",
    "files_modified": ["src/auth/refresh.py"],
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def mcp_calls(text: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """tool -> (the field its refusal names, its arguments with ``text`` in that field)."""
    return {
        "memory_remember": ("content", {"content": text, "tags": ["ops"]}),
        "memory_search": ("query", {"query": text}),
        "memory_recall": ("query", {"query": text}),
        "manage_task": ("work_notes", {"action": "update", "task_id": "t-1", "work_notes": text, **UPDATE}),
        "manage_context": ("insight", {"action": "add_insight", "task_id": "t-1", "insight": text}),
        "task_create": ("dna.notes", {"task_id": "t-2", "title": "Rotate keys", "dna": {"notes": text}}),
        "task_update_dna": ("set.blockers", {"task_id": "t-1", "dna": {"blockers": text}}),
        "contribute_to_brain": ("prompt", {"prompt": text}),
        "query_brain": ("context", {"prompt": "what do we know about deploys?", "context": text}),
    }


@pytest.mark.anyio
async def test_mcp_tools_refuse_each_kind_and_record_nothing(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    async with Client(build_mcp(ledger, agent="agent-a", open_default_session=True)) as client:
        await call(client, "memory_remember", {"content": "Deploys go through the staging pipeline first."})
        await call(client, "task_create", {"task_id": "t-1", "title": "Refresh tokens"})
        head = ledger.store.head()
        for sample in SAMPLES:
            for tool, (field, args) in mcp_calls(sample.text).items():
                result = await client.call_tool(tool, args)
                said = " ".join(getattr(c, "text", "") for c in result.content)
                assert result.is_error, (tool, said)
                assert f"{field}, line" in said and f"({sample.kind})" in said, (tool, said)
                assert sample.needle not in said and "store a reference" in said, tool
                assert ledger.store.head() == head, f"{tool} appended something"
    for sample in SAMPLES:
        assert leaked_into_files(tmp_path, sample.needle) == []
        if db_url.startswith("postgresql"):
            assert not leaked_into_dump(db_url, sample.needle)


def test_rest_routes_refuse_each_kind_with_a_422_and_record_nothing(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        assert http.post("/tasks", json={"task_id": "t-1", "title": "Refresh tokens"}).status_code == 201
        head = ledger.store.head()
        for sample in SAMPLES:
            routes = {
                "/memory/blocks": ("content", {"content": sample.text, "session_id": sid}),
                "/memory/search": ("query", {"query": sample.text, "session_id": sid}),
                "/memory/recall": ("query", {"query": sample.text, "session_id": sid}),
                "/sessions": ("focus", {"role": "dev", "focus": sample.text}),
                "/tasks": ("dna.notes", {"task_id": "t-2", "title": "Rotate", "dna": {"notes": sample.text}}),
                "/tasks/t-1/dna": ("set.blockers", {"set": {"blockers": sample.text}}),
                "/api/v1/memory": ("prompt", {"prompt": sample.text}),
            }
            for route, (field, body) in routes.items():
                response = http.request("PATCH" if route.endswith("/dna") else "POST", route, json=body)
                assert response.status_code == 422, (route, response.text)
                error = response.json()["error"]
                assert error["code"] == "secret_in_text", (route, error)
                assert f"{field}, line" in error["message"] and f"({sample.kind})" in error["message"], route
                assert sample.needle not in response.text and error["hint"], route
                assert ledger.store.head() == head, f"{route} appended something"
    for sample in SAMPLES:
        assert leaked_into_files(tmp_path, sample.needle) == []
        if db_url.startswith("postgresql"):
            assert not leaked_into_dump(db_url, sample.needle)


def test_rest_with_redact_stores_the_placeholder(make_ledger: LedgerFactory, db_url: str, tmp_path: Path) -> None:
    ledger = make_ledger(db_url, secret_scan="redact")
    aws = next(s for s in SAMPLES if s.kind == "aws_access_key")
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        stored = http.post("/memory/blocks", json={"content": aws.text, "session_id": sid})
        found = http.post("/memory/search", json={"query": "staging uploads deploy policy", "session_id": sid})
    assert stored.status_code == 201 and found.status_code == 200
    [hit] = found.json()["results"]
    assert hit["block_id"] == stored.json()["block_id"]
    assert hit["content"] == "The staging uploads run as [REDACTED:aws_access_key] with the deploy policy attached."
    [remembered] = ledger.store.iter_events(types=[MemoryRemembered.type_name])
    [searched] = ledger.store.iter_events(types=[MemorySearched.type_name])
    assert isinstance(remembered.event, MemoryRemembered) and aws.needle not in remembered.event.content
    assert isinstance(searched.event, MemorySearched) and searched.event.query == "staging uploads deploy policy"
    assert leaked_into_files(tmp_path, aws.needle) == []
