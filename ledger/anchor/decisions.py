"""Anchor decisions: count attempts, lock after too many failures, unlock by a person — every step an event.

The proof itself is validated by the pure :mod:`ledger.anchor`; this module decides what the ledger records.
Nothing the caller sends can change the count: it is folded from the session's own events.
"""

from __future__ import annotations

from pydantic import BaseModel

from ledger.anchor.proof import MAX_RETRIES, AnchorValidation
from ledger.core.errors import Conflict, InvalidInput, SessionLocked
from ledger.core.events import AnchorAttempted, AnchorLocked, AnchorRefused, AnchorUnlocked, DomainEvent
from projections.sessions import SessionView

MAX_ATTEMPTS = MAX_RETRIES + 1
MAX_REASON_CHARS = 1000


def locked_message(session_id: str) -> str:
    return (
        f"Anchor attempts on session {session_id} are locked after {MAX_ATTEMPTS} failed attempts: "
        f"human intervention required. A person must run "
        f"`compliance-ledger anchor unlock {session_id} --reason TEXT`."
    )


def unlock_hint(session_id: str) -> str:
    return (
        f"a person must run `compliance-ledger anchor unlock {session_id} --reason TEXT` "
        f"(or POST /admin/sessions/{session_id}/anchor/unlock with an admin key); until then nothing more can be done "
        "in this session"
    )


def session_locked(session_id: str) -> SessionLocked:
    """The refusal of any command in a locked session (the one check: ``SessionGrants.open``)."""
    return SessionLocked(
        f"session {session_id} is locked: its Odyssean Anchor failed {MAX_ATTEMPTS} attempts in a row "
        "(human intervention required), so it may not act",
        unlock_hint(session_id),
    )


def agent_locked_out(agent: str, session_id: str) -> SessionLocked:
    """The refusal of a new session for an agent whose other session is locked (a new session is no way round)."""
    return SessionLocked(
        f"agent {agent} may not clock in: its session {session_id} is locked after {MAX_ATTEMPTS} failed Odyssean "
        "Anchor attempts (human intervention required)",
        unlock_hint(session_id),
    )


class Enforcement(BaseModel):
    """Where the session stands against the retry limit (all counted by the server)."""

    attempt: int
    max_retries: int = MAX_RETRIES
    retries_left: int
    locked: bool

    @classmethod
    def of(cls, view: SessionView, attempt: int) -> Enforcement:
        left = 0 if view.anchor_locked else MAX_ATTEMPTS - view.anchor_attempt
        return cls(attempt=attempt, retries_left=max(0, left), locked=view.anchor_locked)


def decide_attempt(
    view: SessionView,
    *,
    role: str,
    tier: str,
    proof: str,
    validation: AnchorValidation,
    branch: str | None,
    phase: str | None,
    files: int,
) -> list[DomainEvent]:
    """Record the attempt; the third failure in a row also locks the session."""
    attempt = view.anchor_attempt + 1
    events: list[DomainEvent] = [
        AnchorAttempted(
            session_id=view.session_id,
            role=role,
            tier=tier,
            attempt=attempt,
            first_in_session=view.anchor_total == 0,
            validated=validation.validated,
            errors=validation.errors,
            warnings=validation.warnings,
            proof_candidate=proof,
            canonical_proof=validation.canonical_proof,
            branch=branch,
            phase=phase,
            files=files,
        )
    ]
    if not validation.validated and attempt >= MAX_ATTEMPTS:
        events.append(AnchorLocked(session_id=view.session_id, failed_attempts=attempt))
    return events


def decide_refusal(view: SessionView) -> list[DomainEvent]:
    """A locked session's attempt is recorded and refused without validation."""
    return [AnchorRefused(session_id=view.session_id)]


def decide_unlock(view: SessionView, reason: str) -> list[DomainEvent]:
    reason = (reason or "").strip()
    if not reason or len(reason) > MAX_REASON_CHARS:
        raise InvalidInput("an unlock needs a reason", f"say why the session may retry (at most {MAX_REASON_CHARS})")
    if not view.anchor_locked:
        raise Conflict(f"session {view.session_id} is not locked", "only a locked session can be unlocked")
    return [AnchorUnlocked(session_id=view.session_id, reason=reason)]
