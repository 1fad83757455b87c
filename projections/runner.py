"""One runner for every projection: catch up from a checkpoint, or replay to a position.

A projection is a pure per-entity fold: ``key(event)`` names the entity an event touches (or ``None``) and
``evolve(state, event)`` returns that entity's next state. The runner owns the dictionary of entity states
and the checkpoint (the last position applied); it never reads the store itself — callers hand it events.
An aggregate projection (the memory graph) applies pure per-entity folds to tables of its own, because one
event touches many entities and its reads need an index (adjacency) the runner cannot keep.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ledger.events import RecordedEvent
from projections import active_hours, brain, compliance, enforcement, memory, sessions
from projections.columns import NONE, ColumnTable


@dataclass(frozen=True)
class Projection:
    """A named pure fold over the log, keyed per entity."""

    name: str
    key: Callable[[RecordedEvent], Hashable | None]
    evolve: Callable[[Any, RecordedEvent], Any]
    # The table its states live in: a dict, or a ColumnTable for one state per entity over the whole history.
    table: Callable[[], MutableMapping[Hashable, Any]] = field(default=dict)


class Aggregate(Protocol):
    """A projection that keeps its own tables (e.g. a graph with an adjacency index) and is fed every event."""

    def apply(self, rec: RecordedEvent) -> None: ...

    def snapshot(self) -> dict[Hashable, Any]:
        """A copy of the state that later events do not change (for comparing replays)."""
        ...

    def dump(self) -> dict[str, Any]:
        """Everything needed to :meth:`restore` this state in a fresh instance (for ``projections.codec``)."""
        ...

    def restore(self, data: dict[str, Any]) -> None:
        """Take the state :meth:`dump` gave (on a fresh instance)."""
        ...


@dataclass(frozen=True)
class AggregateProjection:
    """A named projection whose state is an :class:`Aggregate` made fresh for each runner."""

    name: str
    new: Callable[[], Aggregate]


SESSIONS = Projection("sessions", sessions.session_key, sessions.evolve)
COMPLIANCE = Projection("compliance", compliance.compliance_key, compliance.evolve)
# Blocks, their decay state and the co-retrieval graph.
MEMORY = AggregateProjection(memory.MemoryGraph.name, memory.MemoryGraph)
# Per-session activity spans; their union is the ledger's active hours (the clock memory decay runs on).
ACTIVE_TIME = Projection(
    active_hours.ACTIVE_TIME,
    sessions.session_key,
    active_hours.evolve_span,
    lambda: ColumnTable(active_hours.SessionSpan, "session_id"),
)
# Recorded parameter checks per (agent, tool, action): progressive enforcement levels.
ENFORCEMENT = Projection("enforcement", enforcement.stats_key, enforcement.evolve_checked)
ALL: tuple[Projection | AggregateProjection, ...] = (SESSIONS, COMPLIANCE, MEMORY, ACTIVE_TIME, ENFORCEMENT)
# Retrieval traffic per thought, for the brain API (fed only MemorySearched / MemoryRemembered).
TRAFFIC = AggregateProjection(brain.ThoughtTraffic.name, brain.ThoughtTraffic)


class ProjectionRunner:
    """Holds the states of some projections and the position they have caught up to."""

    def __init__(self, projections: Iterable[Projection | AggregateProjection] = ALL) -> None:
        self.chosen = tuple(projections)
        self.projections = tuple(p for p in self.chosen if isinstance(p, Projection))
        self.name = "+".join(p.name for p in self.chosen)  # names this set of folds in snapshots
        self.snapshot_position: int | None = None  # of the last snapshot restored or written; None: none tried
        self.reset()

    def reset(self) -> None:
        """Forget every state: back to before the first event."""
        self.aggregates: dict[str, Aggregate] = {
            p.name: p.new() for p in self.chosen if isinstance(p, AggregateProjection)
        }
        self.states: dict[str, MutableMapping[Hashable, Any]] = {p.name: p.table() for p in self.projections}
        self.position = 0
        self.last_recorded_at: Any = None

    def dump(self) -> dict[str, Any]:
        """The runner's whole state, for a snapshot (``ledger.snapshots``): its tables copied (the states in them
        are immutable), so folding on while the snapshot is written elsewhere changes nothing in it."""
        return {
            "position": self.position,
            "last_recorded_at": self.last_recorded_at,
            "states": {name: _copied(table) for name, table in self.states.items()},
            "aggregates": {name: a.dump() for name, a in self.aggregates.items()},
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Take a state :meth:`dump` gave: the same folds, else ``ValueError`` (the snapshot is not for this)."""
        states, aggregates = data["states"], data["aggregates"]
        if set(states) != set(self.states) or set(aggregates) != set(self.aggregates):
            raise ValueError(f"the snapshot holds {sorted(states) + sorted(aggregates)}, not the folds of {self.name}")
        self.reset()
        for name, table in states.items():
            if isinstance(table, ColumnTable):
                self.states[name] = table  # taken, not copied: a restored snapshot is read once
            else:
                self.states[name].update(table)
        for name, state in aggregates.items():
            self.aggregates[name].restore(state)
        self.position = int(data["position"])
        self.last_recorded_at = data["last_recorded_at"]

    def apply(self, rec: RecordedEvent) -> None:
        if rec.position <= self.position:
            return  # already applied: catch-up is idempotent
        for p in self.projections:
            key = p.key(rec)
            if key is not None:
                table = self.states[p.name]
                table[key] = p.evolve(table.get(key), rec)
        for aggregate in self.aggregates.values():
            aggregate.apply(rec)
        self.position = rec.position
        self.last_recorded_at = rec.recorded_at

    def run(self, events: Iterable[RecordedEvent], progress: Callable[[int], None] | None = None) -> int:
        """Apply ``events`` in order; return how many were applied."""
        return run_together([self], events, progress)

    def catch_up(self, source: Callable[[int], Iterable[RecordedEvent]]) -> int:
        """Apply what ``source(after=checkpoint)`` yields since the last checkpoint."""
        return self.run(source(self.position))

    def state(self, name: str) -> Mapping[Hashable, Any]:
        return self.states[name]

    def snapshot(self) -> dict[str, dict[Hashable, Any]]:
        """Every projection's state, copied: keyed tables and aggregates alike."""
        tables = {name: dict(table) for name, table in self.states.items()}
        return {**tables, **{name: a.snapshot() for name, a in self.aggregates.items()}}

    def aggregate(self, name: str) -> Aggregate:
        return self.aggregates[name]

    def memory(self) -> memory.MemoryGraph:
        graph = self.aggregates[MEMORY.name]
        assert isinstance(graph, memory.MemoryGraph)
        return graph

    def active_clock(self, at: Any, idle_timeout: Any) -> active_hours.ActiveClock:
        """The active-hours clock as of ``at`` from every session's span (read from the columns, not rebuilt)."""
        table = self.states[ACTIVE_TIME.name]
        if isinstance(table, ColumnTable):
            columns = table.arrays("started_at", "last_event_at", "ended_at")
            if columns is None:
                spans = table.raw("started_at", "last_event_at", "ended_at")
            else:
                spans = ((s, last, None if e == NONE else e) for s, last, e in zip(*columns, strict=True))
            return active_hours.ActiveClock.of_micros(spans, at, idle_timeout)  # type: ignore[arg-type]
        return active_hours.ActiveClock.of(self.active_spans(), at, idle_timeout)

    def active_spans(self) -> list[active_hours.SessionSpan]:
        """The activity span of every session seen (for an ``ActiveClock``)."""
        return [s for s in self.states[ACTIVE_TIME.name].values() if s is not None]


def _copied(table: MutableMapping[Hashable, Any]) -> MutableMapping[Hashable, Any]:
    """A copy later folds do not change (the states in a table are immutable; a ColumnTable copies its columns)."""
    return table.copy() if isinstance(table, ColumnTable) else dict(table)


def run_together(
    runners: Sequence[ProjectionRunner],
    events: Iterable[RecordedEvent],
    progress: Callable[[int], None] | None = None,
) -> int:
    """Feed ``events`` to every runner in one pass (progress every 5,000 events); return how many there were."""
    n = 0
    for rec in events:
        for runner in runners:
            runner.apply(rec)
        n += 1
        if progress and n % 5000 == 0:
            progress(n)
    if progress:
        progress(n)
    return n
