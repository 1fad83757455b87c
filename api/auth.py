"""HTTP identity: the agent comes from the API key (``Authorization: Bearer`` or ``X-API-Key``).

With no keys issued, the server only binds to loopback and every caller is the configured local agent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from ledger.errors import Unauthorized
from ledger.service import Ledger


def key_from_headers(headers: Mapping[str, str]) -> str | None:
    lowered = {k.lower(): v for k, v in headers.items()}
    auth = lowered.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return (lowered.get("x-api-key") or "").strip() or None


def agent_from_headers(ledger: Ledger, headers: Mapping[str, str], fallback_agent: str) -> str:
    """Resolve the calling agent, or raise :class:`Unauthorized` with what to send instead."""
    keys = ledger.api_keys()
    if not keys:
        return fallback_agent
    supplied = key_from_headers(headers)
    if not supplied:
        raise Unauthorized(
            "this ledger requires an API key",
            "send 'Authorization: Bearer <key>' (create one with `compliance-ledger keys add --agent NAME`)",
        )
    agent = keys.get(hashlib.sha256(supplied.encode()).hexdigest())
    if agent is None:
        raise Unauthorized("the API key is not known to this ledger", "check the key or issue a new one")
    return agent
