"""What the key commands return: a new key (shown once) and a key's public description."""

from __future__ import annotations

import datetime as _dt

from pydantic import BaseModel

from ledger.core.events import KeyRole

# The constants of the interface, which adapters publish (limits in schemas, texts in answers).
from ledger.keys.decisions import MAX_REASON_CHARS as MAX_REASON_CHARS
from projections.apikeys import KeyView


class ApiKeyCreated(BaseModel):
    """A key just issued (or issued by a rotation that revoked ``replaces``): the plaintext is shown only here."""

    key_id: str
    agent: str
    role: KeyRole
    api_key: str
    replaces: str | None = None

    @property
    def admin(self) -> bool:
        return self.role == "admin"


class ApiKeyInfo(BaseModel):
    """An issued key as ``keys list`` shows it: never the key or its hash."""

    key_id: str
    agent: str
    role: KeyRole
    issued_at: _dt.datetime
    issued_by: str | None
    position: int
    revoked_at: _dt.datetime | None = None
    revoked_by: str | None = None
    reason: str | None = None
    replaced_by: str | None = None

    @classmethod
    def of(cls, view: KeyView) -> ApiKeyInfo:
        return cls.model_validate(view, from_attributes=True)
