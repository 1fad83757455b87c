"""Who may do and read what: the pure rules behind API key roles, on the ground floor because the kernel's append
door and every capability apply them (which tasks an agent key reads is the workflow's rule, beside its table).

* ``agent`` — acts as its agent. When the identity was proven by an API key (HTTP), it reads only its own:
  its sessions, the events recorded for it, its rows of the reports, and the tasks the workflow shows it.
* ``auditor`` — reads everything and changes nothing: every command that appends is refused.
* ``admin`` — everything, plus the administrative commands (unlock a session, manage keys, act in a
  human workflow role).

Identities not proven by a key (stdio ``--agent``, the CLI, loopback HTTP while no key exists) are named by
whoever runs them and can read the database anyway, so their reads are not limited.
"""

from __future__ import annotations

from typing import Protocol

from ledger.core.errors import Forbidden
from ledger.core.events import KeyRole

ROLES: tuple[KeyRole, ...] = ("agent", "auditor", "admin")
READ_ONLY_ROLES: frozenset[str] = frozenset({"auditor"})


class Caller(Protocol):
    """What the rules need to know about who is acting (``ledger.kernel.Actor`` satisfies it)."""

    @property
    def agent(self) -> str: ...
    @property
    def role(self) -> KeyRole: ...
    @property
    def by_key(self) -> bool: ...


def require_writer(caller: Caller) -> None:
    """Refuse a command that would append anything when the caller's role only reads."""
    if caller.role in READ_ONLY_ROLES:
        raise Forbidden(
            f"an {caller.role} key reads everything and changes nothing; this request would record an event",
            "use an agent key to act (`compliance-ledger keys add --agent NAME`)",
        )


def require_admin(caller: Caller, what: str) -> None:
    if caller.role != "admin":
        raise Forbidden(f"only an administrator can {what}, not an {caller.role} key", "ask a person with an admin key")


def require_overview(caller: Caller, what: str) -> None:
    """Reads of the whole ledger's aggregates (``/metrics``, the key list): auditors and administrators."""
    if read_scope(caller) is not None:
        raise Forbidden(f"an agent key cannot read {what}", "use an auditor or admin key")


def read_scope(caller: Caller) -> str | None:
    """The only agent whose data this caller may read, or ``None`` for everything."""
    return caller.agent if caller.by_key and caller.role == "agent" else None


def report_agent(caller: Caller, requested: str | None) -> str | None:
    """The agent a report is limited to: the requested one, or for an agent key always its own."""
    own = read_scope(caller)
    if own is None:
        return requested
    if requested is not None and requested != own:
        raise Forbidden(
            f"an agent key reads only its own report rows, not {requested!r}", f"omit agent or send {own!r}"
        )
    return own


def require_session_reader(caller: Caller, session_id: str, owner: str) -> None:
    own = read_scope(caller)
    if own is not None and owner != own:
        raise Forbidden(f"session {session_id} belongs to another agent", "read your own sessions")
