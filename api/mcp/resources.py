"""Read-only MCP resources: what agents and people read rather than do — the caller's compliance report, a memory
block by id, and the latest signed checkpoint. Each is JSON, and the caller comes from the transport, as for tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Annotations

from api.mcp.base import reading
from api.mcp.context import ToolContext
from ledger.core.errors import InvalidInput, LedgerError, NotFound

REPORT_URI = "ledger://reports/compliance"
BLOCK_URI = "ledger://memory/blocks/{block_id}"
CHECKPOINT_URI = "ledger://checkpoints/latest"
JSON = "application/json"
NO_CHECKPOINT_HINT = (
    "serve writes one at start when the log has events, then every LEDGER_CHECKPOINT_EVERY_EVENTS events; "
    "or run `compliance-ledger checkpoint`"
)
NO_FILE_HINT = "read it from a server started by `compliance-ledger serve` or `compliance-ledger mcp`"


async def _answer(fn: Callable[[], Any]) -> str:
    """Run a ledger read in a worker thread and render it as JSON; a ledger error becomes a resource error that
    says what to send or do instead."""
    try:
        result = await anyio.to_thread.run_sync(fn)
    except NotFound as exc:
        raise ResourceNotFoundError(f"{exc.message}. {exc.hint}") from exc
    except InvalidInput as exc:
        raise MCPError(code=INVALID_PARAMS, message=f"{exc.message}. {exc.hint}") from exc
    except LedgerError as exc:
        raise ResourceError(f"{exc.message}. {exc.hint}" if exc.hint else exc.message) from exc
    return result if isinstance(result, str) else json.dumps(result, indent=2, ensure_ascii=False)


def register(mcp: MCPServer, tools: ToolContext, checkpoint_file: Path | None = None) -> None:
    """Add the compliance report and latest checkpoint resources and the memory block template."""
    ledger = tools.ledger
    for_people_and_agents = Annotations(audience=["user", "assistant"])

    def caller() -> Any:
        try:
            return tools.actor(reading())
        except ToolError as exc:  # the transport's credential was refused
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from exc

    @mcp.resource(
        REPORT_URI,
        name="compliance_report",
        title="Your compliance report",
        description="Your agent's compliance counts, live: searches, stamp requests passed and failed, anchor attempts "
        "and lockouts, task transitions and their refusals.",
        mime_type=JSON,
        annotations=for_people_and_agents,
    )
    async def compliance_report() -> str:
        who = caller()
        return await _answer(lambda: ledger.compliance_report(who.agent, viewer=who).model_dump_json(indent=2))

    @mcp.resource(
        BLOCK_URI,
        name="memory_block",
        title="Memory block",
        description="One memory block by id (blk_ and 24 hex digits, as recall and search return them): its text, "
        "tags, scores and every event that touched it.",
        mime_type=JSON,
        annotations=for_people_and_agents,
    )
    async def memory_block(block_id: str) -> str:
        caller()
        return await _answer(lambda: ledger.memory_block(block_id).model_dump_json(indent=2))

    @mcp.resource(
        CHECKPOINT_URI,
        name="latest_checkpoint",
        title="Latest signed checkpoint",
        description="The newest checkpoint of the log the server wrote (check it with the ledger's public key); "
        '{"checkpoint": null, ...} saying how to get one when none has been written yet.',
        mime_type=JSON,
        annotations=Annotations(audience=["user"]),
    )
    async def latest_checkpoint() -> str:
        caller()

        def latest() -> dict[str, Any]:
            found = ledger.latest_checkpoint_in(checkpoint_file) if checkpoint_file is not None else None
            if found is not None:
                return found.document()
            if checkpoint_file is None:
                return {"checkpoint": None, "message": "this server reads no checkpoint file", "hint": NO_FILE_HINT}
            return {"checkpoint": None, "message": "no checkpoint has been written yet", "hint": NO_CHECKPOINT_HINT}

        return await _answer(latest)
