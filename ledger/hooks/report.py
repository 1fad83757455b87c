"""What hook commands return: the turn's recorded start and the Stop hook's answer. (The hook counts of an agent's
compliance report, :class:`StopHookCounts`, are part of that report, in ``ledger.sessions.report`` below.)"""

from __future__ import annotations

from pydantic import BaseModel

from ledger.core.events import RecordedEvent, StopHookDecided, StopOutcome, TurnStarted

# What a client hook sends, and the constants of the interface (the hook names, the refusal's text).
from ledger.hooks.decisions import CLAUDE_CODE as CLAUDE_CODE
from ledger.hooks.decisions import MSG_NO_STAMP as MSG_NO_STAMP
from ledger.hooks.decisions import STOP as STOP
from ledger.hooks.decisions import USER_PROMPT_SUBMIT as USER_PROMPT_SUBMIT
from ledger.hooks.decisions import HookInput as HookInput
from ledger.sessions.report import StopHookCounts

__all__ = ["StopAnswer", "StopHookCounts", "TurnStart"]


class TurnStart(BaseModel):
    """A turn's start as recorded."""

    position: int
    client_session: str | None = None
    input_problem: str | None = None

    @classmethod
    def of(cls, rec: RecordedEvent) -> TurnStart:
        e = rec.event
        assert isinstance(e, TurnStarted)
        return cls(position=rec.position, client_session=e.client_session, input_problem=e.input_problem)


class StopAnswer(BaseModel):
    """The Stop hook's answer as recorded: ``blocked`` carries the reason the agent is given."""

    outcome: StopOutcome
    position: int
    reason: str | None = None
    turn_position: int | None = None
    stamp_position: int | None = None
    input_problem: str | None = None

    @classmethod
    def of(cls, rec: RecordedEvent) -> StopAnswer:
        e = rec.event
        assert isinstance(e, StopHookDecided)
        return cls(
            outcome=e.outcome,
            position=rec.position,
            reason=e.reason,
            turn_position=e.turn_position,
            stamp_position=e.stamp_position,
            input_problem=e.input_problem,
        )
