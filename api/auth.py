"""HTTP identity: the agent and role come from the API key (``Authorization: Bearer`` or ``X-API-Key``).

With no key ever issued, the server only binds to loopback and every caller is the configured local agent, who
is also the administrator (the person at this machine). Once a key exists, every request needs a live one; the
ledger decides (``Ledger.identify``), reading revocations appended by any process on every request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.datastructures import Headers

from ledger.core.events import KeyRole

if TYPE_CHECKING:  # the service loads the store (SQLAlchemy): not on the path of ``mcp``'s ``initialize`` answer
    from ledger.service import Actor, Ledger, Source
    from projections.apikeys import KeyRing, KeyView

# Where the HTTP front end leaves the identity it proved for an MCP request (an ASGI scope key: set by the server,
# never by anything the client sends), so the tool that request calls does not read the key ring again.
SCOPE_KEY = "compliance_ledger.identity"


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
        from ledger.service import Actor

        return Actor(self.agent, source, role=self.role, by_key=self.by_key)


def key_from_headers(headers: Mapping[str, str]) -> str | None:
    if isinstance(headers, Headers):  # names looked up ignoring case without copying; a repeated header: the last
        auth, api_key = [(v[-1] if v else None) for v in map(headers.getlist, ("authorization", "x-api-key"))]
    else:
        lowered = {k.lower(): v for k, v in headers.items()}
        auth, api_key = lowered.get("authorization"), lowered.get("x-api-key")
    auth = auth or ""
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return (api_key or "").strip() or None


def _identity(key: KeyView | None, fallback_agent: str, fallback_role: KeyRole) -> Identity:
    if key is None:
        return Identity(fallback_agent, fallback_role, by_key=False)
    return Identity(key.agent, key.role, by_key=True)


def identify(ledger: Ledger, api_key: str | None, fallback_agent: str, *, fallback_role: KeyRole = "admin") -> Identity:
    """Resolve the caller presenting ``api_key`` (``None``: no key) against the key ring caught up with the log
    now (one indexed read), or raise :class:`ledger.errors.Unauthorized` with what to send instead.

    Without keys the caller is ``fallback_agent`` in ``fallback_role`` (REST: the person at this machine, an
    administrator; MCP: an agent)."""
    return _identity(ledger.identify(api_key), fallback_agent, fallback_role)


def proven_for_request(scope: Mapping[str, object] | None) -> Identity | None:
    """The identity the HTTP front end proved for this request, if it did (see :data:`SCOPE_KEY`)."""
    proven = scope.get(SCOPE_KEY) if scope is not None else None
    return proven if isinstance(proven, Identity) else None


def identity_from_headers(
    ledger: Ledger, headers: Mapping[str, str], fallback_agent: str, *, fallback_role: KeyRole = "admin"
) -> Identity:
    """:func:`identify` with the key taken from the request headers."""
    return identify(ledger, key_from_headers(headers), fallback_agent, fallback_role=fallback_role)


def identify_provisionally(
    ring: KeyRing, api_key: str | None, fallback_agent: str, *, fallback_role: KeyRole = "admin"
) -> Identity:
    """:func:`identify` against a key ring already in hand (no database read). The ring may be behind the log, so
    the answer is provisional: a refusal must be confirmed, and an acceptance resolved again, with
    :func:`identify`."""
    from ledger.service import Ledger

    return _identity(Ledger.identify_in(ring, api_key), fallback_agent, fallback_role)
