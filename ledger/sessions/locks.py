"""The anchor lock as every session command meets it: the retry limit, and the refusals of a locked session.

The Odyssean Anchor (``ledger.anchor``, above) locks a session after :data:`MAX_ATTEMPTS` failed attempts in a row;
the session's grants, its clock-in and its gate refuse with these messages until a person unlocks it (seed 001).
"""

from __future__ import annotations

from ledger.core.errors import SessionLocked

MAX_RETRIES = 2  # a first attempt + two retries (seed 001)
MAX_ATTEMPTS = MAX_RETRIES + 1


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
