"""Memory reads: the live block graph each process keeps caught up from the log (or one replayed to a moment or
position), and the reads over it: blocks listed with their scores, one block with its history, texts and stats."""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from ledger.core import limits
from ledger.core.errors import Erased, InvalidInput, NotFound, StoreUnavailable
from ledger.core.events import ContradictionFlagged, MemoryErased, MemoryLinked, MemoryRemembered, RecordedEvent
from ledger.core.mapper import decode
from ledger.core.storage import CONSOLIDATE_LEASE
from ledger.kernel import Kernel
from ledger.memory import consolidation
from ledger.memory import decisions as memory
from ledger.memory.report import BlockDetail, BlockEvent, BlockList, BlockOut, LookupResult, MemoryStats, Neighbour
from ledger.memory.scoring import BlockColumns, Ranking, Scored
from ledger.sessions.report import SearchHit
from projections import decay
from projections import memory as memory_proj
from projections.active_hours import ActiveClock
from projections.embedder import SemanticUnavailable
from projections.live import LiveProjection
from projections.memory import MemoryGraph, tags_match
from projections.provenance import Origin, origin_of
from projections.query_analysis import query_terms
from projections.runner import ACTIVE_TIME, MEMORY, ProjectionRunner

_NEW_TEXT = ("MemoryRemembered", "MemorySuperseded", "MemoryRestored")
"""Events after which a near-duplicate check may find a block it did not find before."""

MEMORY_EVENT_TYPES = (
    "MemoryRemembered",
    "MemoryDuplicateRejected",
    "MemoryRecalled",
    "MemoryCurated",
    "MemoryOutcomeRecorded",
    "MemorySuperseded",
    "MemoryForgotten",
    "MemoryErased",
    "MemoryArchived",
    "MemoryRestored",
    "MemoryLinked",
    "ContradictionFlagged",
)


def _consolidated(rec: RecordedEvent) -> tuple[str, ...]:
    """The blocks a consolidation event names (the memory graph does not fold them; a block's history shows them)."""
    e = rec.event
    if isinstance(e, MemoryLinked):
        return (e.block_id,)
    if isinstance(e, ContradictionFlagged):
        return (e.block_id, e.contradicts)
    return ()


def _holds_unerased(events: Sequence[RecordedEvent]) -> bool:
    return bool(events) and not any(isinstance(r.event, MemoryErased) for r in events)


class BlockSource(NamedTuple):
    """A block's text and provenance, as its ``MemoryRemembered`` recorded them."""

    content: str
    origin: Origin


