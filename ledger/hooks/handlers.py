"""Hook commands: record a turn's start, and answer the Stop hook (held at the gate until the agent earned a stamp
since its turn started). Each answer is an event on the stream of the agent's turns in that client conversation.
"""

from __future__ import annotations

from ledger.core.events import ComplianceStamped
from ledger.hooks import decisions
from ledger.hooks.decisions import HookInput
from ledger.hooks.report import StopAnswer, TurnStart
from ledger.kernel import Actor, Kernel, check_agent


class HookCommands:
    """What a client's hooks ask of the ledger, for the agent of the hook command's credential."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def turn_started(self, actor: Actor, client: str, given: HookInput) -> TurnStart:
        """Record that the user's prompt started ``actor``'s turn."""
        check_agent(actor.agent)
        stream = decisions.stream_for(actor.agent, given.client_session)

        def attempt() -> TurnStart:
            version = self.kernel.store.load_stream(stream).version
            event = decisions.decide_turn_start(client, given)
            [rec] = self.kernel.append(actor, stream, version, [event], self.kernel.meta(actor))
            return TurnStart.of(rec)

        return self.kernel.retrying(attempt)

    def stop(self, actor: Actor, client: str, given: HookInput) -> StopAnswer:
        """Answer the Stop hook: allowed with a stamp earned since the turn started, let through by the loop guard,
        or blocked with the gate's message; the answer is recorded either way."""
        check_agent(actor.agent)
        stream = decisions.stream_for(actor.agent, given.client_session)

        def attempt() -> StopAnswer:
            state = self.kernel.store.load_stream(stream)
            turn = decisions.current_turn(state.events, actor.agent)
            stamp = self._first_stamp_after(actor.agent, turn.start) if turn.start is not None else None
            event = decisions.decide_stop(client, given, turn, stamp)
            [rec] = self.kernel.append(actor, stream, state.version, [event], self.kernel.meta(actor))
            return StopAnswer.of(rec)

        return self.kernel.retrying(attempt)

    def _first_stamp_after(self, agent: str, position: int) -> int | None:
        """The position of ``agent``'s first stamp after ``position`` (a range scan of stamps by type)."""
        found = self.kernel.store.iter_records(
            after=position, types=[ComplianceStamped.type_name], agent=agent, batch_size=1
        )
        first = next(iter(found), None)
        return first.position if first is not None else None
