"""Brain handlers (seed 003 Layer B): every prompt retrieves related thoughts, a declarative one is also stored.

Thoughts are memory blocks. A brain call is made of the ledger's own commands, so everything it does is an
event the workflow can later verify: the retrieval is a ``memory_search`` in a ledger session of the calling
agent (``MemorySearched``: "this agent queried memory in session X", which also issues the session's
compliance token), and a contribution is a ``memory_remember`` in that session (``MemoryRemembered``, whose
metadata names the contributor). Without a ``session_id`` a new session (role ``brain``) is opened and left
open: it is the conversation, and later calls continue it by passing its id.

Handlers are plain functions taking the :class:`~ledger.service.Ledger` first. Highways come from an
in-process fold (:class:`projections.brain.ThoughtTraffic`) caught up from the log before each answer.
"""

from __future__ import annotations

import datetime as _dt
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from pydantic import BaseModel, Field

from ledger.brain import decisions as brain
from ledger.core.storage import SqlEventStore
from ledger.core.text import require_clean
from ledger.service import Actor, Ledger, check_agent
from ledger.sessions.decisions import MAX_FOCUS_CHARS
from projections import brain as brain_proj
from projections.runner import TRAFFIC, ProjectionRunner

BRAIN_ROLE = "brain"
MAX_HIGHWAYS_NEARBY = 10

Contribution = Literal["stored", "duplicate", "not_stored"]


class ThoughtSource(BaseModel):
    """A retrieved thought: what it says, who contributed it, how it ranked and how travelled it is."""

    thought_id: str
    content: str
    contributor: str | None = Field(None, description="the agent that stored the thought (None: before any agent)")
    tags: list[str]
    score: float
    retrievals: int = Field(description="how often searches have returned this thought, this one included")
    highway: bool


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
    result: BrainResult
    trace: BrainTrace


class BrainHealth(BaseModel):
    status: Literal["ok", "unavailable"]
    database: str
    head_position: int | None = None
    highways: int | None = None


# --- the traffic fold, one per store (the log), caught up before each read -------------------------------------


class _Traffic:
    def __init__(self) -> None:
        self.runner = ProjectionRunner([TRAFFIC])
        self.lock = threading.Lock()


_TRAFFIC: weakref.WeakKeyDictionary[SqlEventStore, _Traffic] = weakref.WeakKeyDictionary()
_TRAFFIC_LOCK = threading.Lock()


@contextmanager
def thought_traffic(ledger: Ledger) -> Iterator[brain_proj.ThoughtTraffic]:
    """The traffic fold caught up to the head of the log (held under its lock while in use)."""
    with _TRAFFIC_LOCK:
        cache = _TRAFFIC.get(ledger.store)
        if cache is None:
            cache = _TRAFFIC[ledger.store] = _Traffic()
    with cache.lock:
        ledger.snapshots.catch_up(
            cache.runner, lambda after: ledger.store.iter_events(after, types=list(brain_proj.EVENT_TYPES))
        )
        traffic = cache.runner.aggregate(TRAFFIC.name)
        assert isinstance(traffic, brain_proj.ThoughtTraffic)
        yield traffic


# --- handlers ----------------------------------------------------------------------------------------------------


def ask(
    ledger: Ledger,
    actor: Actor,
    prompt: str,
    *,
    context: str | None = None,
    session_id: str | None = None,
    agent_name: str | None = None,
    contribute: bool = False,
    limit: int = brain.DEFAULT_RETRIEVAL_LIMIT,
) -> BrainAnswer:
    """Retrieve the thoughts related to ``prompt`` and, if it is a declarative statement, store it.

    ``contribute=True`` (the ``contribute_to_brain`` tool) refuses a prompt that would not be stored, before
    anything is recorded. Bad input (empty or over-long prompt, unknown, closed or another agent's session)
    raises before anything is recorded.
    """
    # A brain call is several appends (clock-in, search, remember): every argument is checked before the first.
    require_clean({"prompt": prompt, "context": context, "session_id": session_id, "agent_name": agent_name})
    prompt = brain.check_prompt(prompt)
    context = brain.check_context(context)
    agent_name = brain.check_agent_name(agent_name)
    check_agent(actor.agent)
    kind = brain.classify(prompt)
    if contribute and not kind.is_contribution:
        raise brain.contribution_refusal(kind)
    query = brain.retrieval_query(prompt, context)
    opened = session_id is None
    if session_id is None:
        focus = brain.preview(context, MAX_FOCUS_CHARS) if context else None
        session_id = ledger.clock_in(actor, BRAIN_ROLE, focus=focus).session_id
    found = ledger.search(actor, session_id, query, limit)  # checks the session before recording anything

    contribution: Contribution = "not_stored"
    thought_id: str | None = None
    if kind.is_contribution:
        stored = ledger.remember(actor, prompt, [brain.THOUGHT_TAG], session_id, brain.THOUGHT_CATEGORY)
        thought_id = stored.block_id
        contribution = "stored" if stored.status == "created" else "duplicate"

    with thought_traffic(ledger) as traffic:
        sources = []
        for hit in found.results:
            t = traffic.of(hit.block_id)
            sources.append(
                ThoughtSource(
                    thought_id=hit.block_id,
                    content=hit.content,
                    contributor=traffic.contributors.get(hit.block_id),
                    tags=hit.tags,
                    score=hit.score,
                    retrievals=t.retrievals,
                    highway=t.is_highway,
                )
            )
        highways = [
            Highway(
                thought_id=s.thought_id,
                content=s.content,
                retrievals=s.retrievals,
                agents=len(traffic.of(s.thought_id).agents),
            )
            for s in sources
            if s.highway
        ]
    highways.sort(key=lambda h: (-h.retrievals, -h.agents, h.thought_id))
    highways = highways[:MAX_HIGHWAYS_NEARBY]

    reason = kind.reason if contribution != "duplicate" else "the same statement is already a thought"
    return BrainAnswer(
        result=BrainResult(
            response=brain.summary(
                retrieved=[s.content for s in sources],
                highways=len(highways),
                contribution=contribution,
                thought_id=thought_id,
                reason=kind.reason,
            ),
            sources=sources,
            highways_nearby=highways,
        ),
        trace=BrainTrace(
            session_id=session_id,
            session_opened=opened,
            agent_id=actor.agent,
            agent_name=agent_name,
            thoughts_retrieved=found.count,
            thoughts_contributed=1 if contribution == "stored" else 0,
            contribution_threshold_met=kind.is_contribution,
            contribution=contribution,
            prompt_kind=kind.kind,
            reason=reason,
            thought_id=thought_id,
            query=query,
            context=context,
            token_expires_at=found.token_expires_at,
        ),
    )


def health(ledger: Ledger) -> BrainHealth:
    """Whether the brain can answer: the store is reachable (raises the store's error if not)."""
    head, _ = ledger.store.head()
    with thought_traffic(ledger) as traffic:
        highways = len(traffic.highways())
    return BrainHealth(status="ok", database=ledger.store.dialect, head_position=head, highways=highways)
