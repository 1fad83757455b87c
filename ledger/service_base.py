"""The service's plumbing: who acts, behaviour settings, and load-decide-append with retries on a lost race.

Capability handlers (memory in ``ledger.memory_service``, the rest in ``ledger.service``) build on
:class:`LedgerBase`; adapters use the assembled :class:`ledger.service.Ledger`.
"""

from __future__ import annotations

import datetime as _dt
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ledger.anchor import project as project_context
from ledger.core import clock as _clock
from ledger.core import signing
from ledger.core.errors import ConcurrencyError, InvalidInput, NotFound, NotInitialised, StoreUnavailable
from ledger.core.events import DomainEvent, KeyRole, RecordedEvent
from ledger.core.storage import SqlEventStore
from ledger.enforcement.decisions import RuleSet, load_rules
from ledger.keys import access
from ledger.sessions import decisions as sessions
from ledger.sessions import receipts
from ledger.workflow.decisions import Workflow, load_workflow
from projections import sessions as session_proj
from projections import snapshots
from projections.active_hours import IDLE_TIMEOUT
from projections.runner import COMPLIANCE, ProjectionRunner
from projections.search_index import SearchIndex
from projections.sessions import SessionView

Source = Literal["mcp", "rest", "cli"]
T = TypeVar("T")
MAX_AGENT_CHARS = 64
SESSION_CACHE_SIZE = 10_000  # session views kept per process; evicted least recently used


@dataclass(frozen=True)
class Actor:
    """Who is acting (from the credential), in which role, and through which front end.

    ``role`` is the API key's (``agent`` | ``auditor`` | ``admin``; see :mod:`ledger.access`); ``admin=True`` is
    shorthand for ``role="admin"`` and always equals ``role == "admin"``. ``by_key`` says the identity was
    proven by an API key, which is what limits an agent's reads to its own.
    """

    agent: str
    source: Source = "cli"
    correlation_id: str | None = None
    admin: bool = False
    role: KeyRole = "agent"
    by_key: bool = False

    def __post_init__(self) -> None:
        if self.admin and self.role == "auditor":
            raise ValueError("an actor cannot be both admin and auditor")
        role: KeyRole = "admin" if self.admin else self.role
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "admin", role == "admin")


@dataclass(frozen=True)
class SessionGrant:
    """A session the caller may act in, as read at ``version``: returned by ``LedgerBase._open_session`` (the
    caller owns it and it is open) or ``_administer_session`` (an admin). Event metadata accepts a session only
    in this form, so no command can record a session id it has not checked."""

    session_id: str
    stream: str
    version: int
    view: SessionView


@dataclass(frozen=True)
class LedgerConfig:
    """Behaviour settings of the service (adapters build it from their settings)."""

    token_ttl: _dt.timedelta | None = _dt.timedelta(minutes=30)
    max_conflict_retries: int = 20
    require_anchor: bool = False
    project_roots: tuple[str, ...] = ()
    context_paths: tuple[str, ...] = project_context.DEFAULT_CONTEXT_PATHS
    idle_timeout: _dt.timedelta = IDLE_TIMEOUT  # an open session stops being active this long after its last event
    snapshot_every: int = snapshots.DEFAULT_EVERY  # events folded between projection snapshots; 0: never snapshot
    workflow: Workflow = field(default_factory=load_workflow)
    enforcement_rules: RuleSet = field(default_factory=load_rules)


