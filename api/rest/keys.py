"""API key administration over REST: the twins of ``compliance-ledger keys list`` and ``keys revoke``.

Issuing and rotating stay on the CLI, so a key's plaintext is never sent over HTTP.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import Field

from api.rest.context import Caller, StrictBody
from ledger.keys.decisions import MAX_REASON_CHARS
from ledger.keys.report import ApiKeyInfo
from ledger.service import Ledger


class Revoke(StrictBody):
    reason: str | None = Field(None, description=f"why (recorded in the ledger), at most {MAX_REASON_CHARS} characters")


def router() -> APIRouter:
    """``GET /admin/keys`` (auditor or admin) and ``POST /admin/keys/{key_id}/revoke`` (admin)."""
    api = APIRouter(prefix="/admin/keys", tags=["admin"])

    @api.get("", response_model=list[ApiKeyInfo])
    async def list_keys(who: Caller, request: Request) -> Any:
        """Every key ever issued: id, agent, role, when and by whom it was issued and revoked."""
        ledger: Ledger = request.app.state.ledger
        return await who.run(ledger.api_key_list)

    @api.post("/{key_id}/revoke", response_model=ApiKeyInfo)
    async def revoke(key_id: str, who: Caller, request: Request, body: Revoke | None = None) -> Any:
        """Revoke a key: every node refuses it from its next request on."""
        ledger: Ledger = request.app.state.ledger
        return await who.run(lambda actor: ledger.revoke_api_key(actor, key_id, body.reason if body else None))

    return api
