"""REST routes an auditor reads: the log (``GET /events``) and the compliance report."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel

from api.params import AsOf, Position
from api.render import event_dict
from api.rest.context import Caller
from ledger.core.limits import MAX_INT64
from ledger.service import Actor, Ledger
from ledger.sessions.report import ComplianceReport

MAX_EVENTS_PAGE = 1000


class EventsPage(BaseModel):
    events: list[dict[str, Any]]
    next_after: int | None


def router(ledger: Ledger) -> APIRouter:
    """``GET /events`` and ``GET /reports/compliance``."""
    api = APIRouter()

    @api.get("/events", response_model=EventsPage, tags=["audit"])
    async def events(
        who: Caller,
        stream: str | None = None,
        type: str | None = None,
        after: int = Query(0, ge=0, le=MAX_INT64),
        limit: int = Query(100, ge=1, le=MAX_EVENTS_PAGE),
    ) -> Any:
        """The log in position order; an agent key sees only the events recorded for it."""

        def page(actor: Actor) -> EventsPage:
            rows, next_after = ledger.events_page(actor, after=after, limit=limit, stream=stream, event_type=type)
            return EventsPage(events=[event_dict(r) for r in rows], next_after=next_after)

        return await who.run(page)

    @api.get("/reports/compliance", response_model=ComplianceReport, tags=["reports"])
    async def compliance_report(
        who: Caller,
        agent: str | None = None,
        as_of: AsOf = None,
        position: Position = None,
    ) -> Any:
        return await who.run(
            lambda actor: ledger.compliance_report(agent, as_of=as_of, position=position, viewer=actor)
        )

    return api
