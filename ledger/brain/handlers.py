"""Brain handlers (seed 003 Layer B): every prompt retrieves related thoughts, a declarative one is also stored.

Thoughts are memory blocks. A brain call is made of the ledger's own commands, so everything it does is an
event the workflow can later verify: the retrieval is a ``memory_search`` in a ledger session of the calling
agent (``MemorySearched``: "this agent queried memory in session X", which also issues the session's
compliance token), and a contribution is a ``memory_remember`` in that session (``MemoryRemembered``, whose
metadata names the contributor). Without a ``session_id`` a new session (role ``brain``) is opened and left
open: it is the conversation, and later calls continue it by passing its id.

:class:`BrainCommands` is built on the session and memory commands. Highways come from its in-process fold
(:class:`projections.brain.ThoughtTraffic`), restored from a snapshot and caught up from the log before each answer.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from ledger.brain import decisions as brain
from ledger.brain.report import BrainAnswer, BrainHealth, BrainResult, BrainTrace, Contribution, Highway, ThoughtSource
from ledger.core.text import require_clean
from ledger.kernel import Actor, Kernel, check_agent
from ledger.memory.handlers import MemoryCommands
from ledger.sessions.decisions import MAX_FOCUS_CHARS
from ledger.sessions.handlers import SessionCommands
from projections import brain as brain_proj
from projections.live import LiveProjection
from projections.runner import TRAFFIC, ProjectionRunner

BRAIN_ROLE = "brain"
MAX_HIGHWAYS_NEARBY = 10


def _traffic_of(runner: ProjectionRunner) -> brain_proj.ThoughtTraffic:
    traffic = runner.aggregate(TRAFFIC.name)
    assert isinstance(traffic, brain_proj.ThoughtTraffic)
    return traffic


class BrainCommands:
    """Ask the brain and check its health; owns the thought-traffic fold of this ledger."""

    def __init__(self, kernel: Kernel, sessions: SessionCommands, memory: MemoryCommands) -> None:
        self.kernel = kernel
        self.sessions = sessions
        self.memory = memory
        self._traffic = LiveProjection(kernel, [TRAFFIC], _traffic_of, types=brain_proj.EVENT_TYPES)

    def thought_traffic(self) -> AbstractContextManager[brain_proj.ThoughtTraffic]:
        """The traffic fold caught up to the head of the log (held under its lock while in use)."""
        return self._traffic.read()

    def ask(
        self,
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

        ``contribute=True`` (the ``contribute_to_brain`` tool) refuses a prompt of 50 characters or fewer (the
        seed's schema) and adds the seed's ``message``: whether the thought was stored; a prompt that is not
        stored (a question, a follow-up) still retrieves. The ``context`` is stored with a thought as its
        provenance. Bad input (empty or over-long prompt, unknown, closed or another agent's session) raises
        before anything is recorded.
        """
        # A brain call is several appends (clock-in, search, remember): every argument is checked before the first.
        require_clean({"prompt": prompt, "context": context, "session_id": session_id, "agent_name": agent_name})
        if contribute and isinstance(prompt, str):
            brain.check_contribution_length(prompt)
        prompt = brain.check_prompt(prompt)
        context = brain.check_context(context)
        screened = self.kernel.screen({"prompt": prompt, "context": context})  # credentials: before the first append
        prompt, context = screened["prompt"], screened["context"]
        agent_name = brain.check_agent_name(agent_name)
        check_agent(actor.agent)
        kind = brain.classify(prompt)
        query = brain.retrieval_query(prompt, context)
        opened = session_id is None
        if session_id is None:
            focus = brain.preview(context, MAX_FOCUS_CHARS) if context else None
            session_id = self.sessions.clock_in(actor, BRAIN_ROLE, focus=focus).session_id
        found = self.sessions.search(actor, session_id, query, limit)  # checks the session before recording anything

        contribution: Contribution = "not_stored"
        thought_id: str | None = None
        if kind.is_contribution:
            stored = self.memory.remember(
                actor, prompt, [brain.THOUGHT_TAG], session_id, brain.THOUGHT_CATEGORY, context=context
            )
            thought_id = stored.block_id
            contribution = "stored" if stored.status == "created" else "duplicate"

        with self.thought_traffic() as traffic:
            sources = []
            for hit in found.results:
                t = traffic.of(hit.block_id)
                sources.append(
                    ThoughtSource(
                        thought_id=hit.block_id,
                        content=hit.content,
                        contributor=hit.provenance.agent,
                        context=hit.provenance.context,
                        tags=hit.tags,
                        score=hit.score,
                        retrievals=t.retrievals,
                        highway=t.is_highway,
                        provenance=hit.provenance,
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
            message=brain.contribution_message(contribution) if contribute else None,
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

    def health(self) -> BrainHealth:
        """Whether the brain can answer: the store is reachable (raises the store's error if not)."""
        head, _ = self.kernel.store.head()
        with self.thought_traffic() as traffic:
            highways = len(traffic.highways())
        return BrainHealth(status="ok", database=self.kernel.store.dialect, head_position=head, highways=highways)
