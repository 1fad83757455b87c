"""Protocol errors carry the JSON-RPC codes the MCP specification names: -32602 Invalid params for an unknown tool,
prompt or resource and for prompt arguments that do not fit, -32601 for an unknown method, -32603 for a prompt that
fails; arguments a tool rejects stay tool errors (``isError``) a model can correct. Through the Python SDK's client
in memory and as plain JSON-RPC over HTTP to a loopback server."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from api.mcp.server import build_mcp
from ledger.service import Ledger
from tests.conftest import LedgerFactory
from tests.e2e.test_http import serve  # noqa: F401 (fixture)

INVALID_PARAMS, METHOD_NOT_FOUND, INTERNAL_ERROR = -32602, -32601, -32603


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def stdio_like(ledger: Ledger) -> Client:
    return Client(build_mcp(ledger, agent="a", open_default_session=True))


@pytest.mark.anyio
async def test_an_unknown_tool_is_invalid_params_and_records_nothing(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    async with stdio_like(ledger) as client:
        head = ledger.store.head()
        with pytest.raises(MCPError) as raised:
            await client.call_tool("no_such_tool", {})
        assert ledger.store.head() == head
    assert raised.value.error.code == INVALID_PARAMS
    assert raised.value.error.message.startswith("Unknown tool: 'no_such_tool'")
    assert raised.value.error.data == {"name": "no_such_tool"}


@pytest.mark.anyio
async def test_an_argument_a_tool_rejects_stays_a_tool_error(make_ledger: LedgerFactory) -> None:
    async with stdio_like(make_ledger()) as client:
        result = await client.call_tool("memory_search", {"query": "x", "limit": "many"})
    assert result.is_error is True and "limit" in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_an_unknown_prompt_is_invalid_params_and_names_the_prompts(make_ledger: LedgerFactory) -> None:
    async with stdio_like(make_ledger()) as client:
        with pytest.raises(MCPError) as raised:
            await client.get_prompt("no_such_prompt")
    assert raised.value.error.code == INVALID_PARAMS
    assert raised.value.error.message == (
        "Unknown prompt: 'no_such_prompt'; the prompts are: compliance_grounding, memory_guide, brain_workflow"
    )


@pytest.mark.anyio
async def test_a_prompt_argument_the_prompt_does_not_take_is_invalid_params(make_ledger: LedgerFactory) -> None:
    async with stdio_like(make_ledger()) as client:
        with pytest.raises(MCPError) as raised:
            await client.get_prompt("memory_guide", {"topic": "decay"})
    assert raised.value.error.code == INVALID_PARAMS
    assert "unknown arguments ['topic']" in raised.value.error.message
    assert "the arguments it takes: none" in raised.value.error.message


@pytest.mark.anyio
async def test_a_missing_required_prompt_argument_is_invalid_params_and_a_failing_prompt_internal_error(
    make_ledger: LedgerFactory,
) -> None:
    server = build_mcp(make_ledger(), agent="a")

    @server.prompt()
    def greet(name: str) -> str:
        """Greets NAME."""
        return f"Hello {name}"

    @server.prompt()
    def broken() -> str:
        """Fails."""
        raise RuntimeError("boom")

    async with Client(server) as client:
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("greet")
        greeted = await client.get_prompt("greet", {"name": "Ada"})
        with pytest.raises(MCPError) as failing:
            await client.get_prompt("broken")
    assert missing.value.error.code == INVALID_PARAMS
    assert "missing required arguments ['name']" in missing.value.error.message
    assert greeted.messages[0].content.text == "Hello Ada"  # type: ignore[union-attr]
    assert failing.value.error.code == INTERNAL_ERROR
    assert failing.value.error.message == "Error rendering prompt 'broken'"  # the cause stays in the server log


@pytest.mark.anyio
async def test_an_unknown_resource_is_invalid_params_with_its_uri(make_ledger: LedgerFactory) -> None:
    async with stdio_like(make_ledger()) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("ledger://no/such/thing")
    assert raised.value.error.code == INVALID_PARAMS
    assert raised.value.error.data == {"uri": "ledger://no/such/thing"}


def rpc_error(http: httpx.Client, base: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = http.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
        headers={"Accept": "application/json, text/event-stream"},
    )
    body = response.json()
    assert body["id"] == 7 and "result" not in body, body
    return dict(body["error"])


def test_over_http_each_protocol_error_has_the_code_the_specification_names(
    make_ledger: LedgerFactory,
    serve: Any,  # noqa: F811
) -> None:
    with serve(make_ledger()) as base, httpx.Client() as http:
        prompt = rpc_error(http, base, "prompts/get", {"name": "no_such_prompt"})
        tool = rpc_error(http, base, "tools/call", {"name": "no_such_tool", "arguments": {}})
        nameless = rpc_error(http, base, "tools/call", {"arguments": {}})
        method = rpc_error(http, base, "no/such/method", {})
    assert prompt["code"] == INVALID_PARAMS and prompt["message"].startswith("Unknown prompt: 'no_such_prompt'")
    assert tool["code"] == INVALID_PARAMS and tool["data"] == {"name": "no_such_tool"}
    assert nameless["code"] == INVALID_PARAMS
    assert method["code"] == METHOD_NOT_FOUND
