"""API key handlers: issue, list, revoke, rotate, and identify the caller of every HTTP request.

Every request asks :meth:`KeyCommands.identify`, which catches a cached fold of the ``apikeys`` stream up with
whatever was appended since (``load_stream(stream, after_version)``: one indexed query that finds nothing while
no key changed), so a key revoked by another process or node is refused on the very next request anywhere. The
cache is validated by the stream's version in the log on every call, never by time.

:meth:`KeyCommands.known_key_ring` hands out the cached fold without reading anything, for an adapter's early,
provisional answer (a refusal before the request body is looked at); it never replaces ``identify``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ledger.core import access
from ledger.core.events import KeyRole
from ledger.kernel import Actor, Kernel, check_agent
from ledger.keys import decisions as keys
from ledger.keys.report import ApiKeyCreated, ApiKeyInfo
from projections import apikeys as key_proj
from projections.apikeys import KeyRing, KeyView

API_KEYS_STREAM = key_proj.STREAM


@dataclass
class KeyCommands:
    """API keys: issue, list, revoke, rotate, and the per-process key ring every request is checked against."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._key_ring = KeyRing()
        self._key_ring_lock = threading.Lock()
        self._key_ring_read = False  # whether _key_ring was ever caught up with the log

    def key_ring(self) -> KeyRing:
        """Every key ever issued, caught up with the log now (cached; only new events are read)."""
        ring = self._key_ring
        state = self.kernel.store.load_stream(API_KEYS_STREAM, ring.version)
        if state.version == ring.version:
            self._key_ring_read = True
            return ring
        ring = key_proj.advance(ring, state.events, state.version)
        with self._key_ring_lock:
            if self._key_ring.version < ring.version:
                self._key_ring = ring
            self._key_ring_read = True
        return ring

    def known_key_ring(self) -> KeyRing | None:
        """The key ring as this process last read it (no database read; ``None`` before the first read). It may
        be behind the log: good for a provisional answer only, to be confirmed with :meth:`identify`."""
        return self._key_ring if self._key_ring_read else None

    def identify(self, api_key: str | None) -> KeyView | None:
        """The live key presented by a caller; ``None`` while no key was ever issued. Raises ``Unauthorized``."""
        return keys.identify(self.key_ring(), api_key)

    def issue_api_key(self, actor: Actor, agent: str, *, role: str = "agent", admin: bool = False) -> ApiKeyCreated:
        """Issue a key for ``agent`` in ``role``; the ledger records only its SHA-256."""
        access.require_admin(actor, "issue API keys")
        check_agent(agent)
        checked: KeyRole = "admin" if admin else keys.check_role(role)

        def attempt() -> ApiKeyCreated:
            ring = self.key_ring()
            key = keys.new_key()
            events = keys.decide_issue(ring, agent, checked, key)
            self.kernel.append(actor, API_KEYS_STREAM, ring.version, events, self.kernel.meta(actor))
            return ApiKeyCreated(key_id=key.key_id, agent=agent, role=checked, api_key=key.plaintext)

        return self.kernel.retrying(attempt)

    def api_key_list(self, actor: Actor) -> list[ApiKeyInfo]:
        """Every key ever issued (oldest first) with its role and revocation; never the key or its hash."""
        access.require_overview(actor, "the list of API keys")
        return [ApiKeyInfo.of(k) for k in sorted(self.key_ring().keys.values(), key=lambda k: k.position)]

    def revoke_api_key(self, actor: Actor, key_id: str, reason: str | None = None) -> ApiKeyInfo:
        """Revoke a key: it identifies nobody from this event on, on every node."""
        access.require_admin(actor, "revoke API keys")

        def attempt() -> ApiKeyInfo:
            ring = self.key_ring()
            events = keys.decide_revoke(ring, key_id, reason)
            recorded = self.kernel.append(actor, API_KEYS_STREAM, ring.version, events, self.kernel.meta(actor))
            return ApiKeyInfo.of(key_proj.advance(ring, recorded, recorded[-1].version).keys[key_id])

        return self.kernel.retrying(attempt)

    def rotate_api_key(self, actor: Actor, key_id: str) -> ApiKeyCreated:
        """Issue a new key for the same agent and role and revoke the old one, in one append."""
        access.require_admin(actor, "rotate API keys")

        def attempt() -> ApiKeyCreated:
            ring = self.key_ring()
            key = keys.new_key()
            events = keys.decide_rotate(ring, key_id, key)
            old = ring.keys[key_id]
            self.kernel.append(actor, API_KEYS_STREAM, ring.version, events, self.kernel.meta(actor))
            return ApiKeyCreated(
                key_id=key.key_id, agent=old.agent, role=old.role, api_key=key.plaintext, replaces=key_id
            )

        return self.kernel.retrying(attempt)
