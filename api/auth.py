"""HTTP identity: the agent comes from the API key (``Authorization: Bearer`` or ``X-API-Key``).

With no keys issued, the server only binds to loopback and every caller is the configured local agent, who
is also the administrator (the person at this machine). With keys, only keys issued with ``--admin`` may use
administrative routes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from ledger.errors import Unauthorized
from ledger.service import Ledger


@dataclass(frozen=True)
class Identity:
    agent: str
    admin: bool


def key_from_headers(headers: Mapping[str, str]) -> str | None:
    lowered = {k.lower(): v for k, v in headers.items()}
    auth = lowered.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return (lowered.get("x-api-key") or "").strip() or None


def identity_from_headers(ledger: Ledger, headers: Mapping[str, str], fallback_agent: str) -> Identity:
    """Resolve the caller, or raise :class:`Unauthorized` with what to send instead."""
    keys = ledger.api_keys()
    if not keys:
        return Identity(fallback_agent, admin=True)
    supplied = key_from_headers(headers)
    if not supplied:
        raise Unauthorized(
            "this ledger requires an API key",
            "send 'Authorization: Bearer <key>' (create one with `compliance-ledger keys add --agent NAME`)",
        )
    issued = keys.get(hashlib.sha256(supplied.encode()).hexdigest())
    if issued is None:
        raise Unauthorized("the API key is not known to this ledger", "check the key or issue a new one")
    return Identity(issued.agent, issued.admin)


def agent_from_headers(ledger: Ledger, headers: Mapping[str, str], fallback_agent: str) -> str:
    return identity_from_headers(ledger, headers, fallback_agent).agent
