"""What session and gate commands return: sessions, tokens, search hits, the gate's answer, stamp checks and
the compliance report. MCP renders these as structured content and REST as JSON, unchanged."""

from __future__ import annotations

import datetime as _dt
from typing import Literal

from pydantic import BaseModel, Field

from ledger.core.errors import StoreUnavailable

# The constants of the interface adapters publish (limits in schemas, the gate's texts in prompts and errors).
from ledger.sessions.decisions import MAX_FOCUS_CHARS as MAX_FOCUS_CHARS
from ledger.sessions.decisions import MAX_PATH_CHARS as MAX_PATH_CHARS
from ledger.sessions.decisions import MAX_ROLE_CHARS as MAX_ROLE_CHARS
from ledger.sessions.decisions import ROLE_PATTERN as ROLE_PATTERN
from ledger.sessions.decisions import SESSION_ID_PATTERN as SESSION_ID_PATTERN
from ledger.sessions.gate import GATE_CLOSED as GATE_CLOSED
from ledger.sessions.gate import GROUNDING_INSTRUCTION as GROUNDING_INSTRUCTION
from ledger.sessions.gate import MSG_STORE_BUSY as MSG_STORE_BUSY
from ledger.sessions.gate import MSG_STORE_DOWN as MSG_STORE_DOWN
from ledger.sessions.receipts import MAX_RECEIPT_CHARS as MAX_RECEIPT_CHARS
from projections.compliance import AgentCompliance
from projections.provenance import Origin
from projections.search import Hit
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
        return cls.model_validate(v, from_attributes=True)


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


class Provenance(BaseModel):
    """Where a memory block came from, as the ledger recorded it when the block was stored (its
    ``MemoryRemembered`` event and that event's metadata), never what a caller claims: the same object on every
    read that returns a block (search, lookup, recall, block listings and details, brain sources), MCP and REST."""

    context: str | None = Field(
        description="what the contributor said it was working on when it stored the block (a brain thought's "
        "context); null when it said nothing"
    )
    agent: str | None = Field(description="the agent the block was stored for, from its credential")
    session_id: str | None = Field(description="the session the block was stored in; null when stored outside one")
    position: int = Field(description="the log position of the MemoryRemembered event that stored the block")

    @classmethod
    def of(cls, origin: Origin) -> Provenance:
        return cls.model_validate(origin, from_attributes=True)


class SearchHit(BaseModel):
    block_id: str
    content: str
    tags: list[str]
    score: float = Field(
        description="the rank score: fused (cosine + 0.3 x relative BM25 of a strong match) when "
        "search is hybrid, else the full-text score"
    )
    bm25: float | None = Field(
        default=None,
        description="the full-text score (BM25; PostgreSQL ts_rank_cd), null when only the embeddings found the block",
    )
    cosine: float | None = Field(
        default=None,
        description="the embedding cosine with the query; null when search "
        "is BM25 alone (no [semantic] extra, or LEDGER_SEMANTIC=false)",
    )
    provenance: Provenance

    @classmethod
    def of(cls, hit: Hit) -> SearchHit:
        """A ranked hit as answered; a hit without its provenance means the index lost it: fail closed."""
        if hit.origin is None:
            raise StoreUnavailable(
                f"the search index holds no provenance for block {hit.block_id}",
                "run `compliance-ledger replay`, which rebuilds the index from the log",
            )
        return cls(
            block_id=hit.block_id,
            content=hit.content,
            tags=hit.tags,
            score=round(hit.score, 6),
            bm25=_rounded(hit.bm25),
            cosine=_rounded(hit.cosine),
            provenance=Provenance.of(hit.origin),
        )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


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


class StopHookCounts(BaseModel):
    """An agent's client hooks: turns started by a user prompt, and the Stop hook's answers."""

    turns_started: int = Field(default=0, description="user prompts the UserPromptSubmit hook recorded")
    stops_blocked: int = Field(default=0, description="stops refused: no stamp earned since the turn started")
    stops_allowed: int = Field(default=0, description="stops let through: a stamp was earned in the turn")
    loop_guard_passes: int = Field(
        default=0, description="stops let through without a stamp, because the client was already held by a block"
    )


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
    stop_hook: StopHookCounts = Field(
        default_factory=StopHookCounts,
        description="the client's Stop and UserPromptSubmit hooks (compliance-ledger hook)",
    )

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
            stop_hook=StopHookCounts(
                turns_started=a.turns_started,
                stops_blocked=a.stops_blocked,
                stops_allowed=a.stops_allowed,
                loop_guard_passes=a.stop_loop_guard_passes,
            ),
        )


class ComplianceReport(BaseModel):
    position: int
    as_of: _dt.datetime | None
    agents: list[AgentReport]


Bucket = Literal["hour", "day"]


class SeriesPoint(BaseModel):
    """What each agent did in one bucket ``[start, start + bucket)``; agents with nothing recorded are left out."""

    start: _dt.datetime
    agents: list[AgentReport]


class ComplianceSeries(BaseModel):
    """The gate's counts per agent and bucket over ``[start, end)``, and their totals over the window."""

    start: _dt.datetime
    end: _dt.datetime
    bucket: Bucket
    agent: str | None = Field(None, description="the series is limited to this agent")
    first_position: int = Field(description="the first log position the window covers")
    last_position: int = Field(description="the last log position the window covers")
    points: list[SeriesPoint]
    totals: list[AgentReport] = Field(description="each agent's counts over the whole window")
