"""Events of the Odyssean Anchor: a challenge issued, a proof attempted, a session locked, refused and unlocked."""

from typing import ClassVar

from ledger.core.events.base import DomainEvent, Texts, Timestamp


class AnchorChallengeIssued(DomainEvent):
    """The server picked a line of a tracked file in the session's working tree for the next proof to quote.

    ``line_digest`` is an HMAC of the line as the server read it, under the ledger's receipt key: the log never holds
    the text, and a reader of the log cannot test guesses against the digest without the key."""

    type_name: ClassVar[str] = "AnchorChallengeIssued"
    texts: ClassVar[Texts] = Texts(ledger=("session_id", "challenge_id", "path", "line_digest"))
    session_id: str
    challenge_id: str
    path: str  # relative to the working directory, as git lists it
    line: int
    line_digest: str
    expires_at: Timestamp


class AnchorAttempted(DomainEvent):
    """An anchor proof was submitted and validated by the server against the authoritative context.

    v2 adds ``challenge_id``: the challenge the proof answered correctly (and so used up), or None."""

    type_name: ClassVar[str] = "AnchorAttempted"
    schema_version: ClassVar[int] = 2
    texts: ClassVar[Texts] = Texts(
        free=("proof_candidate", "canonical_proof", "errors", "warnings"),
        labels=("role",),
        ledger=("session_id", "tier", "branch", "phase", "challenge_id"),
    )
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
    challenge_id: str | None = None


class AnchorLocked(DomainEvent):
    """Too many failed anchor attempts: the session is locked until a person unlocks it."""

    type_name: ClassVar[str] = "AnchorLocked"
    texts: ClassVar[Texts] = Texts(ledger=("session_id",))
    session_id: str
    failed_attempts: int


class AnchorRefused(DomainEvent):
    """An anchor attempt on a locked session was refused without validation."""

    type_name: ClassVar[str] = "AnchorRefused"
    texts: ClassVar[Texts] = Texts(ledger=("session_id",))
    session_id: str


class AnchorUnlocked(DomainEvent):
    """A person unlocked the session's anchoring, with a reason; the attempt count starts again."""

    type_name: ClassVar[str] = "AnchorUnlocked"
    texts: ClassVar[Texts] = Texts(free=("reason",), ledger=("session_id",))
    session_id: str
    reason: str
