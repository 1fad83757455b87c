"""One runner for every projection: catch up from a checkpoint, or replay to a position.

A projection is a pure per-entity fold: ``key(event)`` names the entity an event touches (or ``None``) and
``evolve(state, event)`` returns that entity's next state. The runner owns the dictionary of entity states
and the checkpoint (the last position applied); it never reads the store itself — callers hand it events.
An aggregate projection (the memory graph) applies pure per-entity folds to tables of its own, because one
event touches many entities and its reads need an index (adjacency) the runner cannot keep.

Two ways in. :meth:`ProjectionRunner.apply` folds one event into new immutable states: the live path (catch-up
of long-lived runners whose states readers and snapshot writers hold) and the reference. :meth:`ProjectionRunner.run`
(and :func:`run_together`) is bulk replay: it routes each event only to the projections that react to its type
(the table is computed once per type), computes a key shared by several projections once, and folds a
projection that offers ``evolve_owned`` in place, into private copies of its states (made on the first event
that touches each entity in a run) that no one sees until the run returns. The states it leaves equal, field
for field, those ``apply`` would have made (``tests/unit/test_bulk_replay.py`` checks this on random logs).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ledger.core.events import EVENT_TYPES, DomainEvent, ParameterChecked, RecordedEvent
from projections import active_hours, brain, compliance, enforcement, memory, sessions
from projections.columns import NONE, ColumnTable


@dataclass(frozen=True)
class Projection:
    """A named pure fold over the log, keyed per entity.

    ``types``: the event types ``key`` can name an entity for (``None``: any), so bulk replay never asks the
    others. ``evolve_owned`` (with ``own``): the same fold allowed to change a state in place, for bulk replay;
    ``own(state)`` makes the private copy of a state others may hold that ``evolve_owned`` may then change.
    """

    name: str
    key: Callable[[RecordedEvent], Hashable | None]
    evolve: Callable[[Any, RecordedEvent], Any]
    types: tuple[type[DomainEvent], ...] | None = None
    evolve_owned: Callable[[Any, RecordedEvent], Any] | None = None
    own: Callable[[Any], Any] | None = None
    # The table its states live in: a dict, or a ColumnTable for one state per entity over the whole history.
    table: Callable[[], MutableMapping[Hashable, Any]] = field(default=dict)

    def __post_init__(self) -> None:
        if (self.evolve_owned is None) != (self.own is None):
            raise ValueError(f"projection {self.name!r}: evolve_owned and own go together")


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
    """A named projection whose state is an :class:`Aggregate` made fresh for each runner.

    ``types``: the event types its ``apply`` reacts to (``None``: any), so bulk replay feeds it no others."""

    name: str
    new: Callable[[], Aggregate]
    types: tuple[type[DomainEvent], ...] | None = None


SESSIONS = Projection(
    "sessions", sessions.session_key, sessions.evolve, evolve_owned=sessions.evolve_owned, own=sessions.own
)
COMPLIANCE = Projection(
    "compliance",
    compliance.compliance_key,
    compliance.evolve,
    types=compliance.COUNTED,
    evolve_owned=compliance.evolve_owned,
    own=compliance.own,
)
# The same fold keyed per hour and agent: the compliance report as a time series (ledger/sessions/series.py).
COMPLIANCE_HOURLY = Projection(
    "compliance_hourly",
    compliance.hourly_key,
    compliance.evolve,
    types=compliance.COUNTED,
    evolve_owned=compliance.evolve_owned,
    own=compliance.own,
)
# Blocks, their decay state and the co-retrieval graph.
# Its apply returns at once for any type but those in memory._MEMORY_EVENTS, yet that first check (isinstance
# against five pydantic classes) cost about 1 µs for every other event of a replay.
MEMORY = AggregateProjection(memory.MemoryGraph.name, memory.MemoryGraph, types=memory._MEMORY_EVENTS)
# Per-session activity spans; their union is the ledger's active hours (the clock memory decay runs on).
ACTIVE_TIME = Projection(
    active_hours.ACTIVE_TIME,
    sessions.session_key,
    active_hours.evolve_span,
    table=lambda: ColumnTable(active_hours.SessionSpan, "session_id"),
)
# Recorded parameter checks per (agent, tool, action): progressive enforcement levels.
ENFORCEMENT = Projection("enforcement", enforcement.stats_key, enforcement.evolve_checked, types=(ParameterChecked,))
ALL: tuple[Projection | AggregateProjection, ...] = (SESSIONS, COMPLIANCE, MEMORY, ACTIVE_TIME, ENFORCEMENT)
# Retrieval traffic per thought, for the brain API (fed only MemorySearched / MemoryRemembered).
TRAFFIC = AggregateProjection(
    brain.ThoughtTraffic.name, brain.ThoughtTraffic, types=tuple(EVENT_TYPES[name] for name in brain.EVENT_TYPES)
)


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
        """Fold ``events`` in order by bulk replay; return how many there were (those at or before the
        checkpoint are skipped). No other thread may read the runner while it runs; states handed out before
        the run are never changed."""
        return run_together([self], events, progress)

    def catch_up(self, source: Callable[[int], Iterable[RecordedEvent]]) -> int:
        """Apply what ``source(after=checkpoint)`` yields since the last checkpoint, event by event (``apply``:
        every state it makes is new, so readers holding older states are never disturbed); return how many."""
        n = 0
        for rec in source(self.position):
            self.apply(rec)
            n += 1
        return n

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
    """Feed ``events`` to every runner in one pass of bulk replay (progress every 5,000 events); return how
    many there were."""
    feeds = [_BulkFold(runner).feed for runner in runners]
    n = 0
    if len(feeds) == 1 and progress is None:
        feed = feeds[0]
        for rec in events:
            feed(rec)
            n += 1
        return n
    for rec in events:
        for feed in feeds:
            feed(rec)
        n += 1
        if progress and n % 5000 == 0:
            progress(n)
    if progress:
        progress(n)
    return n


# One projection's part in a route: its table, its evolve, and (when it folds in place) its ``own`` and the
# keys of the states this run already owns.
_Fold = tuple[
    MutableMapping[Hashable, Any], Callable[[Any, RecordedEvent], Any], Callable[[Any], Any] | None, set[Hashable]
]
# What one event type goes through: per distinct key function the folds keyed by it, then the aggregates.
_Route = tuple[
    tuple[tuple[Callable[[RecordedEvent], Hashable | None], tuple[_Fold, ...]], ...],
    tuple[Callable[[RecordedEvent], None], ...],
]


class _BulkFold:
    """One bulk-replay run of one runner: the route of each event type and the states the run owns."""

    def __init__(self, runner: ProjectionRunner) -> None:
        self.runner = runner
        self.routes: dict[type[DomainEvent], _Route] = {}
        # Owned in this run: made or copied by it, seen by no one else, so ``evolve_owned`` may change them.
        self.owned: dict[str, set[Hashable]] = {p.name: set() for p in runner.projections}

    def _route(self, cls: type[DomainEvent]) -> _Route:
        runner = self.runner
        by_key: dict[Callable[[RecordedEvent], Hashable | None], list[_Fold]] = {}
        for p in runner.projections:
            if p.types is None or issubclass(cls, p.types):
                fold: _Fold = (
                    runner.states[p.name],
                    p.evolve if p.evolve_owned is None else p.evolve_owned,
                    p.own,
                    self.owned[p.name],
                )
                by_key.setdefault(p.key, []).append(fold)
        applies = tuple(
            runner.aggregates[a.name].apply
            for a in runner.chosen
            if isinstance(a, AggregateProjection) and (a.types is None or issubclass(cls, a.types))
        )
        route = (tuple((key, tuple(folds)) for key, folds in by_key.items()), applies)
        self.routes[cls] = route
        return route

    def feed(self, rec: RecordedEvent) -> None:
        runner = self.runner
        if rec.position <= runner.position:
            return  # already applied: catch-up is idempotent
        route = self.routes.get(rec.event.__class__)
        if route is None:
            route = self._route(rec.event.__class__)
        keyed, applies = route
        for key_of, folds in keyed:
            key = key_of(rec)
            if key is None:
                continue
            for table, evolve, own, owned in folds:
                if own is None or key in owned:
                    table[key] = evolve(table.get(key), rec)
                else:
                    state = table.get(key)
                    owned.add(key)
                    table[key] = evolve(None if state is None else own(state), rec)
        for apply in applies:
            apply(rec)
        runner.position = rec.position
        runner.last_recorded_at = rec.recorded_at
