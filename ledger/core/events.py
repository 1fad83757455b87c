"""The event vocabulary: explicit, frozen, past-tense facts with stable type names and versioned payloads.

Each event class names what happened. ``type_name`` is the stable name stored in the ``events`` table (never a
module path) and ``schema_version`` the payload version. Payloads stored under an older version are upcast on
read by the chained functions in ``UPCASTERS``. This module imports nothing of the project but the canonical
timestamp format.
"""

import datetime as _dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, PlainSerializer

from ledger.core.canonical import format_ts


def _aware_utc(moment: _dt.datetime) -> _dt.datetime:
    if moment.tzinfo is None:
        raise ValueError("timestamps must carry a UTC offset")
    return moment.astimezone(_dt.UTC)


Timestamp = Annotated[_dt.datetime, AfterValidator(_aware_utc), PlainSerializer(format_ts, when_used="json")]


class DomainEvent(BaseModel):
    """Base of every fact in the ledger."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    type_name: ClassVar[str]
    schema_version: ClassVar[int] = 1


# --- ledger -----------------------------------------------------------------------------------------------


class LedgerInitialised(DomainEvent):
    """The ledger was initialised and bound to the receipt key with this fingerprint."""

    type_name: ClassVar[str] = "LedgerInitialised"
    receipt_key_id: str


class SigningKeyBound(DomainEvent):
    """The ledger was bound to the Ed25519 key that signs its receipts and checkpoints (public half recorded)."""

    type_name: ClassVar[str] = "SigningKeyBound"
    key_id: str
    public_key: str  # raw public key, base64url (the JWK's "x")


KeyRole = Literal["agent", "auditor", "admin"]


class ApiKeyIssued(DomainEvent):
    """An API key was issued to an agent with a role; only the key's SHA-256 is recorded.

    v2 replaced the ``admin`` flag of v1 with ``role``: ``agent`` (reads only its own), ``auditor`` (reads
    everything, changes nothing) or ``admin``.
    """

    type_name: ClassVar[str] = "ApiKeyIssued"
    schema_version: ClassVar[int] = 2
    key_id: str
    agent: str
    key_sha256: str
    role: KeyRole = "agent"


class ApiKeyRevoked(DomainEvent):
    """An API key was revoked: from now on it identifies nobody. ``replaced_by`` names the key that a rotation
    issued in the same append."""

    type_name: ClassVar[str] = "ApiKeyRevoked"
    key_id: str
    reason: str | None = None
    replaced_by: str | None = None


# --- sessions ---------------------------------------------------------------------------------------------


class SessionStarted(DomainEvent):
    """An agent clocked in and opened a ledger session, with the project context read by the server."""

    type_name: ClassVar[str] = "SessionStarted"
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
    session_id: str
    reason: str = "clock_out"


# --- memory -----------------------------------------------------------------------------------------------


class MemoryRemembered(DomainEvent):
    """A new memory block was stored.

    v3 added ``category`` (v2 blocks are ``knowledge``); v2 made ``tags`` a list (v1 stored one comma-separated
    string).
    """

    type_name: ClassVar[str] = "MemoryRemembered"
    schema_version: ClassVar[int] = 3
    block_id: str
    content: str
    tags: list[str]
    category: str = "knowledge"
    session_id: str | None = None


class MemoryDuplicateRejected(DomainEvent):
    """A remember request was rejected because a block with the same normalised content exists."""

    type_name: ClassVar[str] = "MemoryDuplicateRejected"
    block_id: str
    session_id: str | None = None


class MemorySearched(DomainEvent):
    """A session searched memory; this issues the session's one-time compliance token."""

    type_name: ClassVar[str] = "MemorySearched"
    session_id: str
    query: str
    limit: int
    result_ids: list[str]
    count: int
    token_expires_at: Timestamp | None = None


Frame = Literal["self", "attention", "task"]


class MemoryRecalled(DomainEvent):
    """Blocks were recalled into a frame and brought to the agent; the projection reinforces them and the
    co-retrieval edges between them. A recall with a query in a session issues the session's token, exactly
    as a search does."""

    type_name: ClassVar[str] = "MemoryRecalled"
    session_id: str | None
    query: str | None
    frame: Frame
    top_k: int
    block_ids: list[str]
    guaranteed_ids: list[str]
    tokens: int
    active_hours: float
    token_expires_at: Timestamp | None = None


