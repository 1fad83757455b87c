"""REST routes of the shared agent brain (seed 003 Layer B): ``POST /api/v1/memory`` and ``GET /api/v1/health``.

The agent is the API key's once any key exists; a body ``agent_id`` that names someone else is ignored and
reported (``trace.agent_id_ignored``). With no keys issued the server only binds to loopback and every caller is
the person at this machine, so the body's ``agent_id`` is taken as the agent (the seed's behaviour), falling back
to the configured local agent when it is omitted.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import Field

from api.fields import BRAIN_CONTEXT, SESSION_ID_FORM, described, session_id_field
from api.rest.context import Caller, StrictBody
from api.rest.deps import LedgerDep
from ledger.brain.report import MIN_CONTRIBUTION_CHARS, BrainAnswer, BrainHealth
from ledger.core.errors import LedgerError
from ledger.memory.report import MAX_CONTENT_CHARS
from ledger.service import Actor, Ledger, check_agent


class BrainRequest(StrictBody):
    prompt: Annotated[
        str,
        described(
            f"a question, or a declarative statement of more than {MIN_CONTRIBUTION_CHARS} characters to store as a "
            "thought",
            minLength=1,
            maxLength=MAX_CONTENT_CHARS,
        ),
    ]
    agent_id: str | None = Field(
        None, description="with API keys: ignored (the key names the agent); without: the agent (default: local)"
    )
    agent_name: str | None = Field(None, description="display name, echoed in the trace")
    context: Annotated[str | None, BRAIN_CONTEXT] = None
    session_id: Annotated[
        str | None, session_id_field(f"continue this ledger session ({SESSION_ID_FORM}); omitted: a new one is opened")
    ] = None


def brain_actor(ledger: Ledger, caller: Actor, agent_id: str | None) -> tuple[Actor, bool]:
    """The agent a REST brain call acts as, and whether the body's ``agent_id`` was ignored.

    With API keys the key's agent wins; without (loopback dev mode) the body's ``agent_id`` is the agent.
    """
    if caller.by_key:
        return caller, agent_id is not None and agent_id != caller.agent
    if agent_id is None:
        return caller, False
    return Actor(check_agent(agent_id), "rest"), False


def router() -> APIRouter:
    """``POST /api/v1/memory`` and ``GET /api/v1/health``."""
    routes = APIRouter(prefix="/api/v1", tags=["brain"])

    @routes.post("/memory", response_model=BrainAnswer)
    async def memory(ledger: LedgerDep, body: BrainRequest, who: Caller) -> Any:
        """Retrieve related thoughts; a declarative statement of more than 50 characters is also stored."""

        def ask(caller: Actor) -> BrainAnswer:
            actor, ignored = brain_actor(ledger, caller, body.agent_id)
            answer = ledger.ask_brain(
                actor,
                body.prompt,
                context=body.context,
                session_id=body.session_id,
                agent_name=body.agent_name,
            )
            if ignored:
                answer.trace.agent_id_ignored = True
            return answer

        return await who.run(ask)

    @routes.get("/health", response_model=BrainHealth, responses={503: {"model": BrainHealth}})
    def health(ledger: LedgerDep) -> Any:
        """Whether the brain can answer (its store is reachable)."""
        try:
            return ledger.brain_health()
        except LedgerError as exc:
            return JSONResponse(BrainHealth(status="unavailable", database=exc.message).model_dump(), status_code=503)

    return routes
