"""What the service returns. MCP renders these as structured content and REST as JSON, unchanged."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Literal

from pydantic import BaseModel, Field

from ledger.anchor.decisions import Enforcement
from ledger.core.events import KeyRole
from ledger.memory.recall import Scored
from projections.apikeys import KeyView
from projections.compliance import AgentCompliance
from projections.sessions import SessionView, TokenStatus


class SessionInfo(BaseModel):
    """A session as clock_in / clock_out report it, with the project context the server read."""

    session_id: str
    agent: str
    role: str
    started_at: _dt.datetime
    working_dir: str | None = None
    focus: str | None = None
    ended_at: _dt.datetime | None = None
    branch: str | None = None
    files: int | None = None
    phase: str | None = None
    context_files: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, v: SessionView) -> SessionInfo:
        return cls(
            session_id=v.session_id,
            agent=v.agent,
            role=v.role,
            started_at=v.started_at,
            working_dir=v.working_dir,
            focus=v.focus,
            ended_at=v.ended_at,
            branch=v.branch,
            files=v.files,
            phase=v.phase,
            context_files=list(v.context_files),
        )


class AnchorState(BaseModel):
    """The session's Odyssean Anchor standing."""

    validated: bool
    position: int | None
    attempt: int
    total_attempts: int
    locked: bool
    lockouts: int


class TokenState(BaseModel):
    """The session's compliance token as of a moment."""

    status: TokenStatus
    search_position: int | None = None
    issued_at: _dt.datetime | None = None
    expires_at: _dt.datetime | None = None
    query: str | None = None
    count: int | None = None
    result_ids: list[str] = Field(default_factory=list)


class SessionState(SessionInfo):
    """A session with its token and counters, as of a position or time."""

    token: TokenState
    anchor: AnchorState
    searches: int
    stamps: int
    refusals: int
    as_of: _dt.datetime
    position: int

    @classmethod
    def at(cls, v: SessionView, moment: _dt.datetime, position: int) -> SessionState:
        t = v.token
        token = TokenState(status=v.token_status(moment))
        if t is not None:
            token = TokenState(
                status=t.status_at(moment),
                search_position=t.search_position,
                issued_at=t.issued_at,
                expires_at=t.expires_at,
                query=t.query,
                count=t.count,
                result_ids=list(t.result_ids),
            )
        return cls(
            **SessionInfo.of(v).model_dump(),
            token=token,
            anchor=AnchorState(
                validated=v.anchor_validated,
                position=v.anchor_position,
                attempt=v.anchor_attempt,
                total_attempts=v.anchor_total,
                locked=v.anchor_locked,
                lockouts=v.lockouts,
            ),
            searches=v.searches,
            stamps=v.stamps,
            refusals=v.refusals,
            as_of=moment,
            position=position,
        )


class RememberResult(BaseModel):
    block_id: str
    status: Literal["created", "duplicate_rejected"]


class SearchHit(BaseModel):
    block_id: str
    content: str
    tags: list[str]
    score: float


class SearchResult(BaseModel):
    results: list[SearchHit]
    count: int
    session_id: str
    token_expires_at: _dt.datetime | None = None


class AssertResult(BaseModel):
    """PASS carries the stamp and its receipt; FAIL carries the gate's message."""

    status: Literal["PASS", "FAIL"]
    session_id: str
    stamp: str | None = None
    receipt: str | None = None
    message: str | None = None
    reason: str | None = None
    position: int
    request_id: str | None = Field(default=None, description="the request id sent, if any")
    repeated: bool = Field(
        default=False, description="true: this request id was answered before; this is that answer, unchanged"
    )


class StampVerification(BaseModel):
    valid: bool
    reason: str
    scheme: str | None = Field(
        default=None, description="clr2: Ed25519 (checkable offline); clr1: HMAC (ledger host only)"
    )
    checked_against_log: bool = Field(default=True, description="false when only the signature was checked (offline)")
    position: int | None = None
    event_hash: str | None = None
    session_id: str | None = None
    agent: str | None = None
    count: int | None = None
    stamp: str | None = None
    recorded_at: _dt.datetime | None = None