class MemoryCurated(DomainEvent):
    """Curate ran: blocks archived, co-retrieval edges pruned, blocks reinforced, at this many active hours."""

    type_name: ClassVar[str] = "MemoryCurated"
    trigger: Literal["manual", "auto"]
    active_hours: float
    archived: list[str]
    edges_pruned: list[tuple[str, str]]
    constitutional_reinforced: list[str]
    reinforced: list[str]


class MemoryOutcomeRecorded(DomainEvent):
    """An outcome signal in [0, 1] was recorded for blocks: their confidence moves by a Beta update, and a
    signal below 0.20 doubles their decay rate (capped)."""

    type_name: ClassVar[str] = "MemoryOutcomeRecorded"
    block_ids: list[str]
    signal: float
    session_id: str | None = None
    note: str | None = None


# --- the compliance gate ----------------------------------------------------------------------------------


class ComplianceStamped(DomainEvent):
    """The gate passed: the session's token (issued by the search at ``search_position``) was consumed.

    v2 added ``request_id``: the caller's id for the request, so a retry of it gets this answer again.
    """

    type_name: ClassVar[str] = "ComplianceStamped"
    schema_version: ClassVar[int] = 2
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
    session_id: str
    reason: RefusalReason
    message: str
    request_id: str | None = None


# --- the Odyssean Anchor ---------------------------------------------------------------------------------


class AnchorAttempted(DomainEvent):
    """An anchor proof was submitted and validated by the server against the authoritative context."""

    type_name: ClassVar[str] = "AnchorAttempted"
    session_id: str
    role: str
    tier: str
    attempt: int
    first_in_session: bool
    validated: bool
    errors: list[str]
    warnings: list[str]
    proof_candidate: str
    canonical_proof: str
    branch: str | None = None
    phase: str | None = None
    files: int = 0


class AnchorLocked(DomainEvent):
    """Too many failed anchor attempts: the session is locked until a person unlocks it."""

    type_name: ClassVar[str] = "AnchorLocked"
    session_id: str
    failed_attempts: int


class AnchorRefused(DomainEvent):
    """An anchor attempt on a locked session was refused without validation."""

    type_name: ClassVar[str] = "AnchorRefused"
    session_id: str


class AnchorUnlocked(DomainEvent):
    """A person unlocked the session's anchoring, with a reason; the attempt count starts again."""

    type_name: ClassVar[str] = "AnchorUnlocked"
    session_id: str
    reason: str


# --- workflow tasks ---------------------------------------------------------------------------------------------


class TaskCreated(DomainEvent):
    """A workflow task was created in a status, assigned to a role, with initial DNA."""

    type_name: ClassVar[str] = "TaskCreated"
    task_id: str
    task_type: str
    title: str
    status: str
    role: str
    dna: dict[str, Any] = {}


class TaskDnaUpdated(DomainEvent):
    """Fields of a task's DNA were set (``set``) or removed (``removed``)."""

    type_name: ClassVar[str] = "TaskDnaUpdated"
    task_id: str
    set: dict[str, Any] = {}
    removed: list[str] = []


class TaskTransitioned(DomainEvent):
    """A task moved between statuses under a rule of the workflow table; ``evidence`` maps each verified DNA
    field to the position of the ledger event that proves it."""

    type_name: ClassVar[str] = "TaskTransitioned"
    task_id: str
    from_status: str
    to_status: str
    acting_role: str
    rule: str
    role_before: str
    role_after: str
    cleared_dna: list[str] = []
    evidence: dict[str, int] = {}


class TaskTransitionRefused(DomainEvent):
    """A transition was refused; ``codes`` are machine-readable, ``reasons`` say what to do instead."""

    type_name: ClassVar[str] = "TaskTransitionRefused"
    task_id: str
    from_status: str
    to_status: str
    acting_role: str
    codes: list[str]
    reasons: list[str]


# --- parameter enforcement -------------------------------------------------------------------------------------


class ParameterChecked(DomainEvent):
    """A tool call's parameters were checked: the level applied, the outcome and what was missing or invalid.

    ``passed`` (the parameters were valid) is what progressive enforcement folds; ``allowed`` says whether the
    call went ahead. ``error`` is set when enforcement itself failed and a ``fail_open`` rule let the call
    through (outcome ``bypassed``)."""

    type_name: ClassVar[str] = "ParameterChecked"
    tool: str
    action: str
    base_level: str
    level: str
    outcome: str
    passed: bool
    allowed: bool
    missing: list[str] = []
    invalid: dict[str, str] = {}
    unknown: list[str] = []
    task_id: str | None = None
    session_id: str | None = None
    error: str | None = None


