"""API keys: a pure fold over the ``apikeys`` stream (who holds which key, in which role, and whether it was revoked).

A :class:`KeyRing` is an immutable snapshot at a stream version; :func:`advance` returns a new ring with later
events applied, so a process can keep one ring and catch it up by version on every request.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ledger.core.events import ApiKeyIssued, ApiKeyRevoked, KeyRole, RecordedEvent
from projections._copy import with_changes

STREAM = "apikeys"


@dataclass(frozen=True, slots=True)
class KeyView:
    """One issued key: its holder and role, who issued it, and when, by whom and why it was revoked."""

    key_id: str
    agent: str
    role: KeyRole
    key_sha256: str
    issued_at: _dt.datetime
    issued_by: str | None
    position: int
    revoked_at: _dt.datetime | None = None
    revoked_by: str | None = None
    reason: str | None = None
    replaced_by: str | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


def evolve(view: KeyView | None, rec: RecordedEvent) -> KeyView | None:
    """Apply one ``apikeys`` event to the key it names."""
    e = rec.event
    if isinstance(e, ApiKeyIssued):
        return KeyView(e.key_id, e.agent, e.role, e.key_sha256, rec.recorded_at, rec.agent, rec.position)
    if isinstance(e, ApiKeyRevoked) and view is not None and view.revoked_at is None:
        return with_changes(
            view, revoked_at=rec.recorded_at, revoked_by=rec.agent, reason=e.reason, replaced_by=e.replaced_by
        )
    return view


def key_of(rec: RecordedEvent) -> str | None:
    e = rec.event
    return e.key_id if isinstance(e, ApiKeyIssued | ApiKeyRevoked) else None


@dataclass(frozen=True)
class KeyRing:
    """Every key ever issued (revoked ones included), by id and by SHA-256, as of stream ``version``."""

    version: int = 0
    keys: Mapping[str, KeyView] = field(default_factory=lambda: MappingProxyType({}))
    by_hash: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def ever_issued(self) -> bool:
        """Whether any key was ever issued. Revoking every key must not turn authentication off."""
        return bool(self.keys)

    def find(self, key_sha256: str) -> KeyView | None:
        key_id = self.by_hash.get(key_sha256)
        return self.keys.get(key_id) if key_id else None

    def active(self) -> list[KeyView]:
        return [k for k in self.keys.values() if not k.revoked]


def advance(ring: KeyRing, events: Iterable[RecordedEvent], version: int) -> KeyRing:
    """The ring with ``events`` (the stream's events after ``ring.version``) applied, now at ``version``."""
    keys: dict[str, KeyView] | None = None
    by_hash: dict[str, str] | None = None
    for rec in events:
        key_id = key_of(rec)
        if key_id is None:
            continue
        if keys is None or by_hash is None:  # copy once per batch, not per event
            keys, by_hash = dict(ring.keys), dict(ring.by_hash)
        view = evolve(keys.get(key_id), rec)
        if view is not None:
            keys[key_id] = view
            by_hash[view.key_sha256] = key_id
    if keys is None or by_hash is None:
        return ring if version == ring.version else KeyRing(version, ring.keys, ring.by_hash)
    return KeyRing(version, MappingProxyType(keys), MappingProxyType(by_hash))