class AgentReport(BaseModel):
    agent: str
    searches: int
    stamp_requests: int
    passes: int
    fails: int
    pass_rate: float | None
    anchor_attempts: int
    anchor_passes: int
    first_try_pass_rate: float | None
    lockouts: int
    transitions: int = 0
    transition_refusals: int = 0
    refusal_reasons: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def of(cls, a: AgentCompliance) -> AgentReport:
        return cls(
            agent=a.agent,
            searches=a.searches,
            stamp_requests=a.stamp_requests,
            passes=a.passes,
            fails=a.fails,
            pass_rate=a.pass_rate,
            anchor_attempts=a.anchor_attempts,
            anchor_passes=a.anchor_passes,
            first_try_pass_rate=a.first_try_pass_rate,
            lockouts=a.lockouts,
            transitions=a.transitions,
            transition_refusals=a.transition_refusals,
            refusal_reasons=dict(a.refusal_codes),
        )


class ComplianceReport(BaseModel):
    position: int
    as_of: _dt.datetime | None
    agents: list[AgentReport]


class ApiKeyCreated(BaseModel):
    """A key just issued (or issued by a rotation that revoked ``replaces``): the plaintext is shown only here."""

    key_id: str
    agent: str
    role: KeyRole
    api_key: str
    replaces: str | None = None

    @property
    def admin(self) -> bool:
        return self.role == "admin"


class ApiKeyInfo(BaseModel):
    """An issued key as ``keys list`` shows it: never the key or its hash."""

    key_id: str
    agent: str
    role: KeyRole
    issued_at: _dt.datetime
    issued_by: str | None
    position: int
    revoked_at: _dt.datetime | None = None
    revoked_by: str | None = None
    reason: str | None = None
    replaced_by: str | None = None

    @classmethod
    def of(cls, view: KeyView) -> ApiKeyInfo:
        return cls(
            key_id=view.key_id,
            agent=view.agent,
            role=view.role,
            issued_at=view.issued_at,
            issued_by=view.issued_by,
            position=view.position,
            revoked_at=view.revoked_at,
            revoked_by=view.revoked_by,
            reason=view.reason,
            replaced_by=view.replaced_by,
        )


class AnchorResult(BaseModel):
    """The server's verdict on an anchor proof, with guidance and where the session stands."""

    validated: bool
    canonical_proof: str
    errors: list[str]
    guidance: str
    enforcement: Enforcement
    warnings: list[str] = Field(default_factory=list)
    template: str = ""
    session_id: str
    position: int


class MemorySetupResult(BaseModel):
    """What ``memory_setup`` / ``init`` seeding stored; blocks that already existed are left untouched."""

    created: list[str]
    already_present: list[str]
    constitutional_blocks: int


# --- memory lifecycle ------------------------------------------------------------------------------------------


class ScoreParts(BaseModel):
    """A block's composite score and every component, with the weights that combined them."""

    total: float
    similarity: float
    confidence: float
    recency: float
    centrality: float
    reinforcement: float
    weights: dict[str, float]
    active_hours_since_reinforced: float
    weighted_degree: float

    @classmethod
    def of(cls, s: Scored) -> ScoreParts:
        b = s.breakdown
        w = b.weights
        return cls(
            total=round(b.total, 6),
            similarity=round(b.similarity, 6),
            confidence=round(b.confidence, 6),
            recency=round(b.recency, 6),
            centrality=round(b.centrality, 6),
            reinforcement=round(b.reinforcement, 6),
            weights={
                "similarity": round(w.similarity, 6),
                "confidence": round(w.confidence, 6),
                "recency": round(w.recency, 6),
                "centrality": round(w.centrality, 6),
                "reinforcement": round(w.reinforcement, 6),
            },
            active_hours_since_reinforced=round(s.active_hours_since, 6),
            weighted_degree=round(s.degree, 6),
        )


class BlockOut(BaseModel):
    """A memory block with its decay state and score breakdown."""

    block_id: str
    content: str
    tags: list[str]
    category: str
    tier: str
    decay_rate: float
    confidence: float
    outcomes: int
    reinforcements: int
    last_reinforced_at: _dt.datetime
    created_at: _dt.datetime
    archived_at: _dt.datetime | None
    score: ScoreParts

    @classmethod
    def of(cls, s: Scored, content: str) -> BlockOut:
        b = s.block
        return cls(
            block_id=b.block_id,
            content=content,
            tags=list(b.tags),
            category=b.category,
            tier=b.tier.value,
            decay_rate=b.lam,
            confidence=round(b.confidence, 6),
            outcomes=b.outcomes,
            reinforcements=b.reinforcements,
            last_reinforced_at=b.last_reinforced_at,
            created_at=b.created_at,
            archived_at=b.archived_at,
            score=ScoreParts.of(s),
        )