@dataclass
class LedgerBase:
    """The store, index, receipt key, settings and clock every handler works with, plus shared plumbing."""

    store: SqlEventStore
    index: SearchIndex
    key: receipts.ReceiptKey
    config: LedgerConfig = field(default_factory=LedgerConfig)
    clock: _clock.Clock = _clock.now
    signer: signing.SigningKey | None = None  # Ed25519: new receipts and checkpoints
    _reports: ProjectionRunner = field(default_factory=lambda: ProjectionRunner([COMPLIANCE]))
    _reports_lock: threading.Lock = field(default_factory=threading.Lock)
    _session_cache: OrderedDict[str, tuple[int, SessionView]] = field(default_factory=OrderedDict)
    _cache_lock: threading.Lock = field(default_factory=threading.Lock)
    _snapshot_store: snapshots.Snapshots | None = None

    # --- plumbing -------------------------------------------------------------------------------------

    def _meta(self, actor: Actor, session: SessionGrant | None) -> dict[str, Any]:
        """An event's metadata. A session id gets in only as a :class:`SessionGrant`, i.e. once it was checked."""
        meta: dict[str, Any] = {"agent": actor.agent, "source": actor.source}
        if actor.admin:
            meta["admin"] = True
        if session is not None:
            meta["session_id"] = session.session_id
        if actor.correlation_id:
            meta["correlation_id"] = actor.correlation_id
        return meta

    def _append(
        self, actor: Actor, stream: str, expected_version: int, events: Sequence[DomainEvent], meta: dict[str, Any]
    ) -> list[RecordedEvent]:
        """Append for ``actor``: the one door every command's events go through, so a role that only reads
        (an auditor key) is refused here, whatever the command, before anything is written."""
        access.require_writer(actor)
        return self.store.append(stream, expected_version, events, meta)

    def _retrying(self, attempt: Callable[[], T]) -> T:
        """Run load-decide-append again when another writer won the race for the stream."""
        for _ in range(self.config.max_conflict_retries):
            try:
                return attempt()
            except ConcurrencyError:
                continue
        raise StoreUnavailable("the stream kept changing under this request", "retry the request")

    def _session(self, session_id: str) -> tuple[str, int, SessionView | None]:
        """The session's stream, version and view: cached view plus whatever was appended since.

        The log is append-only, so a cached (version, view) pair is always a correct prefix; the append's
        ``expected_version`` still decides any race.
        """
        stream = sessions.stream_for(sessions.check_session_id(session_id))
        version, view = self._session_cache.get(stream, (0, None))
        state = self.store.load_stream(stream, version)
        for rec in state.events:
            view = session_proj.evolve(view, rec)
        self._cache_session(stream, state.version, view)
        return stream, state.version, view

    def _cache_session(self, stream: str, version: int, view: SessionView | None) -> None:
        if view is None:
            return
        with self._cache_lock:
            cached = self._session_cache.get(stream)
            if cached is None or cached[0] < version:
                self._session_cache[stream] = (version, view)
                self._session_cache.move_to_end(stream)
                while len(self._session_cache) > SESSION_CACHE_SIZE:
                    self._session_cache.popitem(last=False)

    def _open_session(self, actor: Actor, session_id: str, *, while_locked: bool = False) -> SessionGrant:
        """THE check for every command that acts in a session: the id is well formed, the session exists, belongs
        to the caller, is open and its anchor is not locked — else :class:`InvalidInput`, :class:`NotFound`,
        :class:`Forbidden`, :class:`Conflict` or :class:`SessionLocked` saying what to send or do instead.
        Commands call it before they append anything. ``while_locked=True`` only for the commands that answer a
        locked session themselves (a recorded refusal: ``assert_compliance``, ``odyssean_anchor``) or end it
        (``clock_out``)."""
        access.require_writer(actor)  # acting in a session records something: say why before "another agent's"
        stream, version, view = self._session(session_id)
        granted = sessions.authorise(view, session_id, actor.agent, while_locked=while_locked)
        return SessionGrant(session_id, stream, version, granted)

    def _open_session_if(self, actor: Actor, session_id: str | None) -> SessionGrant | None:
        """:meth:`_open_session` for commands whose session is optional (``None`` when none was sent)."""
        return None if session_id is None else self._open_session(actor, session_id)

    def _administer_session(self, actor: Actor, session_id: str, doing: str) -> SessionGrant:
        """A person (an admin credential) acting on any agent's session, open or closed — e.g. an anchor unlock."""
        access.require_admin(actor, doing)
        stream, version, view = self._session(session_id)
        if view is None:
            raise NotFound(f"session {session_id} does not exist", "check the session id")
        return SessionGrant(session_id, stream, version, view)

    def _start_session(self, actor: Actor, session_id: str, events: Sequence[DomainEvent]) -> SessionView:
        """Append a new session's first events (clock in): the caller owns what it opens."""
        stream = sessions.stream_for(session_id)
        meta = {**self._meta(actor, None), "session_id": session_id}
        recorded = self._append(actor, stream, 0, events, meta)
        view: SessionView | None = None
        for rec in recorded:
            view = session_proj.evolve(view, rec)
        assert view is not None
        self._cache_session(stream, len(recorded), view)
        return view

    def _append_to_session(
        self, actor: Actor, session: SessionGrant, events: Sequence[DomainEvent]
    ) -> tuple[list[RecordedEvent], SessionView]:
        """Append to a granted session's stream (at the version it was read at) and return the view after."""
        recorded = self._append(actor, session.stream, session.version, events, self._meta(actor, session))
        view: SessionView | None = session.view
        for rec in recorded:
            view = session_proj.evolve(view, rec)
        assert view is not None
        self._cache_session(session.stream, session.version + len(recorded), view)
        return recorded, view

    @property
    def snapshots(self) -> snapshots.Snapshots:
        """The projection snapshots of this store, signed and checked with the ledger key."""
        if self._snapshot_store is None:
            self._snapshot_store = snapshots.Snapshots(
                self.store, self.signer, every=self.config.snapshot_every, clock=self.clock
            )
        return self._snapshot_store

    def _signer(self) -> signing.SigningKey:
        if self.signer is None:
            raise NotInitialised(
                "this ledger has no Ed25519 signing key yet (it was initialised before signing keys existed)",
                "run `compliance-ledger init` once: it creates the key (LEDGER_SIGNING_KEY_FILE) and keeps the rest",
            )
        return self.signer

    # --- setup ----------------------------------------------------------------------------------------
    def _until(self, as_of: _dt.datetime | None, position: int | None) -> int | None:
        if as_of is not None and position is not None:
            raise InvalidInput("as_of and position were both given", "send one of them, not both")
        if position is not None:
            if isinstance(position, bool) or position < 0:
                raise InvalidInput("position must be 0 or more", "send a log position, e.g. 120")
            return position
        if as_of is not None:
            if as_of.tzinfo is None:
                raise InvalidInput("as_of has no UTC offset", "send an ISO time such as 2026-01-31T12:00:00Z")
            return self.store.position_as_of(as_of)
        return None


def check_agent(agent: str) -> str:
    if not isinstance(agent, str) or not agent.strip() or len(agent) > MAX_AGENT_CHARS:
        raise InvalidInput(f"agent name {agent!r} is not valid", f"use a non-empty name of at most {MAX_AGENT_CHARS}")
    return agent