class MemoryReads:
    """The live memory graph (restored from a snapshot, caught up from the log) and the block reads; the base of
    :class:`~ledger.memory.handlers.MemoryCommands`."""

    def __init__(self, kernel: Kernel, idle_timeout: _dt.timedelta) -> None:
        """``idle_timeout``: an open session stops being active this long after its last event (memory decays
        with active hours)."""
        self.kernel = kernel
        self.idle_timeout = idle_timeout
        self._memory = LiveProjection(kernel, [MEMORY, ACTIVE_TIME], self._graph_now)

    # --- the live graph -----------------------------------------------------------------------------------

    def _graph_now(self, runner: ProjectionRunner) -> tuple[MemoryGraph, ActiveClock]:
        """A memory runner's graph, and the active-hours clock as of now."""
        return runner.memory(), runner.active_clock(self.kernel.clock(), self.idle_timeout)

    def _live(self) -> contextlib.AbstractContextManager[tuple[MemoryGraph, ActiveClock]]:
        """The graph caught up to the head of the log, and the active-hours clock as of now (held under the
        lock while in use)."""
        return self._memory.read()

    @contextlib.contextmanager
    def _graph(
        self, as_of: _dt.datetime | None, position: int | None
    ) -> Iterator[tuple[MemoryGraph, ActiveClock, int, _dt.datetime]]:
        """The live graph (under the lock) or one replayed to a moment or position, with its clock and the log
        position it stands at: the head it was caught up to (not the last event that changed memory: the events
        after that one changed nothing here, and a block's history reads up to this position), or the one asked
        for."""
        until = self.kernel.until(as_of, position)
        if until is None:
            with self._live() as (graph, clock):
                yield graph, clock, self._memory.runner.position, clock.at
            return
        runner = self._memory.replay_to(until)
        moment = as_of or runner.last_recorded_at or self.kernel.clock()
        yield runner.memory(), runner.active_clock(moment, self.idle_timeout), until, moment

    def warm(self) -> None:
        """Restore the live graph now (its snapshot and the tail after it), so that the first recall does not:
        ``serve`` calls it before it answers, when decoding the snapshot's megabytes competes with nothing."""
        self._memory.current()

    def constitutional_block_count(self) -> int:
        """How many memory blocks carry ``self/constitutional`` (archived or not)."""
        with self._live() as (graph, _):
            return sum(1 for b in graph.blocks.values() if b.constitutional)

    # --- reads --------------------------------------------------------------------------------------------

    def memory_blocks(
        self,
        *,
        tag: str | None = None,
        tier: str | None = None,
        archived: bool | None = False,
        as_of: _dt.datetime | None = None,
        position: int | None = None,
        limit: int = 100,
    ) -> BlockList:
        """Blocks (by default the live ones) as of a moment, best composite score first, with breakdowns.

        ``archived=False`` lists live blocks (neither archived nor superseded); ``None`` lists every block kept.

        Scores use the attention weights without similarity and are normalised within the listed set.
        """
        if tier is not None and tier not in {t.value for t in decay.Tier}:
            raise InvalidInput(f"tier {tier!r} is not known", f"send one of {', '.join(t.value for t in decay.Tier)}")
        limit = limits.check_limit(limit)
        with self._graph(as_of, position) as (graph, clock, until, moment):
            c = BlockColumns(graph, tags=tag is not None, tier=tier is not None)
            chosen = [
                i
                for i in range(len(c))
                if (tag is None or tags_match(c.tags[i], tag))
                and (tier is None or c.tier[i] == tier)
                and (archived is None or (c.live[i] if not archived else c.archived[i]))
            ]
            ranking = Ranking(graph, clock, decay.ATTENTION_WEIGHTS, c, chosen)
            page = ranking.best(limit)
        sources = self.block_sources([s.block for s in page])
        return BlockList(
            as_of=moment,
            position=until,
            active_hours=round(clock.now, 6),
            count=len(ranking),
            blocks=[BlockOut.of(s, *sources[s.block.block_id]) for s in page],
        )

    def memory_block(
        self, block_id: str, *, as_of: _dt.datetime | None = None, position: int | None = None
    ) -> BlockDetail:
        """One block scored against every live block, with every event that touched it."""
        with self._graph(as_of, position) as (graph, clock, until, moment):
            block = graph.blocks.get(block_id) if isinstance(block_id, str) else None
            if block is None:
                self._refuse_erased(block_id, until)
                raise NotFound(
                    f"block {block_id} does not exist (at that point)",
                    "list blocks: GET /memory/blocks or `compliance-ledger memory list`",
                )
            scored = score_one(graph, clock, block)
            neighbours = sorted(
                (
                    Neighbour(
                        block_id=e.b if e.a == block_id else e.a,
                        count=e.count,
                        last_co_retrieved_at=e.last_co_retrieved_at,
                    )
                    for e in graph.incident(block_id)
                ),
                key=lambda n: (-n.count, n.block_id),
            )
        history = [
            _history_entry(rec)
            for rec in self.kernel.store.iter_events(0, until, types=list(MEMORY_EVENT_TYPES))
            if block_id in memory_proj.block_ids_of(rec) or block_id in _consolidated(rec)
        ]
        sources = self.block_sources([scored.block])
        return BlockDetail(
            block=BlockOut.of(scored, *sources[block_id]),
            history=history,
            neighbours=neighbours,
            as_of=moment,
            position=until,
        )

    def memory_lookup(self, query: str, limit: int = 10) -> LookupResult:
        """The search of ``search`` (the same index and ranking) without recording anything: no event, no token,
        no session. For people browsing memory; an agent's search that counts goes through the session."""
        query = limits.check_query(query)
        limit = limits.check_limit(limit)
        hits = self.kernel.index.search(query, limit)
        return LookupResult(query=query, results=[SearchHit.of(h) for h in hits], count=len(hits))

    def block_sources(self, blocks: Sequence[memory_proj.BlockView]) -> dict[str, BlockSource]:
        """The texts and provenance of ``blocks`` by id, read from the log (each block's ``MemoryRemembered`` and
        its metadata): the graph keeps only what scoring needs. A text missing from the log fails closed: the log
        is damaged."""
        records = self.kernel.store.records_at([b.origin for b in blocks])
        found: dict[str, BlockSource] = {}
        for b in blocks:
            record = records.get(b.origin)
            recorded = decode(record, self.kernel.store.cipher) if record is not None else None
            event = recorded.event if recorded is not None else None
            if recorded is None or not isinstance(event, MemoryRemembered) or event.block_id != b.block_id:
                raise StoreUnavailable(
                    f"the text of block {b.block_id} is not at position {b.origin} of the log",
                    "run `compliance-ledger verify`: the log does not match what was folded from it",
                )
            found[b.block_id] = BlockSource(event.content, origin_of(b.origin, recorded.meta, event))
        return found

    def _refuse_erased(self, block_id: str, until: int | None) -> None:
        """An :class:`Erased` (by whom, when, why) when ``block_id`` was erased (up to ``until``)."""
        if isinstance(block_id, str) and block_id.startswith("blk_"):
            for rec in self.kernel.store.load_stream(memory.stream_for(block_id)).events:
                if isinstance(rec.event, MemoryErased) and (until is None or rec.position <= until):
                    e = rec.event
                    at = rec.recorded_at.isoformat().replace("+00:00", "Z")
                    by = rec.agent or "?"
                    message = f"block {block_id} was erased by {by} at {at}: {e.reason}"
                    raise Erased(message, "its text cannot be read again", by=by, at=at, reason=e.reason)

    def new_block_id(self, content: str) -> str:
        """The id ``content`` gets as a block: a live block written before keyed ids with the same text keeps its
        (content-hash) id, so duplicates are still found; otherwise the ledger's keyed hash of the text, of the
        next generation when the block of this text was erased (a new block, whose id tells nothing of it)."""
        store = self.kernel.store
        legacy = memory.block_id_for(content)
        if _holds_unerased(store.load_stream(memory.stream_for(legacy)).events):
            return legacy
        normalised = memory.normalise(content)
        generation = 0
        while True:
            block_id = self.kernel.block_id(normalised, generation)
            if not any(
                isinstance(r.event, MemoryErased) for r in store.load_stream(memory.stream_for(block_id)).events
            ):
                return block_id
            generation += 1

    def block_texts(self, blocks: Sequence[memory_proj.BlockView]) -> dict[str, str]:
        """The texts of ``blocks`` by id (:meth:`block_sources` without the provenance)."""
        return {block_id: found.content for block_id, found in self.block_sources(blocks).items()}

    @contextlib.contextmanager
    def _consolidating(
        self, block_id: str, content: str
    ) -> Iterator[tuple[consolidation.Verdict, consolidation.Method]]:
        """Yield the near-duplicate verdict on ``content`` while holding the ledger's consolidation lease, for the
        append that acts on it. The check runs first without the lease, and again under it only if a block arrived
        since (a remember of another node or thread, which held the lease for its append): a text and its
        near-duplicate remembered at once end created + linked, never created + created, and remembers that do
        not meet hold the lease for their append alone."""
        seen = self.kernel.store.head()[0]
        checked = self._consolidation(block_id, content)
        with self.kernel.store.lease(CONSOLIDATE_LEASE, wait=True):
            # one index probe; the generator is dropped (its read cursor closed) at once
            if next(self.kernel.store.iter_records(seen, types=_NEW_TEXT, batch_size=1), None) is not None:
                checked = self._consolidation(block_id, content)
            yield checked

    def _consolidation(self, block_id: str, content: str) -> tuple[consolidation.Verdict, consolidation.Method]:
        """Link, flag or store ``content`` (the block ``block_id`` it would be), against its nearest live blocks:
        by embedding cosine with the ``[semantic]`` extra (the vector is handed to the embedding index, so it is not
        computed twice), else by full-text search and word overlap. Returns the verdict and the method."""
        index = self.kernel.index
        neighbours: list[consolidation.Neighbour] = []
        if index.semantic is not None:
            try:
                vector = index.semantic.embedder.embed_one(content)
            except SemanticUnavailable:
                vector = None
            if vector is not None:
                near = [n for n in index.semantic.nearest(vector, consolidation.NEIGHBOURS) if n[0] != block_id]
                index.semantic.offer(block_id, vector)
                records = self.kernel.store.records_at([origin for _, _, origin in near])
                for found, cos, origin in near:
                    event = decode(records[origin], self.kernel.store.cipher).event if origin in records else None
                    if isinstance(event, MemoryRemembered) and event.block_id == found:
                        neighbours.append(consolidation.Neighbour(found, event.content, cos))
                return consolidation.decide(content, neighbours, "cosine"), "cosine"
        try:  # the text's first content words make the query (each word of a query costs the index a probe)
            hits = index.search(" ".join(query_terms(content)[: consolidation.QUERY_WORDS]), consolidation.NEIGHBOURS)
        except InvalidInput:  # no searchable word in the text: nothing to compare it with
            hits = []
        neighbours = [
            consolidation.Neighbour(h.block_id, h.content, consolidation.overlap(content, h.content))
            for h in hits
            if h.block_id != block_id
        ]
        neighbours.sort(key=lambda n: -n.similarity)
        return consolidation.decide(content, neighbours, "words"), "words"

    def memory_stats(self) -> MemoryStats:
        with self._live() as (graph, clock):
            return stats_of(graph, clock)


