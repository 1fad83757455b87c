"""Sessions and their compliance token: a pure fold over one session stream."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from ledger.core.events import (
    AnchorAttempted,
    AnchorChallengeIssued,
    AnchorLocked,
    AnchorUnlocked,
    ComplianceRefused,
    ComplianceStamped,
    MemoryRecalled,
    MemorySearched,
    RecordedEvent,
    SessionEnded,
    SessionErased,
    SessionStarted,
)
from ledger.core.sealed import ERASED_TEXT
from projections._copy import in_place, with_changes

TokenStatus = Literal["none", "valid", "consumed", "expired"]
STREAM_PREFIX = "session:"


@dataclass(frozen=True, slots=True)
class Token:
    """The one-time token issued by the session's latest memory search."""

    search_position: int
    issued_at: _dt.datetime
    query: str
    count: int
    result_ids: tuple[str, ...]
    expires_at: _dt.datetime | None
    consumed_position: int | None = None

    def status_at(self, moment: _dt.datetime) -> TokenStatus:
        if self.consumed_position is not None:
            return "consumed"
        if self.expires_at is not None and moment >= self.expires_at:
            return "expired"
        return "valid"


@dataclass(frozen=True, slots=True)
class AnchorChallenge:
    """The session's latest anchor challenge: the line the server asked for, and whether a proof answered it."""

    challenge_id: str
    path: str
    line: int
    line_digest: str
    issued_at: _dt.datetime
    expires_at: _dt.datetime
    used_position: int | None = None  # the AnchorAttempted that answered it (one challenge, one attempt)


@dataclass(frozen=True, slots=True)
class SessionView:
    """What the ledger knows about one session."""

    session_id: str
    agent: str
    role: str
    working_dir: str | None
    focus: str | None
    started_at: _dt.datetime
    ended_at: _dt.datetime | None = None
    last_event_at: _dt.datetime | None = None
    token: Token | None = None
    searches: int = 0
    stamps: int = 0
    refusals: int = 0
    last_stamp_position: int | None = None
    version: int = 0
    position: int = 0
    branch: str | None = None
    files: int | None = None
    phase: str | None = None
    context_files: tuple[str, ...] = ()
    anchor_attempt: int = 0  # attempts since the last success or unlock: what the retry limit counts
    anchor_total: int = 0
    anchor_validated: bool = False
    anchor_position: int | None = None
    anchor_locked: bool = False
    lockouts: int = 0
    anchor_challenge: AnchorChallenge | None = None  # the latest one issued
    # earlier challenges of the session: id -> "used" (answered by an attempt) or "replaced" (by a newer one)
    past_challenges: Mapping[str, str] = field(default_factory=dict, hash=False)
    # request_id -> position of the gate's answer to it (a retry with the id gets that answer again)
    answers: Mapping[str, int] = field(default_factory=dict, hash=False)

    @property
    def is_open(self) -> bool:
        return self.ended_at is None

    def token_status(self, moment: _dt.datetime) -> TokenStatus:
        return "none" if self.token is None else self.token.status_at(moment)


_VIEW_IN_PLACE = in_place(SessionView)
_TOKEN_IN_PLACE = in_place(Token)


def session_key(rec: RecordedEvent) -> str | None:
    """Sessions are keyed by their stream: ``session:<id>``."""
    return rec.stream[len(STREAM_PREFIX) :] if rec.stream.startswith(STREAM_PREFIX) else None


def _answered(view: SessionView, request_id: str | None, position: int) -> Mapping[str, int]:
    """The view's answered requests plus this one (a new mapping: views are never changed in place)."""
    if request_id is None or request_id in view.answers:
        return view.answers
    return {**view.answers, request_id: position}


def evolve(view: SessionView | None, rec: RecordedEvent) -> SessionView | None:
    """Apply one event of a session stream to the session's view (one copy per event)."""
    return _evolve(view, rec, with_changes, with_changes)


def evolve_owned(view: SessionView | None, rec: RecordedEvent) -> SessionView | None:
    """:func:`evolve` for bulk replay: changes ``view`` (and its token) in place, so only for a view made by
    :func:`own` or by this fold itself and shown to no one yet. Equal to what :func:`evolve` returns."""
    return _evolve(view, rec, _VIEW_IN_PLACE, _TOKEN_IN_PLACE)


def own(view: SessionView) -> SessionView:
    """A private copy of ``view`` for :func:`evolve_owned`: the view and its token (the only parts it changes
    in place; ``answers`` is always replaced, never changed)."""
    token = view.token
    return with_changes(view, token=None if token is None else with_changes(token))