class TaskWorkRecorded(DomainEvent):
    """An agent reported work on a task (or one of its subtasks) through a managed tool: the parameters as
    given, e.g. ``work_notes`` and ``progress_made`` for ``manage_task.update``."""

    type_name: ClassVar[str] = "TaskWorkRecorded"
    task_id: str
    tool: str
    action: str
    subtask_id: str | None = None
    params: dict[str, Any] = {}


VOCABULARY: tuple[type[DomainEvent], ...] = (
    LedgerInitialised,
    SigningKeyBound,
    ApiKeyIssued,
    ApiKeyRevoked,
    SessionStarted,
    SessionEnded,
    MemoryRemembered,
    MemoryDuplicateRejected,
    MemorySearched,
    MemoryRecalled,
    MemoryCurated,
    MemoryOutcomeRecorded,
    ComplianceStamped,
    ComplianceRefused,
    AnchorAttempted,
    AnchorLocked,
    AnchorRefused,
    AnchorUnlocked,
    TaskCreated,
    TaskDnaUpdated,
    TaskTransitioned,
    TaskTransitionRefused,
    ParameterChecked,
    TaskWorkRecorded,
)
EVENT_TYPES: dict[str, type[DomainEvent]] = {cls.type_name: cls for cls in VOCABULARY}


# --- upcasting --------------------------------------------------------------------------------------------

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


def _memory_remembered_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    raw = data.get("tags") or ""
    tags = [t.strip() for t in raw.split(",") if t.strip()] if isinstance(raw, str) else list(raw)
    return {**data, "tags": tags}


def _memory_remembered_v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "category": data.get("category") or "knowledge"}


def _api_key_issued_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    lifted = {k: v for k, v in data.items() if k != "admin"}
    return {**lifted, "role": "admin" if data.get("admin") else "agent"}


def _request_id_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "request_id": None}  # requests before v2 carried no id


# (type name, stored version) -> function that lifts the payload to version + 1.
UPCASTERS: Mapping[tuple[str, int], Upcaster] = {
    ("MemoryRemembered", 1): _memory_remembered_v1_to_v2,
    ("MemoryRemembered", 2): _memory_remembered_v2_to_v3,
    ("ApiKeyIssued", 1): _api_key_issued_v1_to_v2,
    ("ComplianceStamped", 1): _request_id_v1_to_v2,
    ("ComplianceRefused", 1): _request_id_v1_to_v2,
}


class UnknownEventType(ValueError):
    """A stored event names a type this code does not know."""


def to_payload(event: DomainEvent) -> dict[str, Any]:
    """Return the JSON-ready payload of ``event`` at its current schema version."""
    return event.model_dump(mode="json")


def from_payload(type_name: str, schema_version: int, data: dict[str, Any]) -> DomainEvent:
    """Upcast a stored payload to the current version of its type and validate it."""
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        raise UnknownEventType(f"unknown event type {type_name!r}")
    version = schema_version
    if version < 1:
        raise UnknownEventType(f"{type_name} has an invalid schema version {schema_version}")
    while version < cls.schema_version:
        data = UPCASTERS[(type_name, version)](data)
        version += 1
    if version != cls.schema_version:
        raise UnknownEventType(f"{type_name} v{schema_version} is newer than this code (v{cls.schema_version})")
    return cls.model_validate(data)


def from_payload_json(type_name: str, schema_version: int, data_json: str) -> DomainEvent:
    """Like :func:`from_payload` for stored JSON text; current-version payloads skip the dict step."""
    cls = EVENT_TYPES.get(type_name)
    if cls is not None and schema_version == cls.schema_version:
        return cls.model_validate_json(data_json)
    return from_payload(type_name, schema_version, json.loads(data_json))


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """A typed event as the ledger recorded it: where, when, by whom, and its chain hash."""

    position: int
    stream: str
    version: int
    recorded_at: _dt.datetime
    meta: Mapping[str, Any]
    event: DomainEvent
    hash: str

    @property
    def agent(self) -> str | None:
        """The agent the event was recorded for, from the credential (never from a tool argument)."""
        value = self.meta.get("agent")
        return value if isinstance(value, str) else None
