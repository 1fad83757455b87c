"""Events of client hooks: the user's prompt started an agent's turn, and the client's Stop hook was answered."""

from typing import ClassVar, Literal

from ledger.core.events.base import DomainEvent, Texts

StopOutcome = Literal["blocked", "allowed", "loop_guard"]


class TurnStarted(DomainEvent):
    """The agent's client reported a new user prompt (its ``UserPromptSubmit`` hook): the agent's turn started.

    ``client_session`` is the client's own conversation id, as the client sent it (it names the turn, not the
    agent). ``input_problem`` says what was wrong with what the client sent, if anything."""

    type_name: ClassVar[str] = "TurnStarted"
    texts: ClassVar[Texts] = Texts(free=("input_problem",), labels=("client_session",), ledger=("client",))
    client: str
    client_session: str | None = None
    input_problem: str | None = None


class StopHookDecided(DomainEvent):
    """The client's Stop hook asked whether the agent may end its turn, and the ledger answered.

    ``blocked``: no stamp since the turn started (``reason`` is what the agent was told); ``allowed``: the stamp
    at ``stamp_position`` was earned after the turn's start at ``turn_position``; ``loop_guard``: no stamp, but
    the client said it was already continuing because of a block (``stop_hook_active``), so the stop was let
    through."""

    type_name: ClassVar[str] = "StopHookDecided"
    texts: ClassVar[Texts] = Texts(
        free=("input_problem",),
        labels=("client_session",),
        ledger=("client", "outcome", "reason"),
    )
    client: str
    outcome: StopOutcome
    client_session: str | None = None
    stop_hook_active: bool = False
    turn_position: int | None = None
    stamp_position: int | None = None
    reason: str | None = None
    input_problem: str | None = None
