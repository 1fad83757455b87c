"""Memory blocks and their co-retrieval graph as the ledger knows them: a fold over the memory events.

Per entity the folds are pure (``evolve_block``, ``evolve_edge``); :class:`MemoryGraph` applies them to its
tables and keeps the adjacency index the read side needs for weighted degree. Nothing here reads a clock:
a block keeps the *moment* it was last reinforced, and the read side turns moments into active hours with
``projections.active_hours.ActiveClock``, so a replay to any moment scores blocks exactly as the live system
did at that moment. (The SQL full-text index is built from the same events by ``projections.search``.)
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ledger.core.events import (
    MemoryArchived,
    MemoryCurated,
    MemoryDuplicateRejected,
    MemoryErased,
    MemoryForgotten,
    MemoryOutcomeRecorded,
    MemoryRecalled,
    MemoryRemembered,
    MemoryRestored,
    MemorySuperseded,
    RecordedEvent,
)
from projections import decay
from projections._copy import with_changes
from projections.columns import ColumnTable

Pair = tuple[str, str]
STREAM = "memory"
"""The stream of memory-wide facts: curates, outcomes and recalls made outside a session."""
_MEMORY_EVENTS = (
    MemoryRemembered,
    MemoryDuplicateRejected,
    MemoryRecalled,
    MemoryCurated,
    MemoryOutcomeRecorded,
    MemorySuperseded,
    MemoryForgotten,
    MemoryErased,
    MemoryArchived,
    MemoryRestored,
)


@dataclass(frozen=True, slots=True)
class BlockView:
    """One memory block: its tags, decay tier and rate, confidence, reinforcement and archive state.

    Its text is not here: it never changes (the id is derived from it) and scoring never reads it, so it stays in
    the log (the block's ``MemoryRemembered``) and is read for the few blocks an answer shows.
    """

    block_id: str
    tags: tuple[str, ...]
    category: str
    tier: decay.Tier
    lam: float
    created_at: _dt.datetime
    created_by: str | None
    last_reinforced_at: _dt.datetime
    confidence: float = decay.INITIAL_CONFIDENCE
    outcomes: int = 0
    reinforcements: int = 0
    recalls: int = 0
    duplicates_rejected: int = 0
    archived_at: _dt.datetime | None = None
    position: int = 0  # the last event that changed the block
    origin: int = 0  # the block's MemoryRemembered, which holds its text
    superseded_by: str | None = None  # the block that replaced it (``memory_supersede``)

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    @property
    def live(self) -> bool:
        """Neither archived by curate nor superseded: search and recall can return it."""
        return self.archived_at is None and self.superseded_by is None

    @property
    def constitutional(self) -> bool:
        return decay.CONSTITUTIONAL_TAG in self.tags

    def has_tag(self, pattern: str) -> bool:
        """``pattern`` is a tag, or a prefix ending in ``/`` such as ``self/``."""
        return tags_match(self.tags, pattern)


def tags_match(tags: tuple[str, ...], pattern: str) -> bool:
    """``pattern`` is one of ``tags``, or a prefix ending in ``/`` (such as ``self/``) of one of them."""
    if pattern.endswith("/"):
        return any(t.startswith(pattern) for t in tags)
    return pattern in tags


@dataclass(frozen=True, slots=True)
class EdgeView:
    """A co-retrieval edge between two blocks (``a < b``)."""

    a: str
    b: str
    count: int
    created_at: _dt.datetime
    last_co_retrieved_at: _dt.datetime


def pair(x: str, y: str) -> Pair:
    return (x, y) if x < y else (y, x)


def co_retrieved_pairs(block_ids: Iterable[str]) -> Iterator[Pair]:
    """Every unordered pair of distinct blocks returned together."""
    ids = sorted(set(block_ids))
    for i, x in enumerate(ids):
        for y in ids[i + 1 :]:
            yield (x, y)


def evolve_block(block_id: str, view: BlockView | None, rec: RecordedEvent) -> BlockView | None:
    """Apply one memory event to one block (the event names the block)."""
    e = rec.event
    at = rec.recorded_at
    if isinstance(e, MemoryRemembered):
        tier = decay.tier_for(e.tags, e.category)
        return BlockView(
            block_id=e.block_id,
            tags=tuple(e.tags),
            category=e.category,
            tier=tier,
            lam=decay.LAMBDA[tier],
            created_at=at,
            created_by=rec.agent,
            last_reinforced_at=at,
            position=rec.position,
            origin=rec.position,
        )
    if view is None:
        return None
    if isinstance(e, MemoryDuplicateRejected):
        return with_changes(view, duplicates_rejected=view.duplicates_rejected + 1)
    if isinstance(e, MemoryRecalled):
        return with_changes(
            view,
            reinforcements=view.reinforcements + 1,
            recalls=view.recalls + 1,
            last_reinforced_at=at,
            position=rec.position,
        )
    if isinstance(e, MemoryCurated):
        archived, reinforced = _curate_index(e)
        times = reinforced.get(block_id, 0)
        archived_at = at if block_id in archived and view.archived_at is None else view.archived_at
        if times:
            return with_changes(
                view,
                reinforcements=view.reinforcements + times,
                last_reinforced_at=at,
                archived_at=archived_at,
                position=rec.position,
            )
        return with_changes(view, archived_at=archived_at, position=rec.position)
    if isinstance(e, MemoryOutcomeRecorded):
        return with_changes(
            view,
            confidence=decay.beta_update(view.confidence, view.outcomes, e.signal),
            outcomes=view.outcomes + 1,
            lam=decay.penalised_rate(view.lam, e.signal),
            position=rec.position,
        )
    if isinstance(e, MemorySuperseded) and block_id == e.block_id:
        return with_changes(view, superseded_by=e.by_block_id, position=rec.position)
    if isinstance(e, MemoryArchived):
        return with_changes(view, archived_at=view.archived_at or at, position=rec.position)
    if isinstance(e, MemoryRestored):
        return with_changes(view, archived_at=None, superseded_by=None, last_reinforced_at=at, position=rec.position)
    if isinstance(e, MemoryForgotten | MemoryErased):
        return None  # the graph drops it: a forgotten block leaves every read model
    return view


_last_curate_index: tuple[MemoryCurated, frozenset[str], Counter[str]] | None = None


def _curate_index(e: MemoryCurated) -> tuple[frozenset[str], Counter[str]]:
    """The archived set and reinforcement counts of a curate event, built once per event, not once per block
    (a curate at 100k blocks names tens of thousands)."""
    global _last_curate_index
    cached = _last_curate_index
    if cached is None or cached[0] is not e:
        cached = (e, frozenset(e.archived), Counter([*e.constitutional_reinforced, *e.reinforced]))
        _last_curate_index = cached
    return cached[1], cached[2]


def evolve_edge(key: Pair, edge: EdgeView | None, rec: RecordedEvent) -> EdgeView | None:
    """Apply a co-retrieval of the pair (a recall returning both blocks). Pruning is the graph's business."""
    if not isinstance(rec.event, MemoryRecalled):
        return edge
    if edge is None:
        return EdgeView(key[0], key[1], 1, rec.recorded_at, rec.recorded_at)
    return with_changes(edge, count=edge.count + 1, last_co_retrieved_at=rec.recorded_at)


def block_ids_of(rec: RecordedEvent) -> tuple[str, ...]:
    """The blocks a memory event touches (each once)."""
    e = rec.event
    if isinstance(
        e, MemoryRemembered | MemoryDuplicateRejected | MemoryForgotten | MemoryErased | MemoryArchived | MemoryRestored
    ):
        return (e.block_id,)
    if isinstance(e, MemorySuperseded):
        return (e.block_id, e.by_block_id)
    if isinstance(e, MemoryRecalled | MemoryOutcomeRecorded):
        return tuple(dict.fromkeys(e.block_ids))
    if isinstance(e, MemoryCurated):
        return tuple(dict.fromkeys([*e.archived, *e.constitutional_reinforced, *e.reinforced]))
    return ()


@dataclass(frozen=True, slots=True)
class CurateMark:
    """When curate last ran: its position, moment and the active hours it recorded."""

    position: int
    at: _dt.datetime
    active_hours: float


class MemoryGraph:
    """Every block and co-retrieval edge, with an adjacency index; fed the log in order by the runner."""

    name = "memory"

    def __init__(self) -> None:
        # Blocks are stored by column: one per remembered text for the whole history, so they must cost bytes.
        self.blocks: ColumnTable[str, BlockView] = ColumnTable(BlockView, "block_id")
        self.edges: dict[Pair, EdgeView] = {}
        self.adjacent: dict[str, set[str]] = {}
        # hierarchical tag (``self/value``) -> ids of the blocks that carry it, for prefix queries (``self/``);
        # flat tags are not indexed: every block may carry them, and the index would hold an id per block
        self.by_tag: dict[str, list[str]] = {}
        self.last_curate: CurateMark | None = None
        self.curates = 0
        self.position = 0
        self.version = 0  # of the ``memory`` stream, for appends that must see every earlier curate

    def apply(self, rec: RecordedEvent) -> None:
        e = rec.event
        if not isinstance(e, _MEMORY_EVENTS):
            return
        self.position = rec.position
        if rec.stream == STREAM:
            self.version = rec.version
        for block_id in block_ids_of(rec):
            view = evolve_block(block_id, self.blocks.get(block_id), rec)
            if view is not None:
                if block_id not in self.blocks:
                    self._index_tags(block_id, view.tags)
                self.blocks[block_id] = view
            elif block_id in self.blocks:
                self._drop_block(block_id)
        if isinstance(e, MemoryRecalled):
            for key in co_retrieved_pairs(e.block_ids):
                edge = evolve_edge(key, self.edges.get(key), rec)
                assert edge is not None
                if key not in self.edges:
                    self.adjacent.setdefault(key[0], set()).add(key[1])
                    self.adjacent.setdefault(key[1], set()).add(key[0])
                self.edges[key] = edge
        elif isinstance(e, MemorySuperseded | MemoryArchived):
            # A superseded or archived block leaves recall: its edges no longer connect anything retrievable.
            for other in list(self.adjacent.get(e.block_id, ())):
                self._drop_edge(pair(e.block_id, other))
        elif isinstance(e, MemoryCurated):
            for a, b in e.edges_pruned:
                self._drop_edge(pair(a, b))
            # An archived block leaves recall, so its edges no longer connect anything that can be retrieved.
            for block_id in e.archived:
                for other in list(self.adjacent.get(block_id, ())):
                    self._drop_edge(pair(block_id, other))
            self.last_curate = CurateMark(rec.position, rec.recorded_at, e.active_hours)
            self.curates += 1

    def snapshot(self) -> dict[Hashable, Any]:
        return {
            "blocks": dict(self.blocks),
            "edges": dict(self.edges),
            "last_curate": self.last_curate,
            "curates": self.curates,
            "version": self.version,
        }

    def dump(self) -> dict[str, Any]:
        return {
            "blocks": self.blocks.copy(),
            "edges": dict(self.edges),
            "last_curate": self.last_curate,
            "curates": self.curates,
            "position": self.position,
            "version": self.version,
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Take :meth:`dump`'s state; the adjacency and tag indexes are rebuilt from the blocks and edges."""
        self.__init__()  # type: ignore[misc]
        blocks = data["blocks"]
        if isinstance(blocks, ColumnTable):
            self.blocks = blocks  # taken, not copied: a restored snapshot is read once (peak memory)
        else:
            self.blocks.update(blocks)
        self.edges = dict(data["edges"])
        self.last_curate, self.curates = data["last_curate"], int(data["curates"])
        self.position, self.version = int(data["position"]), int(data["version"])
        for block_id, tags in self.blocks.field("tags"):
            self._index_tags(block_id, tags)
        for a, b in self.edges:
            self.adjacent.setdefault(a, set()).add(b)
            self.adjacent.setdefault(b, set()).add(a)

    def _index_tags(self, block_id: str, tags: tuple[str, ...]) -> None:
        for tag in dict.fromkeys(tags):
            if "/" in tag:
                self.by_tag.setdefault(tag, []).append(block_id)

    def _drop_block(self, block_id: str) -> None:
        """Forget a block: it, its edges and its place in the tag index go."""
        view = self.blocks[block_id]
        for other in list(self.adjacent.get(block_id, ())):
            self._drop_edge(pair(block_id, other))
        for tag in dict.fromkeys(view.tags):
            ids = self.by_tag.get(tag)
            if ids is not None and block_id in ids:
                ids.remove(block_id)
                if not ids:
                    del self.by_tag[tag]
        del self.blocks[block_id]

    def _drop_edge(self, key: Pair) -> None:
        if self.edges.pop(key, None) is not None:
            for x, y in (key, key[::-1]):
                neighbours = self.adjacent.get(x)
                if neighbours is not None:
                    neighbours.discard(y)
                    if not neighbours:
                        del self.adjacent[x]

    def live_blocks(self, tag_prefix: str | None = None) -> Iterator[BlockView]:
        """Live blocks (not archived, not superseded); with ``tag_prefix`` (e.g. ``self/``) only those with a tag
        under it."""
        if tag_prefix is None:
            return (b for b in self.blocks.values() if b.live)
        if "/" not in tag_prefix:  # flat tags are not indexed: scan the tags column
            prefixed = (k for k, tags in self.blocks.field("tags") if any(t.startswith(tag_prefix) for t in tags))
            return (b for b in (self.blocks[i] for i in sorted(prefixed)) if b.live)
        ids = set().union(*(ids for tag, ids in self.by_tag.items() if tag.startswith(tag_prefix)))
        return (b for b in (self.blocks[i] for i in sorted(ids)) if b.live)

    def incident(self, block_id: str) -> Iterator[EdgeView]:
        for other in self.adjacent.get(block_id, ()):
            yield self.edges[pair(block_id, other)]