class RecalledBlock(BlockOut):
    guaranteed: bool
    truncated: bool


class DroppedBlock(BaseModel):
    block_id: str
    reason: Literal["top_k", "token_budget"]


class RecallResult(BaseModel):
    """What a recall brought to the agent: the rendered text and the blocks in it, best first."""

    frame: str
    query: str | None
    text: str
    tokens: int
    token_budget: int
    blocks: list[RecalledBlock]
    dropped: list[DroppedBlock]
    active_hours: float
    session_id: str | None
    token_expires_at: _dt.datetime | None
    position: int


class CurateResult(BaseModel):
    """What curate did (the ids are in the ``MemoryCurated`` event at ``position``)."""

    trigger: Literal["manual", "auto"]
    archived: int
    edges_pruned: int
    constitutional_reinforced: int
    reinforced: int
    archived_ids: list[str]
    reinforced_ids: list[str]
    active_hours: float
    position: int


class OutcomeChange(BaseModel):
    block_id: str
    confidence_before: float
    confidence_after: float
    decay_rate_before: float
    decay_rate_after: float


class OutcomeResult(BaseModel):
    signal: float
    blocks: list[OutcomeChange]
    position: int


class BlockList(BaseModel):
    """Blocks as of a moment, best score first; scores are normalised within the listed set."""

    as_of: _dt.datetime
    position: int
    active_hours: float
    count: int
    blocks: list[BlockOut]


class BlockEvent(BaseModel):
    position: int
    recorded_at: _dt.datetime
    type: str
    agent: str | None
    detail: dict[str, Any]


class BlockDetail(BaseModel):
    """One block as of a moment, scored against every live block, with every event that touched it."""

    block: BlockOut
    history: list[BlockEvent]
    as_of: _dt.datetime
    position: int


class MemoryStats(BaseModel):
    blocks: int
    archived: int
    constitutional: int
    edges: int
    curates: int
    active_hours: float
    last_curate_active_hours: float | None
    next_auto_curate_at_active_hours: float


# --- workflow tasks ----------------------------------------------------------------------------------------------


class WorkReport(BaseModel):
    """Work reported on a task through manage_task / manage_context / manage_subtask."""

    tool: str
    action: str
    subtask_id: str | None
    params: dict[str, Any]
    agent: str | None
    recorded_at: _dt.datetime
    position: int


class TaskInfo(BaseModel):
    """A task as of a moment, with the transitions the table offers from its status."""

    task_id: str
    task_type: str
    title: str
    status: str
    role: str
    dna: dict[str, Any]
    created_at: _dt.datetime
    created_by: str | None
    updated_at: _dt.datetime | None
    blocked_from: str | None
    transitions: int
    refusals: int
    position: int
    next: list[str]
    work: list[WorkReport] = Field(default_factory=list)
    subtasks: dict[str, str] = Field(default_factory=dict)


class TransitionResult(BaseModel):
    """``transitioned`` with the DNA evidence (field -> proving event position), or ``refused`` with reasons."""

    status: Literal["transitioned", "refused"]
    task: TaskInfo
    from_status: str
    to_status: str
    acting_role: str
    rule: str | None = None
    evidence: dict[str, int] = Field(default_factory=dict)
    cleared_dna: list[str] = Field(default_factory=list)
    codes: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    position: int


class ManagedResult(BaseModel):
    """The answer of manage_task / manage_context / manage_subtask.

    Allowed: ``success`` true (false only when the workflow refused a completion, with ``error``), the task,
    and at warning level a ``context_warning`` with ``suggestions``. Blocked: ``success`` false with what was
    missing or invalid, a hint, a complete valid ``example``, the caller's own call with the gaps marked
    (``suggested_correction``) and where the rules are documented.
    """

    success: bool
    error: str | None = None
    enforcement_level: str
    base_level: str
    missing_parameters: list[str] = Field(default_factory=list)
    invalid_parameters: dict[str, str] = Field(default_factory=dict)
    hint: str | None = None
    example: dict[str, Any] | None = None
    suggested_correction: dict[str, Any] | None = None
    documentation: str | None = None
    context_warning: str | None = None
    suggestions: list[str] = Field(default_factory=list)
    task: TaskInfo | None = None
    check_position: int
