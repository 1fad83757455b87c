"""Thought traffic for the brain API: how often each memory block was retrieved, and by how many agents.

A fold over ``MemorySearched`` (its ``result_ids`` and the agent that searched, from the event's metadata). Who
contributed a thought and the context it was contributed in are its provenance, which every read of a block
carries (:mod:`projections.provenance`), the brain's sources included. A thought retrieved at least
``HIGHWAY_MIN_RETRIEVALS`` times by at least ``HIGHWAY_MIN_AGENTS`` distinct agents is a *highway*.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from ledger.core.events import MemorySearched, RecordedEvent

HIGHWAY_MIN_RETRIEVALS = 3
HIGHWAY_MIN_AGENTS = 2
EVENT_TYPES = (MemorySearched.type_name,)


@dataclass(frozen=True, slots=True)
class Traffic:
    """One thought's retrievals so far and the agents that made them."""

    retrievals: int = 0
    agents: frozenset[str] = frozenset()

    @property
    def is_highway(self) -> bool:
        return is_highway(self.retrievals, len(self.agents))


def is_highway(retrievals: int, agents: int) -> bool:
    """A highway: retrieved at least 3 times by at least 2 distinct agents."""
    return retrievals >= HIGHWAY_MIN_RETRIEVALS and agents >= HIGHWAY_MIN_AGENTS


def evolve_traffic(state: Traffic | None, agent: str | None) -> Traffic:
    """One more retrieval of a thought, by ``agent`` (an event without an agent counts, adds no agent)."""
    state = state or Traffic()
    agents = state.agents | {agent} if agent else state.agents
    return Traffic(state.retrievals + 1, agents)


class ThoughtTraffic:
    """Retrieval traffic per block (an aggregate fed every event)."""

    name = "brain"

    def __init__(self) -> None:
        self.traffic: dict[str, Traffic] = {}

    def apply(self, rec: RecordedEvent) -> None:
        event = rec.event
        if isinstance(event, MemorySearched):
            for block_id in dict.fromkeys(event.result_ids):
                self.traffic[block_id] = evolve_traffic(self.traffic.get(block_id), rec.agent)

    def of(self, block_id: str) -> Traffic:
        return self.traffic.get(block_id) or Traffic()

    def highways(self) -> list[str]:
        return [b for b, t in self.traffic.items() if t.is_highway]

    def snapshot(self) -> dict[Hashable, Any]:
        return {key: value for key, value in self.dump().items()}

    def dump(self) -> dict[str, Any]:
        return {"traffic": dict(self.traffic)}

    def restore(self, data: dict[str, Any]) -> None:
        self.traffic = dict(data["traffic"])
