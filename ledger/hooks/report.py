"""What hook commands return (the turn's recorded start, the Stop hook's answer) and the hook counts of an agent's
compliance report."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ledger.core.events import RecordedEvent, StopHookDecided, StopOutcome, TurnStarted


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


class StopHookCounts(BaseModel):
    """An agent's client hooks: turns started by a user prompt, and the Stop hook's answers."""

    turns_started: int = Field(default=0, description="user prompts the UserPromptSubmit hook recorded")
    stops_blocked: int = Field(default=0, description="stops refused: no stamp earned since the turn started")
    stops_allowed: int = Field(default=0, description="stops let through: a stamp was earned in the turn")
    loop_guard_passes: int = Field(
        default=0, description="stops let through without a stamp, because the client was already held by a block"
    )
