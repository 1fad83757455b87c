"""REST routes of the Odyssean Anchor: get a challenge (``POST /anchors/challenges``), submit a proof
(``POST /anchors``) and lift a lock (admin)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import Field

from api.fields import PROOF, SESSION_ID_FORM, TIER, session_id_field
from api.rest.context import Caller, StrictBody
from api.rest.deps import LedgerDep
from ledger.anchor.report import AnchorChallengeResult, AnchorResult
from ledger.sessions.report import SessionState


class Anchor(StrictBody):
    session_id: Annotated[str, session_id_field(f"the session_id POST /sessions returned ({SESSION_ID_FORM})")]
    role: str = Field(description="your role in the session, e.g. 'dev'")
    proof_candidate: Annotated[str, PROOF]
    tier: Annotated[str, TIER] = "default"


class Challenge(StrictBody):
    session_id: Annotated[str, session_id_field(f"the session_id POST /sessions returned ({SESSION_ID_FORM})")]


class Unlock(StrictBody):
    reason: str = Field(description="why the session may try again (recorded in the ledger)")


def router() -> APIRouter:
    """``POST /anchors/challenges``, ``POST /anchors`` and ``POST /admin/sessions/{id}/anchor/unlock``."""
    api = APIRouter()

    @api.post("/anchors/challenges", response_model=AnchorChallengeResult, tags=["anchor"])
    async def anchor_challenge(ledger: LedgerDep, body: Challenge, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.anchor_challenge(actor, body.session_id))

    @api.post("/anchors", response_model=AnchorResult, tags=["anchor"])
    async def odyssean_anchor(ledger: LedgerDep, body: Anchor, who: Caller) -> Any:
        return await who.run(
            lambda actor: ledger.anchor(actor, body.session_id, body.role, body.proof_candidate, body.tier)
        )

    @api.post("/admin/sessions/{session_id}/anchor/unlock", response_model=SessionState, tags=["admin"])
    async def unlock_anchor(ledger: LedgerDep, session_id: str, body: Unlock, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.unlock_anchor(actor, session_id, body.reason))

    return api
