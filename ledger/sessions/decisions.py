"""Session decisions: clock in, clock out, and who may act on a session."""

from __future__ import annotations

import re
import secrets

from ledger.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from ledger.core.events import SessionEnded, SessionStarted
from ledger.sessions.locks import session_locked
from projections.sessions import STREAM_PREFIX, SessionView

MAX_ROLE_CHARS = 64
MAX_FOCUS_CHARS = 500
MAX_PATH_CHARS = 4096
# The forms as JSON Schema patterns too (the MCP and REST schemas publish them): whole-string matches.
ROLE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
SESSION_ID_PATTERN = r"^ses_[0-9a-f]{20}$"
_ROLE = re.compile(ROLE_PATTERN)
_SESSION_ID = re.compile(SESSION_ID_PATTERN)


def stream_for(session_id: str) -> str:
    return f"{STREAM_PREFIX}{session_id}"


def new_session_id() -> str:
    return "ses_" + secrets.token_hex(10)


def check_session_id(session_id: str) -> str:
    """Reject malformed ids before touching the store."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise InvalidInput(
            f"{session_id!r} is not a session id",
            "send the session_id that clock_in returned (ses_ followed by 20 hex digits)",
        )
    return session_id


def check_role(role: str) -> str:
    role = (role or "").strip() if isinstance(role, str) else ""
    if not role or len(role) > MAX_ROLE_CHARS or not _ROLE.fullmatch(role):
        raise InvalidInput(
            f"role {role!r} is not valid",
            f"send a role name of letters, digits, '_', '.' or '-' (at most {MAX_ROLE_CHARS}), e.g. 'dev'",
        )
    return role


def decide_clock_in(
    *, session_id: str, agent: str, role: str, working_dir: str | None, focus: str | None
) -> list[SessionStarted]:
    role = check_role(role)
    if focus is not None and len(focus) > MAX_FOCUS_CHARS:
        raise InvalidInput(f"focus is longer than {MAX_FOCUS_CHARS} characters", "shorten the focus text")
    if working_dir is not None and (not working_dir.strip() or len(working_dir) > MAX_PATH_CHARS):
        raise InvalidInput("working_dir is empty or too long", "send an absolute path, or omit working_dir")
    return [SessionStarted(session_id=session_id, agent=agent, role=role, working_dir=working_dir, focus=focus)]


def authorise(view: SessionView | None, session_id: str, agent: str, *, while_locked: bool = False) -> SessionView:
    """Return the session if ``agent`` may act in it — it exists, is the agent's own, is open (a clocked-out
    session accepts no further actions, whatever the command) and its anchor is not locked; otherwise raise the
    error that says why.

    A locked anchor blocks every command in the session (seed 001: "After 2 retries, block further action"),
    except the few that record the refusal themselves or end the session (``while_locked=True``)."""
    if view is None:
        raise NotFound(f"session {session_id} does not exist", "call clock_in and use the session_id it returns")
    if view.agent != agent:
        raise Forbidden(
            f"session {session_id} belongs to another agent",
            "use a session you opened yourself with clock_in",
        )
    if not view.is_open:
        raise Conflict(f"session {session_id} has been clocked out", "call clock_in to open a new session")
    if view.anchor_locked and not while_locked:
        raise session_locked(session_id)
    return view


def decide_clock_out(view: SessionView) -> list[SessionEnded]:
    return [SessionEnded(session_id=view.session_id)]
