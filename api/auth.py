"""HTTP identity: the agent and role come from the API key (``Authorization: Bearer`` or ``X-API-Key``).

With no key ever issued, the server only binds to loopback and every caller is the configured local agent, who
is also the administrator (the person at this machine). Once a key exists, every request needs a live one; the
ledger decides (``Ledger.identify``), reading revocations appended by any process on every request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ledger.events import KeyRole
from ledger.service import Actor, Ledger, Source


@dataclass(frozen=True)
class Identity:
    """Who a request comes from: the agent, its role, and whether an API key proved it."""

    agent: str
    role: KeyRole
    by_key: bool

    @property
    def admin(self) -> bool:
        return self.role == "admin"

    def actor(self, source: Source) -> Actor:
        return Actor(self.agent, source, role=self.role, by_key=self.by_key)


def key_from_headers(headers: Mapping[str, str]) -> str | None:
    lowered = {k.lower(): v for k, v in headers.items()}
    auth = lowered.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return (lowered.get("x-api-key") or "").strip() or None


def identity_from_headers(
    ledger: Ledger, headers: Mapping[str, str], fallback_agent: str, *, fallback_role: KeyRole = "admin"
) -> Identity:
    """Resolve the caller, or raise :class:`ledger.errors.Unauthorized` with what to send instead.

    Without keys the caller is ``fallback_agent`` in ``fallback_role`` (REST: the person at this machine, an
    administrator; MCP: an agent)."""
    key = ledger.identify(key_from_headers(headers))
    if key is None:
        return Identity(fallback_agent, fallback_role, by_key=False)
    return Identity(key.agent, key.role, by_key=True)
