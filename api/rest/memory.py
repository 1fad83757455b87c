"""REST routes of memory: remember, list and inspect blocks, recall, curate, outcome, search (recorded) and lookup
(not recorded), supersede, forget."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, status
from fastapi.responses import JSONResponse
from pydantic import Field

from api.fields import (
    CONTENT,
    FORGET_REASON,
    LIMIT,
    NEW_CONTENT,
    NOTE,
    QUERY,
    RECALL_QUERY,
    SESSION_ID_FORM,
    SIGNAL,
    TOP_K,
    described,
    session_id_field,
)
from api.params import AsOf, Position
from api.rest.context import Caller, StrictBody
from api.rest.deps import LedgerDep
from ledger.core.errors import InvalidInput
from ledger.core.limits import MAX_LIMIT
from ledger.memory import report as memory
from ledger.memory.report import (
    BlockDetail,
    BlockList,
    CurateResult,
    ForgetResult,
    LookupResult,
    OutcomeResult,
    RecallResult,
    RememberResult,
    SupersedeResult,
)
from ledger.sessions.report import SearchResult

SESSION_ID = session_id_field(f"the session_id POST /sessions returned ({SESSION_ID_FORM})")
# A tag, the category and each block id are normalised (stripped, lower-cased, de-duplicated) before they are
# checked, so only the limits the raw value meets exactly are published here (the MCP schema states the forms).
TAGS = described(
    f"tags to find it by, e.g. ['project/db']: lower-case letters, digits, '_', '-', '.', '/' (at most "
    f"{memory.MAX_TAG_CHARS} characters each)",
    maxItems=memory.MAX_TAGS,
)
BLOCK_IDS = described("ids of the blocks the outcome is about", minItems=1)


class Remember(StrictBody):
    content: Annotated[str, CONTENT]
    tags: Annotated[list[str], TAGS] = Field(default_factory=list)
    session_id: Annotated[str | None, SESSION_ID] = None
    category: str | None = Field(
        None, description="one lower-case word, default 'knowledge'; 'observation' decays fastest"
    )


class Recall(StrictBody):
    query: Annotated[str | None, RECALL_QUERY] = None
    frame: Literal["self", "attention", "task"] = Field(
        "attention", description="self: identity and values; attention: relevant knowledge; task: goals and context"
    )
    top_k: Annotated[int, TOP_K] = 5
    session_id: Annotated[
        str | None,
        session_id_field("with a query, the recall issues this session's compliance token; without, none"),
    ] = None


class Outcome(StrictBody):
    block_ids: Annotated[list[str], BLOCK_IDS]
    signal: Annotated[float, SIGNAL]
    note: Annotated[str | None, NOTE] = None
    session_id: Annotated[str | None, SESSION_ID] = None


class Supersede(StrictBody):
    content: Annotated[str, NEW_CONTENT]
    session_id: Annotated[str | None, SESSION_ID] = None


class Forget(StrictBody):
    reason: Annotated[str, FORGET_REASON]


class Search(StrictBody):
    query: Annotated[str, QUERY]
    session_id: Annotated[str, SESSION_ID]
    limit: Annotated[int, LIMIT] = 10


def router() -> APIRouter:
    """The ``/memory/...`` routes."""
    api = APIRouter(tags=["memory"])

    @api.post(
        "/memory/blocks",
        response_model=RememberResult,
        responses={201: {"model": RememberResult, "description": "stored as a new block (200: a duplicate)"}},
    )
    async def remember(ledger: LedgerDep, body: Remember, who: Caller) -> Any:
        result = await who.run(
            lambda actor: ledger.remember(actor, body.content, body.tags, body.session_id, body.category)
        )
        code = status.HTTP_201_CREATED if result.status == "created" else status.HTTP_200_OK
        return JSONResponse(result.model_dump(mode="json"), status_code=code)

    @api.get("/memory/blocks", response_model=BlockList)
    async def memory_blocks(
        ledger: LedgerDep,
        who: Caller,
        tag: str | None = Query(None, description="a tag, or a prefix ending in '/' such as project/"),
        tier: str | None = Query(None, description="permanent | durable | standard | ephemeral"),
        archived: str | None = Query(None, description="false (default): live blocks; true: archived; any: both"),
        as_of: AsOf = None,
        position: Position = None,
        limit: int = Query(100, ge=1, le=MAX_LIMIT),
    ) -> Any:
        return await who.run(
            lambda _actor: ledger.memory_blocks(
                tag=tag, tier=tier, archived=_archived(archived), as_of=as_of, position=position, limit=limit
            )
        )

    @api.get("/memory/blocks/{block_id}", response_model=BlockDetail)
    async def memory_block(
        ledger: LedgerDep,
        block_id: str,
        who: Caller,
        as_of: AsOf = None,
        position: Position = None,
    ) -> Any:
        return await who.run(lambda _actor: ledger.memory_block(block_id, as_of=as_of, position=position))

    @api.post("/memory/recall", response_model=RecallResult)
    async def recall(ledger: LedgerDep, body: Recall, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.recall(actor, body.query, body.frame, body.top_k, body.session_id))

    @api.post("/memory/curate", response_model=CurateResult)
    async def curate(ledger: LedgerDep, who: Caller) -> Any:
        return await who.run(ledger.curate)

    @api.post("/memory/outcome", response_model=OutcomeResult)
    async def outcome(ledger: LedgerDep, body: Outcome, who: Caller) -> Any:
        return await who.run(
            lambda actor: ledger.outcome(actor, body.block_ids, body.signal, body.session_id, body.note)
        )

    @api.post("/memory/blocks/{block_id}/supersede", response_model=SupersedeResult)
    async def supersede(ledger: LedgerDep, block_id: str, body: Supersede, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.supersede(actor, block_id, body.content, body.session_id))

    @api.post("/memory/blocks/{block_id}/forget", response_model=ForgetResult)
    async def forget(ledger: LedgerDep, block_id: str, body: Forget, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.forget(actor, block_id, body.reason))

    @api.get("/memory/lookup", response_model=LookupResult)
    async def lookup(
        ledger: LedgerDep,
        who: Caller,
        query: str = Query(description="what to look for, as for POST /memory/search"),
        limit: int = Query(10, ge=1, le=MAX_LIMIT),
    ) -> Any:
        """The search of ``POST /memory/search`` (same index, same ranking) recorded nowhere: no event, no
        compliance token, no session. For people browsing memory (the dashboard's search box); an agent's search
        that earns a stamp is ``POST /memory/search``."""
        return await who.run(lambda _actor: ledger.memory_lookup(query, limit))

    @api.post("/memory/search", response_model=SearchResult)
    async def search(ledger: LedgerDep, body: Search, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.search(actor, body.session_id, body.query, body.limit))

    return api


def _archived(text: str | None) -> bool | None:
    """``archived`` query parameter: omitted or false -> live blocks, true -> archived ones, any -> both."""
    value = (text or "false").strip().lower()
    if value in {"false", "0", "no"}:
        return False
    if value in {"true", "1", "yes"}:
        return True
    if value in {"any", "all"}:
        return None
    raise InvalidInput(f"archived {text!r} is not known", "send archived=false (default), true or any")
