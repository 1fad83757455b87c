"""Anchor decisions: count attempts, lock after too many failures, unlock by a person — every step an event.

The proof itself is validated by the pure :mod:`ledger.anchor.proof`; this module decides what the ledger records.
Nothing the caller sends can change the count: it is folded from the session's own events. The retry limit and the
refusals of a locked session are the session's (:mod:`ledger.sessions.locks`), which every command meets.
"""

from __future__ import annotations

import datetime as _dt

from pydantic import BaseModel

from ledger.anchor.proof import AnchorValidation
from ledger.core.errors import Conflict, InvalidInput
from ledger.core.events import (
    AnchorAttempted,
    AnchorChallengeIssued,
    AnchorLocked,
    AnchorRefused,
    AnchorUnlocked,
    DomainEvent,
)
from ledger.sessions.locks import MAX_ATTEMPTS, MAX_RETRIES
from projections.sessions import AnchorChallenge, SessionView

MAX_REASON_CHARS = 1000


class Enforcement(BaseModel):
    """Where the session stands against the retry limit (all counted by the server)."""

    attempt: int
    max_retries: int = MAX_RETRIES
    retries_left: int
    locked: bool

    @classmethod
    def of(cls, view: SessionView, attempt: int) -> Enforcement:
        """``retries_left`` counts retries, not attempts: the first attempt after a success or an unlock is not
        a retry, so with no failure since (a fresh session, or just validated) it equals ``max_retries``; each
        failure after the first uses one, and a lock leaves none."""
        failures = view.anchor_attempt
        left = 0 if view.anchor_locked else MAX_RETRIES - max(0, failures - 1)
        return cls(attempt=attempt, retries_left=max(0, min(MAX_RETRIES, left)), locked=view.anchor_locked)


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
    challenge_id: str | None = None,
) -> list[DomainEvent]:
    """Record the attempt (with the challenge it answered, which it uses up); the third failure in a row also
    locks the session."""
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
            challenge_id=challenge_id,
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


# --- challenges -----------------------------------------------------------------------------------------------

NEW_CHALLENGE = "call anchor_challenge for a new challenge and answer that one"


def decide_challenge(
    view: SessionView, *, challenge_id: str, path: str, line: int, line_digest: str, expires_at: _dt.datetime
) -> list[DomainEvent]:
    """Issue a challenge; it replaces any earlier one of the session, answered or not."""
    return [
        AnchorChallengeIssued(
            session_id=view.session_id,
            challenge_id=challenge_id,
            path=path,
            line=line,
            line_digest=line_digest,
            expires_at=expires_at,
        )
    ]


def open_challenge(view: SessionView, challenge_id: str, now: _dt.datetime) -> AnchorChallenge:
    """The session's challenge named ``challenge_id``, if a proof may still answer it; otherwise the refusal.

    Unknown, used, replaced and expired challenges are refused before anything is recorded: one challenge answers
    one attempt, in the session it was issued to, before it expires."""
    current = view.anchor_challenge
    if current is None or current.challenge_id != challenge_id:
        past = view.past_challenges.get(challenge_id)
        if past == "used":
            raise Conflict(f"challenge {challenge_id} was already answered by an earlier anchor attempt", NEW_CHALLENGE)
        if past == "replaced":
            newer = current.challenge_id if current is not None else "a newer one"
            raise Conflict(f"challenge {challenge_id} was replaced by {newer}", f"answer {newer}, or {NEW_CHALLENGE}")
        raise InvalidInput(f"challenge {challenge_id} was not issued to session {view.session_id}", NEW_CHALLENGE)
    if current.used_position is not None:
        raise Conflict(
            f"challenge {challenge_id} was already answered by the anchor attempt at position {current.used_position}",
            NEW_CHALLENGE,
        )
    if now >= current.expires_at:
        raise Conflict(f"challenge {challenge_id} expired at {current.expires_at.isoformat()}", NEW_CHALLENGE)
    return current


def line_changed(challenge: AnchorChallenge) -> Conflict:
    """The refusal of an answer to a line that changed since the challenge was issued (not the prover's fault)."""
    return Conflict(
        f"line {challenge.line} of {challenge.path} changed since challenge {challenge.challenge_id} was issued, so it"
        " can no longer be answered",
        NEW_CHALLENGE,
    )


def wrong_quote(challenge: AnchorChallenge) -> tuple[str, str]:
    """The error and the fix of a proof whose answer is not the line (the message never shows the line). It is a
    failed attempt, not a refusal: it spends the challenge and counts against the retries, so a caller cannot
    try quote after quote against one challenge to confirm a guess of the line's text."""
    where = f"line {challenge.line} of {challenge.path}"
    return (
        f"the answer to challenge {challenge.challenge_id} is not {where} as the ledger reads it",
        f"Call anchor_challenge for a new challenge, then read the line it names in your working directory and quote"
        f" it whole in CHALLENGE::<challenge_id>[...] (challenge {challenge.challenge_id} is spent).",
    )
