"""Events of the Odyssean Anchor: a proof attempted, a session locked, refused and unlocked."""

from typing import ClassVar

from ledger.core.events.base import DomainEvent


class AnchorAttempted(DomainEvent):
    """An anchor proof was submitted and validated by the server against the authoritative context."""

    type_name: ClassVar[str] = "AnchorAttempted"
    session_id: str
    role: str
    tier: str
    attempt: int
    first_in_session: bool
    validated: bool
    errors: list[str]
    warnings: list[str]
    proof_candidate: str
    canonical_proof: str
    branch: str | None = None
    phase: str | None = None
    files: int = 0


class AnchorLocked(DomainEvent):
    """Too many failed anchor attempts: the session is locked until a person unlocks it."""

    type_name: ClassVar[str] = "AnchorLocked"
    session_id: str
    failed_attempts: int


class AnchorRefused(DomainEvent):
    """An anchor attempt on a locked session was refused without validation."""

    type_name: ClassVar[str] = "AnchorRefused"
    session_id: str


class AnchorUnlocked(DomainEvent):
    """A person unlocked the session's anchoring, with a reason; the attempt count starts again."""

    type_name: ClassVar[str] = "AnchorUnlocked"
    session_id: str
    reason: str