def _evolve(
    view: SessionView | None,
    rec: RecordedEvent,
    change: Callable[..., SessionView],
    change_token: Callable[..., Token],
) -> SessionView | None:
    """The fold itself; ``change(obj, **fields)`` makes the next state (a copy, or the same object changed).

    Events are matched on their exact type (``type(e) is``): the vocabulary's classes are leaves
    (``tests/unit/test_events.py``), and each failed ``isinstance`` against a pydantic model class goes through
    its metaclass's ``__instancecheck__`` (about as slow as a field copy)."""
    e = rec.event
    if type(e) is SessionStarted:
        return SessionView(
            session_id=e.session_id,
            agent=e.agent,
            role=e.role,
            working_dir=e.working_dir,
            focus=e.focus,
            started_at=rec.recorded_at,
            last_event_at=rec.recorded_at,
            version=rec.version,
            position=rec.position,
            branch=e.branch,
            files=e.files,
            phase=e.phase,
            context_files=tuple(e.context_files),
        )
    if view is None:
        return None
    at, version, position = rec.recorded_at, rec.version, rec.position
    if (type(e) is MemorySearched or type(e) is MemoryRecalled) and e.query is not None:
        # A recall with a query brings memories to the agent exactly as a search does: it issues the token.
        if isinstance(e, MemorySearched):
            ids = e.result_ids
        else:  # only the blocks relevant to the query count (v2); a recall before v2 counted every block shown
            ids = e.block_ids if e.relevant_ids is None else e.relevant_ids
        token = Token(
            search_position=rec.position,
            issued_at=rec.recorded_at,
            query=e.query,
            count=len(ids),
            result_ids=tuple(ids),
            expires_at=e.token_expires_at,
        )
        return change(
            view,
            token=token,
            searches=view.searches + 1,
            last_event_at=at,
            version=version,
            position=position,
        )
    if type(e) is SessionErased:  # the session's free text is gone: no copy of it stays in the view
        kept = view.token if view.token is None else change_token(view.token, query=ERASED_TEXT)
        return change(view, focus=None, token=kept, version=version, position=position)
    if type(e) is ComplianceStamped:
        current = view.token
        if current is not None and current.search_position == e.search_position:
            current = change_token(current, consumed_position=rec.position)
        return change(
            view,
            token=current,
            answers=_answered(view, e.request_id, rec.position),
            stamps=view.stamps + 1,
            last_stamp_position=rec.position,
            last_event_at=at,
            version=version,
            position=position,
        )
    if type(e) is ComplianceRefused:
        return change(
            view,
            answers=_answered(view, e.request_id, rec.position),
            refusals=view.refusals + 1,
            last_event_at=at,
            version=version,
            position=position,
        )
    if type(e) is AnchorChallengeIssued:
        past = view.past_challenges
        if (prior := view.anchor_challenge) is not None:
            past = {**past, prior.challenge_id: "replaced" if prior.used_position is None else "used"}
        issued = AnchorChallenge(e.challenge_id, e.path, e.line, e.line_digest, at, e.expires_at)
        return change(
            view, anchor_challenge=issued, past_challenges=past, last_event_at=at, version=version, position=position
        )
    if type(e) is AnchorAttempted:
        challenge = view.anchor_challenge
        if e.challenge_id is not None and challenge is not None and challenge.challenge_id == e.challenge_id:
            challenge = with_changes(challenge, used_position=rec.position)
        if e.validated:
            return change(
                view,
                anchor_challenge=challenge,
                anchor_attempt=0,
                anchor_total=view.anchor_total + 1,
                anchor_validated=True,
                anchor_position=rec.position,
                last_event_at=at,
                version=version,
                position=position,
            )
        return change(
            view,
            anchor_challenge=challenge,
            anchor_attempt=e.attempt,
            anchor_total=view.anchor_total + 1,
            last_event_at=at,
            version=version,
            position=position,
        )
    if type(e) is AnchorLocked:
        # A lock overrides an earlier validated anchor: after an unlock the session must anchor again.
        return change(
            view,
            anchor_locked=True,
            anchor_validated=False,
            lockouts=view.lockouts + 1,
            last_event_at=at,
            version=version,
            position=position,
        )
    if type(e) is AnchorUnlocked:
        return change(view, anchor_locked=False, anchor_attempt=0, last_event_at=at, version=version, position=position)
    if type(e) is SessionEnded:
        return change(view, ended_at=at, last_event_at=at, version=version, position=position)
    return change(view, last_event_at=at, version=version, position=position)


def fold(events: Iterable[RecordedEvent]) -> SessionView | None:
    """Fold a session stream from its first event."""
    view: SessionView | None = None
    for rec in events:
        view = evolve(view, rec)
    return view
