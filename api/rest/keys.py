"""API key administration over REST: the twins of ``compliance-ledger keys list`` and ``keys revoke``, and
``GET /whoami`` (who the presented key proves the caller to be, so a client such as the dashboard at ``/ui`` can
offer only what the caller may do).

Issuing and rotating stay on the CLI, so a key's plaintext is never sent over HTTP.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from api.rest.context import Caller, StrictBody
from api.rest.deps import LedgerDep
from ledger.keys.report import MAX_REASON_CHARS, ApiKeyInfo


class WhoAmI(BaseModel):
    """The caller as the server resolved the request's credential."""

    agent: str
    role: str = Field(description="admin | agent | auditor")
    by_key: bool = Field(description="false: no API key exists, so the caller is the local agent, an administrator")


class Revoke(StrictBody):
    reason: str | None = Field(None, description=f"why (recorded in the ledger), at most {MAX_REASON_CHARS} characters")


def router() -> APIRouter:
    """``GET /whoami`` (anyone with a live key, or anyone while no key exists), ``GET /admin/keys`` (auditor or
    admin) and ``POST /admin/keys/{key_id}/revoke`` (admin)."""
    api = APIRouter(prefix="/admin/keys", tags=["admin"])
    me = APIRouter(tags=["admin"])

    @me.get("/whoami", response_model=WhoAmI)
    async def whoami(who: Caller) -> Any:
        """The agent and role the request's API key proves (a 401 when keys exist and none, or a dead one, was
        sent)."""
        return await who.run(lambda actor: WhoAmI(agent=actor.agent, role=actor.role, by_key=actor.by_key))

    @api.get("", response_model=list[ApiKeyInfo])
    async def list_keys(ledger: LedgerDep, who: Caller) -> Any:
        """Every key ever issued: id, agent, role, when and by whom it was issued and revoked."""
        return await who.run(ledger.api_key_list)

    @api.post("/{key_id}/revoke", response_model=ApiKeyInfo)
    async def revoke(ledger: LedgerDep, key_id: str, who: Caller, body: Revoke | None = None) -> Any:
        """Revoke a key: every node refuses it from its next request on."""
        return await who.run(lambda actor: ledger.revoke_api_key(actor, key_id, body.reason if body else None))

    me.include_router(api)
    return me
