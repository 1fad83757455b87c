"""The call in progress — one HTTP request or one MCP tool call — as its log line will name it: the request id
and, once the caller is resolved, the agent.

The HTTP front end binds a :class:`Call` for each request (``X-Request-ID`` if the client sent a well-formed
one, else a fresh id) and leaves it in the ASGI scope too, so an MCP tool call carried by that request logs the
same id. Stdio and in-memory tool calls get an id of their own. The binding is a context variable, so the worker
thread a route's database work runs in sees the same :class:`Call` and can say who the caller turned out to be.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ledger.core.errors import InvalidInput
from ledger.core.request_ids import check_request_id

REQUEST_ID_HEADER = "X-Request-ID"
# Where the HTTP front end leaves the request's Call in the ASGI scope (set by the server, never by the client).
SCOPE_KEY = "compliance_ledger.call"


@dataclass
class Call:
    """A request id and the agent acting, once known (``None`` until the caller is resolved, or if it never is)."""

    request_id: str
    agent: str | None = None


_current: ContextVar[Call | None] = ContextVar("compliance_ledger_call", default=None)


def new_request_id() -> str:
    """A fresh request id: 16 hex digits."""
    return secrets.token_hex(8)


def request_id_from(sent: str | None) -> str:
    """The client's request id if it is well formed (the gate's ``request_id`` format: 1–128 characters of
    ``A-Z a-z 0-9 . _ : -``), else a fresh one: an id that cannot be logged safely is replaced, not refused."""
    if sent:
        try:
            checked = check_request_id(sent)
        except InvalidInput:
            return new_request_id()
        if checked:
            return checked
    return new_request_id()


@contextmanager
def bound(call: Call) -> Iterator[Call]:
    """Make ``call`` the call in progress for the code inside (and the worker threads it starts)."""
    token = _current.set(call)
    try:
        yield call
    finally:
        _current.reset(token)


def current() -> Call | None:
    """The call in progress, if a front end bound one."""
    return _current.get()


def note_agent(agent: str) -> None:
    """Record the agent the call in progress acts as (the caller, resolved from its credential)."""
    call = _current.get()
    if call is not None:
        call.agent = agent


def of_scope(scope: Mapping[str, object] | None) -> Call | None:
    """The :class:`Call` the HTTP front end left in an ASGI scope, if any."""
    found = scope.get(SCOPE_KEY) if scope is not None else None
    return found if isinstance(found, Call) else None
