"""REST routes of the compliance gate: ``POST /compliance/assert`` (the stamp) and ``POST /stamps/verify``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter

from api.fields import REQUEST_ID, SESSION_ID_FORM, described, session_id_field
from api.rest.context import Caller, Reader, StrictBody
from api.rest.deps import LedgerDep
from ledger.sessions.report import AssertResult, StampVerification


class AssertCompliance(StrictBody):
    session_id: Annotated[str, session_id_field(f"the session_id POST /sessions returned ({SESSION_ID_FORM})")]
    request_id: Annotated[str | None, REQUEST_ID] = None


class VerifyStamp(StrictBody):
    receipt: Annotated[str, described("the receipt string that POST /compliance/assert returned with the stamp")]


def router() -> APIRouter:
    """``POST /compliance/assert`` and ``POST /stamps/verify`` (an auditor may verify)."""
    api = APIRouter(tags=["gate"])

    @api.post("/compliance/assert", response_model=AssertResult)
    async def assert_compliance(ledger: LedgerDep, body: AssertCompliance, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.assert_compliance(actor, body.session_id, body.request_id))

    @api.post("/stamps/verify", response_model=StampVerification)
    async def verify_stamp(ledger: LedgerDep, body: VerifyStamp, who: Reader) -> Any:
        return await who.run(lambda _actor: ledger.verify_stamp(body.receipt))

    return api
