"""The error model and the error statuses every REST route documents in ``/openapi.json``.

Errors are always ``{"error": {"code", "message", "hint"}}``. Every route reaches the store (the caller is
resolved from the key ring in the log), so each can answer 401 / 403 (credential and role), 503 (the store is
unreachable, or busy past its lock timeout, with ``Retry-After``), 400 (a body that is not JSON) and 422 (a field
or parameter that is malformed or out of bounds, including text holding a NUL or a lone surrogate); 404 and 409
come from the service for the ids and states it checks.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorDetail(BaseModel):
    code: str = Field(description="machine-readable, e.g. invalid_input, not_found, store_unavailable")
    message: str = Field(description="what went wrong, naming the field or parameter")
    hint: str = Field(description="what to send or do instead")


class ErrorBody(BaseModel):
    error: ErrorDetail


def _error(description: str, **extra: Any) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description, **extra}


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _error("the body is not valid JSON"),
    401: _error("no API key, or one the ledger does not know or has revoked"),
    403: _error("the key's role may not do this, or the session belongs to another agent"),
    404: _error("the named session, block, task, key or route is not in the ledger"),
    409: _error("well formed, but it contradicts the ledger's state (a closed session, a duplicate id, a race)"),
    422: _error("a field or parameter is malformed or out of bounds; the message names it"),
    503: _error(
        "the store is unreachable or busy; nothing was recorded",
        headers={"Retry-After": {"description": "seconds to wait before retrying", "schema": {"type": "integer"}}},
    ),
}
ERASED: dict[int | str, dict[str, Any]] = {
    410: _error("erased: the text is gone for good; the message says by whom, when and why")
}
"""The answer for a block (or a session) an administrator erased: added to the routes that read or erase one."""
