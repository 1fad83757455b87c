"""Session grants: THE check every command that acts in a session makes, and the session views it reads (cached
per process, caught up from the log on every use)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ledger.core import access
from ledger.core.errors import InvalidInput, NotFound
from ledger.core.events import DomainEvent, RecordedEvent
from ledger.kernel import Actor, Kernel
from ledger.sessions import decisions as sessions
from projections import sessions as session_proj
from projections.sessions import SessionView

SESSION_CACHE_SIZE = 10_000  # session views kept per process; evicted least recently used


@dataclass(frozen=True)
class SessionGrant:
    """A session the caller may act in, as read at ``version``: returned by :meth:`SessionGrants.open` (the caller
    owns it and it is open) or :meth:`SessionGrants.administer` (an admin). Appends to a session take it only in
    this form, so no command can record a session id it has not checked."""

    session_id: str
    stream: str
    version: int
    view: SessionView


class SessionGrants:
    """Opens, checks and appends to sessions for every capability; owns the per-process cache of session views."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._cache: OrderedDict[str, tuple[int, SessionView]] = OrderedDict()
        self._cache_lock = threading.Lock()

    def view(self, session_id: str) -> tuple[str, int, SessionView | None]:
        """The session's stream, version and view: cached view plus whatever was appended since.

        The log is append-only, so a cached (version, view) pair is always a correct prefix; the append's
        ``expected_version`` still decides any race.
        """
        stream = sessions.stream_for(sessions.check_session_id(session_id))
        version, view = self._cache.get(stream, (0, None))
        state = self.kernel.store.load_stream(stream, version)
        for rec in state.events:
            view = session_proj.evolve(view, rec)
        self._remember(stream, state.version, view)
        return stream, state.version, view

    def exists(self, session_id: str) -> bool:
        try:
            return self.view(session_id)[2] is not None
        except InvalidInput:
            return False

    def _remember(self, stream: str, version: int, view: SessionView | None) -> None:
        if view is None:
            return
        with self._cache_lock:
            cached = self._cache.get(stream)
            if cached is None or cached[0] < version:
                self._cache[stream] = (version, view)
                self._cache.move_to_end(stream)
                while len(self._cache) > SESSION_CACHE_SIZE:
                    self._cache.popitem(last=False)

    def meta(self, actor: Actor, session: SessionGrant | None) -> dict[str, Any]:
        """An event's metadata. A session id gets in only as a :class:`SessionGrant`, i.e. once it was checked."""
        meta = self.kernel.meta(actor)
        if session is not None:
            meta["session_id"] = session.session_id
        return meta

    def open(self, actor: Actor, session_id: str, *, while_locked: bool = False) -> SessionGrant:
        """THE check for every command that acts in a session: the id is well formed, the session exists, belongs
        to the caller, is open and its anchor is not locked — else :class:`InvalidInput`, :class:`NotFound`,
        :class:`Forbidden`, :class:`Conflict` or :class:`SessionLocked` saying what to send or do instead.
        Commands call it before they append anything. ``while_locked=True`` only for the commands that answer a
        locked session themselves (a recorded refusal: ``assert_compliance``, ``odyssean_anchor``) or end it
        (``clock_out``)."""
        access.require_writer(actor)  # acting in a session records something: say why before "another agent's"
        stream, version, view = self.view(session_id)
        granted = sessions.authorise(view, session_id, actor.agent, while_locked=while_locked)
        return SessionGrant(session_id, stream, version, granted)

    def open_if(self, actor: Actor, session_id: str | None) -> SessionGrant | None:
        """:meth:`open` for commands whose session is optional (``None`` when none was sent)."""
        return None if session_id is None else self.open(actor, session_id)

    def administer(self, actor: Actor, session_id: str, doing: str) -> SessionGrant:
        """A person (an admin credential) acting on any agent's session, open or closed — e.g. an anchor unlock."""
        access.require_admin(actor, doing)
        stream, version, view = self.view(session_id)
        if view is None:
            raise NotFound(f"session {session_id} does not exist", "check the session id")
        return SessionGrant(session_id, stream, version, view)

    def start(self, actor: Actor, session_id: str, events: Sequence[DomainEvent]) -> SessionView:
        """Append a new session's first events (clock in): the caller owns what it opens."""
        stream = sessions.stream_for(session_id)
        recorded = self.kernel.append(actor, stream, 0, events, {**self.kernel.meta(actor), "session_id": session_id})
        view: SessionView | None = None
        for rec in recorded:
            view = session_proj.evolve(view, rec)
        assert view is not None
        self._remember(stream, len(recorded), view)
        return view

    def append(
        self, actor: Actor, session: SessionGrant, events: Sequence[DomainEvent]
    ) -> tuple[list[RecordedEvent], SessionView]:
        """Append to a granted session's stream (at the version it was read at) and return the view after."""
        recorded = self.kernel.append(actor, session.stream, session.version, events, self.meta(actor, session))
        view: SessionView | None = session.view
        for rec in recorded:
            view = session_proj.evolve(view, rec)
        assert view is not None
        self._remember(session.stream, session.version + len(recorded), view)
        return recorded, view