def score_one(graph: MemoryGraph, clock: ActiveClock, block: memory_proj.BlockView) -> Scored:
    """One block scored (query-less, attention weights) against every live block."""
    c = BlockColumns(graph)
    row = c.ids.index(block.block_id)
    peers = [i for i in c.in_frame(None) if i != row]
    return Ranking(graph, clock, decay.ATTENTION_WEIGHTS, c, [row, *peers]).scored(0)


def stats_of(graph: MemoryGraph, clock: ActiveClock) -> MemoryStats:
    last = graph.last_curate.active_hours if graph.last_curate is not None else None
    return MemoryStats(
        blocks=len(graph.blocks),
        archived=sum(1 for b in graph.blocks.values() if b.archived),
        constitutional=sum(1 for b in graph.blocks.values() if b.constitutional),
        edges=len(graph.edges),
        curates=graph.curates,
        active_hours=round(clock.now, 6),
        last_curate_active_hours=last,
        next_auto_curate_at_active_hours=(last or 0.0) + decay.CURATE_INTERVAL_ACTIVE_HOURS,
    )


def _history_entry(rec: RecordedEvent) -> BlockEvent:
    detail = rec.event.model_dump(mode="json")
    detail.pop("content", None)
    return BlockEvent(
        position=rec.position, recorded_at=rec.recorded_at, type=rec.event.type_name, agent=rec.agent, detail=detail
    )
