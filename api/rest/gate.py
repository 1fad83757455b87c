"""REST routes of the compliance gate: ``POST /compliance/assert`` (the stamp) and ``POST /stamps/verify``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from api.rest.context import Caller, Reader, StrictBody
from ledger.service import Ledger
from ledger.sessions import gate
from ledger.sessions.report import AssertResult, StampVerification


class AssertCompliance(StrictBody):
    session_id: str
    request_id: str | None = Field(None, description=f"optional id of this request, {gate.REQUEST_ID_HELP}")


class VerifyStamp(StrictBody):
    receipt: str


def router(ledger: Ledger) -> APIRouter:
    """``POST /compliance/assert`` and ``POST /stamps/verify`` (an auditor may verify)."""
    api = APIRouter(tags=["gate"])

    @api.post("/compliance/assert", response_model=AssertResult)
    async def assert_compliance(body: AssertCompliance, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.assert_compliance(actor, body.session_id, body.request_id))

    @api.post("/stamps/verify", response_model=StampVerification)
    async def verify_stamp(body: VerifyStamp, who: Reader) -> Any:
        return await who.run(lambda _actor: ledger.verify_stamp(body.receipt))

    return api
