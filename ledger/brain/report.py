"""What the brain answers (seed 003 Layer B): the thoughts retrieved, highways nearby, and the trace of the call."""

from __future__ import annotations

import datetime as _dt
from typing import Literal

from pydantic import BaseModel, Field

from ledger.brain import decisions as brain

# The constants of the interface, which adapters publish (limits in schemas, texts in answers).
from ledger.brain.decisions import MAX_CONTEXT_CHARS as MAX_CONTEXT_CHARS
from ledger.brain.decisions import MIN_CONTRIBUTION_CHARS as MIN_CONTRIBUTION_CHARS
from ledger.sessions.report import Provenance

Contribution = Literal["stored", "duplicate", "not_stored"]


class ThoughtSource(BaseModel):
    """A retrieved thought: what it says, who contributed it, how it ranked and how travelled it is."""

    thought_id: str
    content: str
    contributor: str | None = Field(
        None, description="the agent that stored the thought (None: before any agent); provenance.agent"
    )
    context: str | None = Field(
        None,
        description="what the contributor was working on when it stored the thought (if it said); provenance.context",
    )
    tags: list[str]
    score: float
    retrievals: int = Field(description="how often searches have returned this thought, this one included")
    highway: bool
    provenance: Provenance = Field(description="where the thought came from, as every read of a memory block says")


class Highway(BaseModel):
    """A thought retrieved at least 3 times by at least 2 distinct agents."""

    thought_id: str
    content: str
    retrievals: int
    agents: int = Field(description="how many distinct agents retrieved it")


class BrainResult(BaseModel):
    response: str = Field(description="what was retrieved and stored, as a short text")
    sources: list[ThoughtSource]
    highways_nearby: list[Highway]


class BrainTrace(BaseModel):
    """How the answer came about; ``session_id`` and ``thought_id`` are what workflow DNA fields accept."""

    session_id: str = Field(description="the ledger session the retrieval was recorded in (memory_query_session)")
    session_opened: bool = Field(description="true when this call opened the session (no session_id was sent)")
    agent_id: str = Field(description="the agent the call was recorded for")
    agent_name: str | None = None
    agent_id_ignored: bool = Field(
        default=False, description="true when the body named another agent_id than the API key's agent (the key wins)"
    )
    thoughts_retrieved: int
    thoughts_contributed: int = Field(description="1 when the prompt was stored as a new thought, else 0")
    contribution_threshold_met: bool = Field(
        description="the prompt is a declarative statement of more than 50 characters"
    )
    contribution: Contribution
    prompt_kind: brain.PromptKind
    reason: str = Field(description="why the prompt was or was not stored")
    thought_id: str | None = Field(
        None, description="the stored thought (memory_contribution_id); on a duplicate, the existing one"
    )
    query: str = Field(description="the words searched for (recorded in the MemorySearched event)")
    context: str | None = None
    token_expires_at: _dt.datetime | None = Field(
        None, description="the retrieval issued this session's compliance token; it expires then"
    )


class BrainAnswer(BaseModel):
    message: str | None = Field(
        None,
        description=(
            "contribute_to_brain only: 'Thought stored successfully.' or 'Not stored (too short or interrogative). "
            "Still retrieved related thoughts:' (the seed's texts)"
        ),
    )
    result: BrainResult
    trace: BrainTrace


class BrainHealth(BaseModel):
    status: Literal["ok", "unavailable"]
    database: str
    head_position: int | None = None
    highways: int | None = None
