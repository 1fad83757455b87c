"""API key decisions: issue, revoke, rotate, and who a presented key identifies (pure, over a :class:`KeyRing`).

The ledger never stores a key, only its SHA-256 (in ``ApiKeyIssued``); the key id is the first 10 hex digits of
that hash. A revoked key identifies nobody from the moment ``ApiKeyRevoked`` is in the log.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from ledger.core.canonical import require_utf8
from ledger.core.errors import Conflict, InvalidInput, NotFound, Unauthorized
from ledger.core.events import ApiKeyIssued, ApiKeyRevoked, KeyRole
from projections.apikeys import KeyRing, KeyView

ROLES: tuple[KeyRole, ...] = ("agent", "auditor", "admin")
MAX_REASON_CHARS = 500
# Names the ledger records for itself ("system") and for the person at the CLI ("operator"): a key holder under
# one of them would own those sessions and read those events.
RESERVED_AGENTS = frozenset({"operator", "system"})
_KEY_ID = re.compile(r"^key_[0-9a-f]{10}$")
_LIST_HINT = "list the keys with `compliance-ledger keys list` (or GET /admin/keys)"


@dataclass(frozen=True)
class NewKey:
    """A freshly generated key: the plaintext (shown once), its SHA-256 and its id."""

    plaintext: str
    sha256: str
    key_id: str


def digest(api_key: str) -> str:
    return hashlib.sha256(api_key.encode("utf-8", "surrogatepass")).hexdigest()


def new_key() -> NewKey:
    plaintext = "clk_" + secrets.token_urlsafe(32)
    sha = digest(plaintext)
    return NewKey(plaintext, sha, "key_" + sha[:10])


def check_role(role: str) -> KeyRole:
    for known in ROLES:
        if role == known:
            return known
    raise InvalidInput(f"role {role!r} is not known", f"send one of {', '.join(ROLES)}")


def check_key_id(key_id: str) -> str:
    if not isinstance(key_id, str) or not _KEY_ID.match(key_id):
        raise InvalidInput(f"{key_id!r} is not a key id", f"send an id such as key_0123456789; {_LIST_HINT}")
    return key_id


def check_reason(reason: str | None) -> str | None:
    if reason is None or not isinstance(reason, str) or not reason.strip():
        return None
    require_utf8(reason, "reason")
    if "\x00" in reason:
        raise InvalidInput("the reason contains a NUL character", "send plain text")
    if len(reason) > MAX_REASON_CHARS:
        raise InvalidInput(f"the reason is {len(reason)} characters; the limit is {MAX_REASON_CHARS}", "shorten it")
    return reason.strip()


def decide_issue(ring: KeyRing, agent: str, role: KeyRole, key: NewKey) -> list[ApiKeyIssued]:
    if agent in RESERVED_AGENTS:
        raise InvalidInput(
            f"{agent!r} is the name the ledger records for {'itself' if agent == 'system' else 'the CLI operator'}",
            "issue the key under the agent's own name",
        )
    if key.key_id in ring.keys:  # 40 bits of a random key's hash: practically never; the caller draws again
        raise Conflict(f"key id {key.key_id} is taken", "issue the key again")
    return [ApiKeyIssued(key_id=key.key_id, agent=agent, key_sha256=key.sha256, role=role)]


def _revocable(ring: KeyRing, key_id: str) -> KeyView:
    view = ring.keys.get(check_key_id(key_id))
    if view is None:
        raise NotFound(f"key {key_id} is not known to this ledger", _LIST_HINT)
    if view.revoked_at is not None:
        raise Conflict(
            f"key {key_id} was already revoked at {view.revoked_at.isoformat()} by {view.revoked_by}",
            "nothing to do; issue a new key with `compliance-ledger keys add` if one is needed",
        )
    return view


def decide_revoke(ring: KeyRing, key_id: str, reason: str | None) -> list[ApiKeyRevoked]:
    _revocable(ring, key_id)
    return [ApiKeyRevoked(key_id=key_id, reason=check_reason(reason))]


def decide_rotate(ring: KeyRing, key_id: str, key: NewKey) -> list[ApiKeyIssued | ApiKeyRevoked]:
    """A new key for the same agent and role, and the old one revoked: one append, so never both or neither."""
    old = _revocable(ring, key_id)
    [issued] = decide_issue(ring, old.agent, old.role, key)
    return [issued, ApiKeyRevoked(key_id=old.key_id, reason="rotated", replaced_by=key.key_id)]


def identify(ring: KeyRing, api_key: str | None) -> KeyView | None:
    """The key a caller presented, or ``None`` while no key was ever issued (loopback dev mode).

    Once any key exists every caller needs a live one — revoking all keys does not switch authentication off.
    """
    if not ring.ever_issued:
        return None
    if not api_key:
        raise Unauthorized(
            "this ledger requires an API key",
            "send 'Authorization: Bearer <key>' (create one with `compliance-ledger keys add --agent NAME`)",
        )
    view = ring.find(digest(api_key))
    if view is None:
        raise Unauthorized("the API key is not known to this ledger", "check the key or issue a new one")
    if view.revoked_at is not None:
        raise Unauthorized(
            f"the API key {view.key_id} was revoked at {view.revoked_at.isoformat()}",
            "ask an administrator for a new key (`compliance-ledger keys add` or `keys rotate`)",
        )
    return view
