"""REST routes an auditor reads: the log (``GET /events``), the chain check (``GET /audit/verify``), and the
compliance report, cumulative (``GET /reports/compliance``) or per hour or day (``GET /reports/compliance/series``)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from api.params import AsOf, Position, WindowEnd, WindowStart
from api.render import event_dict
from api.rest.context import Caller
from api.rest.deps import LedgerDep
from ledger.core import access
from ledger.core.limits import MAX_INT64
from ledger.service import Actor
from ledger.sessions.report import ComplianceReport, ComplianceSeries

MAX_EVENTS_PAGE = 1000


class EventsPage(BaseModel):
    events: list[dict[str, Any]]
    next_after: int | None


class ChainCheck(BaseModel):
    """The hash chain recomputed from position 1 (``compliance-ledger verify`` over HTTP)."""

    ok: bool
    checked: int = Field(description="events whose hash was recomputed")
    head_position: int
    first_bad_position: int | None = None
    reason: str | None = None


def router() -> APIRouter:
    """``GET /events``, ``GET /audit/verify``, ``GET /reports/compliance`` and ``GET /reports/compliance/series``."""
    api = APIRouter()

    @api.get("/events", response_model=EventsPage, tags=["audit"])
    async def events(
        ledger: LedgerDep,
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

    @api.get("/audit/verify", response_model=ChainCheck, tags=["audit"])
    async def verify_chain(ledger: LedgerDep, who: Caller) -> Any:
        """Recompute every event's hash and its link to the one before; the first break, if any (auditor or
        admin: it reads every agent's events)."""

        def check(actor: Actor) -> ChainCheck:
            access.require_overview(actor, "the chain check")
            found = ledger.verify()
            return ChainCheck(
                ok=found.ok,
                checked=found.checked,
                head_position=found.head_position,
                first_bad_position=found.first_bad_position,
                reason=found.reason,
            )

        return await who.run(check)

    @api.get("/reports/compliance/series", response_model=ComplianceSeries, tags=["reports"])
    async def compliance_series(
        ledger: LedgerDep,
        who: Caller,
        start: WindowStart,
        end: WindowEnd,
        bucket: Literal["hour", "day"] = "hour",
        agent: str | None = None,
    ) -> Any:
        """The compliance report's counts per agent and per hour or day, each bucket only what happened in it
        (the buckets add up to the cumulative report at the end minus the one at the start); an agent key sees
        only its own rows."""
        return await who.run(lambda actor: ledger.compliance_series(start, end, bucket, agent=agent, viewer=actor))

    @api.get("/reports/compliance", response_model=ComplianceReport, tags=["reports"])
    async def compliance_report(
        ledger: LedgerDep,
        who: Caller,
        agent: str | None = None,
        as_of: AsOf = None,
        position: Position = None,
    ) -> Any:
        return await who.run(
            lambda actor: ledger.compliance_report(agent, as_of=as_of, position=position, viewer=actor)
        )

    return api
