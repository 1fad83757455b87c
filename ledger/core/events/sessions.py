"""Events of sessions and the compliance gate: a session started and ended, a stamp given or refused."""

from typing import ClassVar, Literal

from pydantic import Field

from ledger.core.events.base import DomainEvent, Texts


class SessionStarted(DomainEvent):
    """An agent clocked in and opened a ledger session, with the project context read by the server."""

    type_name: ClassVar[str] = "SessionStarted"
    texts: ClassVar[Texts] = Texts(
        free=("focus",),
        labels=("agent", "role", "working_dir"),
        ledger=("session_id", "branch", "phase", "context_files"),
    )
    session_id: str
    agent: str
    role: str
    working_dir: str | None = None
    focus: str | None = None
    branch: str | None = None
    files: int | None = None
    phase: str | None = None
    context_files: list[str] = []


class SessionEnded(DomainEvent):
    """The session's agent clocked out; the session accepts no further actions."""

    type_name: ClassVar[str] = "SessionEnded"
    texts: ClassVar[Texts] = Texts(ledger=("session_id", "reason"))
    session_id: str
    reason: str = "clock_out"


class ComplianceStamped(DomainEvent):
    """The gate passed: the session's token (issued by the search at ``search_position``) was consumed.

    v2 added ``request_id``: the caller's id for the request, so a retry of it gets this answer again.
    """

    type_name: ClassVar[str] = "ComplianceStamped"
    schema_version: ClassVar[int] = 2
    texts: ClassVar[Texts] = Texts(labels=("request_id",), ledger=("session_id", "stamp"))
    session_id: str
    search_position: int
    count: int
    stamp: str
    request_id: str | None = None


RefusalReason = Literal["no_search", "token_consumed", "token_expired", "anchor_required", "anchor_locked"]


class ComplianceRefused(DomainEvent):
    """The gate refused a stamp request and told the agent what to do.

    v2 added ``request_id``: the caller's id for the request, so a retry of it gets this answer again.
    """

    type_name: ClassVar[str] = "ComplianceRefused"
    schema_version: ClassVar[int] = 2
    texts: ClassVar[Texts] = Texts(labels=("request_id",), ledger=("session_id", "reason", "message"))
    session_id: str
    reason: RefusalReason
    message: str
    request_id: str | None = None


class SessionErased(DomainEvent):
    """An administrator erased a session's free text (its focus, search and recall queries, proofs, notes): the
    data keys it was encrypted under (``key_ids``) were destroyed and derived copies purged. ``plaintext_events``
    counts the session's events written before encryption, whose text stays in the log's bytes. The ``reason``
    stays readable (a label) and must name no personal data."""

    type_name: ClassVar[str] = "SessionErased"
    texts: ClassVar[Texts] = Texts(labels=("reason",), ledger=("session_id", "key_ids"))
    session_id: str
    reason: str
    key_ids: list[str] = Field(default_factory=list)
    plaintext_events: int = 0
