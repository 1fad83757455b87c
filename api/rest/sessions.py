"""REST routes of sessions: clock in (``POST /sessions``), clock out, and a session's state."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, status
from pydantic import Field

from api.fields import FOCUS, WORKING_DIR
from api.params import AsOf, Position
from api.rest.context import Caller, StrictBody
from api.rest.deps import LedgerDep
from ledger.sessions.report import SessionInfo, SessionState


class ClockIn(StrictBody):
    role: str = Field(description="the agent's role, e.g. dev")
    working_dir: Annotated[str | None, WORKING_DIR] = None
    focus: Annotated[str | None, FOCUS] = None


def router() -> APIRouter:
    """``POST /sessions``, ``POST /sessions/{id}/clock-out`` and ``GET /sessions/{id}``."""
    api = APIRouter(tags=["sessions"])

    @api.post("/sessions", response_model=SessionInfo, status_code=status.HTTP_201_CREATED)
    async def clock_in(ledger: LedgerDep, body: ClockIn, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.clock_in(actor, body.role, body.working_dir, body.focus))

    @api.post("/sessions/{session_id}/clock-out", response_model=SessionInfo)
    async def clock_out(ledger: LedgerDep, session_id: str, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.clock_out(actor, session_id))

    @api.get("/sessions/{session_id}", response_model=SessionState)
    async def session_state(
        ledger: LedgerDep,
        session_id: str,
        who: Caller,
        as_of: AsOf = None,
        position: Position = None,
    ) -> Any:
        return await who.run(
            lambda actor: ledger.session_state(session_id, as_of=as_of, position=position, viewer=actor)
        )

    return api
