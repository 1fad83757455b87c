"""Memory handlers: remember, seed the constitution, recall into frames, curate, record outcomes.

Decisions are the pure functions of ``ledger.memory`` and ``ledger.recall``; the block graph they decide on is
a projection (``projections.memory``) that each process keeps caught up by tailing the log. Every change to a
block is an event, so the same fold replayed to any moment gives the scores the live system gave then. The live
graph and the block reads are in ``ledger.memory.reads``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ledger.core import access, limits
from ledger.core.errors import ConcurrencyError, InvalidInput, NotFound
from ledger.core.events import ContradictionFlagged, MemoryLinked, MemoryOutcomeRecorded, MemoryRecalled
from ledger.kernel import Actor, Kernel
from ledger.memory import constitution
from ledger.memory import decisions as memory
from ledger.memory import recall as rc
from ledger.memory.consolidation import Method, Verdict
from ledger.memory.reads import BlockSource
from ledger.memory.report import (
    BlockOut,
    CurateResult,
    DroppedBlock,
    MemorySetupResult,
    OutcomeChange,
    OutcomeResult,
    RecalledBlock,
    RecallResult,
    RememberResult,
)
from ledger.memory.revisions import MemoryRevisions
from ledger.memory.scoring import BlockColumns, Ranking
from ledger.sessions.grants import SessionGrants
from projections import memory as memory_proj
from projections.memory import MemoryGraph


@dataclass
class MemoryCommands(MemoryRevisions):
    """The memory lifecycle of seed 002: remember, recall, curate, outcomes; supersede and forget come from
    :class:`~ledger.memory.revisions.MemoryRevisions`, the block reads and the live memory graph they share from
    :class:`~ledger.memory.reads.MemoryReads`."""

    def __init__(
        self, kernel: Kernel, grants: SessionGrants, *, token_ttl: _dt.timedelta | None, idle_timeout: _dt.timedelta
    ) -> None:
        """``token_ttl``: how long the token a recall with a query issues stays valid (the gate's, as for a
        search); ``idle_timeout``: see :class:`~ledger.memory.reads.MemoryReads`."""
        super().__init__(kernel, idle_timeout)
        self.grants = grants
        self.token_ttl = token_ttl

    def remember(
        self,
        actor: Actor,
        content: str,
        tags: list[str] | None = None,
        session_id: str | None = None,
        category: str | None = None,
        *,
        context: str | None = None,
    ) -> RememberResult:
        """Store a block (its tier follows from its tags and category), or record that it is a duplicate.

        ``context`` (checked by the caller, e.g. the brain) is stored with the block as its provenance."""
        content = memory.check_content(content)
        clean_tags = memory.check_tags(tags)
        clean_category = memory.check_category(category)
        if constitution.CONSTITUTIONAL_TAG in clean_tags:
            access.require_admin(actor, "add to the constitution (a block tagged self/constitutional)")
        # credentials out before the id, the consolidation's embedding or anything else is made of the text
        screened = self.kernel.screen({"content": content, "tags": clean_tags, "context": context})
        content, clean_tags, context = screened["content"], screened["tags"], screened["context"]
        block_id = self.new_block_id(content)
        with self._consolidating(block_id, content) as checked:
            result = self._remember_checked(
                actor, block_id, content, clean_tags, clean_category, context, session_id, checked
            )
        self._auto_curate(actor)
        return result

    def _remember_checked(
        self,
        actor: Actor,
        block_id: str,
        content: str,
        clean_tags: list[str],
        clean_category: str,
        context: str | None,
        session_id: str | None,
        checked: tuple[Verdict, Method],
    ) -> RememberResult:
        verdict, method = checked

        def attempt() -> RememberResult:
            session = self.grants.open_if(actor, session_id)
            state = self.kernel.store.load_stream(memory.stream_for(block_id))
            meta = self.grants.meta(actor, session)
            first = state.events[0].event if state.events else None
            linked = first if isinstance(first, MemoryLinked) else None
            if linked is not None or (state.version == 0 and verdict.action == "link"):
                # a near-duplicate: linked to the block it repeats (again, if this very text was linked before)
                if linked is not None:
                    to, sim, how = linked.block_id, linked.similarity, linked.method
                else:
                    assert verdict.block_id is not None
                    to, sim, how = verdict.block_id, verdict.similarity, method
                event = MemoryLinked(
                    block_id=to, candidate_id=block_id, similarity=round(sim, 6), method=how, session_id=session_id
                )
                self.kernel.append(actor, state.stream, state.version, [event], meta)
                return RememberResult(block_id=to, status="linked", similarity=event.similarity, consolidation=how)
            decided = memory.decide_remember(
                stream_version=state.version,
                block_id=block_id,
                content=content,
                tags=clean_tags,
                session_id=session_id,
                category=clean_category,
                context=context,
            )
            events = [decided]
            flag = state.version == 0 and verdict.action == "flag"
            if flag:
                assert verdict.block_id is not None
                events.append(
                    ContradictionFlagged(
                        block_id=block_id,
                        contradicts=verdict.block_id,
                        similarity=round(verdict.similarity, 6),
                        method=method,
                        session_id=session_id,
                    )
                )
            self.kernel.append(actor, state.stream, state.version, events, meta)
            status: Literal["created", "duplicate_rejected"] = "created" if state.version == 0 else "duplicate_rejected"
            return RememberResult(
                block_id=block_id,
                status=status,
                similarity=round(verdict.similarity, 6) if flag else None,
                contradicts=verdict.block_id if flag else None,
                consolidation=method,
            )

        return self.kernel.retrying(attempt)

    def setup_memory(
        self,
        actor: Actor,
        *,
        identity: str | None = None,
        values: Sequence[str] = (),
        seed: bool = True,
        session_id: str | None = None,
    ) -> MemorySetupResult:
        """Seed the constitution (seed 002 Step 0) and optional identity/value blocks. Idempotent.

        A block already in the ledger is skipped without an event: setup is declarative, so running it again
        is not a rejected attempt to remember.
        """
        wanted: list[tuple[str, list[str]]] = []
        if seed:
            wanted += [(b.content, list(b.tags)) for b in constitution.CONSTITUTION]
        if identity is not None:
            identity = self.kernel.screen({"identity": memory.check_content(identity)})["identity"]
            wanted.append((identity, ["self/context"]))
        values = self.kernel.screen({"values": [memory.check_content(v) for v in values]})["values"]
        wanted += [(v, ["self/value"]) for v in values]
        session = self.grants.open_if(actor, session_id)
        created: list[str] = []
        present: list[str] = []
        shipped = {b.content for b in constitution.CONSTITUTION} if seed else set()
        for content, tags in wanted:
            # the shipped constitution is public text: its blocks keep their content-hash ids in every ledger
            block_id = memory.block_id_for(content) if content in shipped else self.new_block_id(content)
            stream = memory.stream_for(block_id)
            try:
                if self.kernel.store.load_stream(stream).version:
                    present.append(block_id)
                    continue
                event = memory.decide_remember(
                    stream_version=0, block_id=block_id, content=content, tags=tags, session_id=session_id
                )
                self.kernel.append(actor, stream, 0, [event], self.grants.meta(actor, session))
                created.append(block_id)
            except ConcurrencyError:  # another process seeded it at the same moment
                present.append(block_id)
        return MemorySetupResult(
            created=created, already_present=present, constitutional_blocks=self.constitutional_block_count()
        )

    # --- recall -------------------------------------------------------------------------------------------

    def recall(
        self,
        actor: Actor,
        query: str | None = None,
        frame: str = "attention",
        top_k: int = 5,
        session_id: str | None = None,
    ) -> RecallResult:
        """Bring the best blocks for a frame to the agent as text; the recall is recorded and reinforces them.

        With a query in a session it also issues the session's compliance token, as ``memory_search`` does.
        """
        spec = rc.frame_spec(frame)
        top_k = rc.check_top_k(top_k)
        if query is not None:
            query = limits.check_query(query)

        def attempt() -> RecallResult:
            session = self.grants.open_if(actor, session_id)
            # Search first: the graph caught up afterwards holds every block the index returned. No similarity
            # floor: a frame ranks its candidates itself (seed 002's self-frame examples share no measurable
            # meaning with the constitutional blocks they name: docs/DESIGN_NOTES.md, "The similarity floor").
            hits = (
                self.kernel.index.search(query, top_k * rc.CANDIDATES_PER_SLOT, spec.tag_prefix, floor=False)
                if query
                else None
            )
            signals: dict[str, tuple[float | None, float | None]] = {}  # block id: (bm25, cosine)
            with self._live() as (graph, clock):
                if hits is not None:
                    signals.update({h.block_id: (h.bm25, h.cosine) for h in hits})
                if hits is not None or spec.tag_prefix is not None:  # the hits, or the frame's tag index: few
                    similarity = None if hits is None else rc.similarity_from_rank({h.block_id: h.score for h in hits})
                    found = (
                        [graph.blocks[h.block_id] for h in hits if h.block_id in graph.blocks]
                        if hits is not None
                        else graph.live_blocks(spec.tag_prefix)
                    )
                    candidates = [b for b in found if rc.in_frame(b, spec)]
                    ranked = rc.score_blocks(candidates, spec.weights, graph, clock, similarity)
                    count = len(ranked)
                else:  # every live block competes: scored by column, views built for the pool only
                    columns = BlockColumns(graph)
                    ranking = Ranking(graph, clock, spec.weights, columns, columns.in_frame(None))
                    # The frame's guaranteed blocks (the task frame's goals) compete however low they rank, and as
                    # many more of the others as there are of them: the pool (rc.pool_of) takes top_k × 4 blocks that
                    # are not guaranteed, besides the reserved ones, whatever ranks among the best.
                    must = {b.block_id for tag in spec.guarantees for b in graph.live_blocks(tag)}
                    ranked = ranking.best(top_k * rc.CANDIDATES_PER_SLOT + len(must), must)
                    count = len(ranking)
                memory_version = graph.version
            sources: dict[str, BlockSource] = {}  # the pool's texts and provenance, read once

            def text_of(blocks: Sequence[memory_proj.BlockView]) -> dict[str, str]:
                sources.update(self.block_sources(blocks))
                return {block_id: found.content for block_id, found in sources.items()}

            shown = rc.recollect(ranked, spec, top_k, text_of, candidates=count)
            shown_ids = [s.scored.block.block_id for s in shown.shown]
            relevant = self.kernel.index.relevant(hits) if hits is not None else set()
            ttl = self.token_ttl
            expires = (
                self.kernel.clock() + ttl if ttl is not None and query is not None and session_id is not None else None
            )
            event = MemoryRecalled(
                session_id=session_id,
                query=query,
                frame=spec.name,
                top_k=top_k,
                block_ids=shown_ids,
                guaranteed_ids=[s.scored.block.block_id for s in shown.shown if s.guaranteed],
                tokens=shown.tokens,
                active_hours=round(clock.now, 6),
                token_expires_at=expires,
                relevant_ids=None if hits is None else [b for b in shown_ids if b in relevant],
            )
            if session is not None:
                [rec], _ = self.grants.append(actor, session, [event])
            else:
                [rec] = self.kernel.append(actor, memory_proj.STREAM, memory_version, [event], self.kernel.meta(actor))
            return RecallResult(
                frame=spec.name,
                query=query,
                text=shown.text,
                tokens=shown.tokens,
                token_budget=spec.token_budget,
                blocks=[
                    RecalledBlock(
                        **BlockOut.of(
                            s.scored,
                            *sources[s.scored.block.block_id],
                            *signals.get(s.scored.block.block_id, (None, None)),
                        ).model_dump(),
                        guaranteed=s.guaranteed,
                        truncated=s.truncated,
                    )
                    for s in shown.shown
                ],
                dropped=[DroppedBlock(block_id=b, reason=r) for b, r in shown.dropped],
                dropped_beyond_pool=shown.beyond_pool,
                relevant=None if hits is None else len(event.relevant_ids or []),
                active_hours=event.active_hours,
                session_id=session_id,
                token_expires_at=event.token_expires_at,
                position=rec.position,
            )

        result = self.kernel.retrying(attempt)
        self._auto_curate(actor)
        return result

    # --- curate -------------------------------------------------------------------------------------------

    def curate(self, actor: Actor) -> CurateResult:
        """Archive decayed blocks, prune weak edges, reinforce the constitution and the top 5; recorded."""
        result = self._curate(actor, "manual")
        assert result is not None
        return result

    def _auto_curate(self, actor: Actor) -> CurateResult | None:
        """Curate if 40 active hours have passed since the last curate (checked after memory commands)."""
        return self._curate(Actor(agent="system", source=actor.source, correlation_id=actor.correlation_id), "auto")

    def _curate(self, actor: Actor, trigger: Literal["manual", "auto"]) -> CurateResult | None:
        def attempt() -> CurateResult | None:
            with self._live() as (graph, clock):
                if trigger == "auto" and not rc.curate_due(graph, clock):
                    return None
                event = rc.decide_curate(graph, clock, trigger)
                version = graph.version
            [rec] = self.kernel.append(actor, memory_proj.STREAM, version, [event], self.kernel.meta(actor))
            return CurateResult(
                trigger=trigger,
                archived=len(event.archived),
                edges_pruned=len(event.edges_pruned),
                constitutional_reinforced=len(event.constitutional_reinforced),
                reinforced=len(event.reinforced),
                archived_ids=event.archived,
                reinforced_ids=event.reinforced,
                active_hours=event.active_hours,
                position=rec.position,
            )

        return self.kernel.retrying(attempt)

    # --- outcome ------------------------------------------------------------------------------------------

    def outcome(
        self,
        actor: Actor,
        block_ids: list[str],
        signal: float,
        session_id: str | None = None,
        note: str | None = None,
    ) -> OutcomeResult:
        """Record how useful blocks proved: a Beta update of their confidence; a signal below 0.20 doubles
        their decay rate (up to 0.050)."""
        ids = memory.check_block_ids(block_ids)
        signal = memory.check_signal(signal)
        note = memory.check_note(note)

        def attempt() -> OutcomeResult:
            session = self.grants.open_if(actor, session_id)
            with self._live() as (graph, _):
                before = [self._live_block(graph, b) for b in ids]
                version = graph.version
            event = MemoryOutcomeRecorded(block_ids=ids, signal=signal, session_id=session_id, note=note)
            [rec] = self.kernel.append(actor, memory_proj.STREAM, version, [event], self.grants.meta(actor, session))
            changes = []
            for b in before:
                after = memory_proj.evolve_block(b.block_id, b, rec)
                assert after is not None
                changes.append(
                    OutcomeChange(
                        block_id=b.block_id,
                        confidence_before=round(b.confidence, 6),
                        confidence_after=round(after.confidence, 6),
                        decay_rate_before=b.lam,
                        decay_rate_after=after.lam,
                    )
                )
            return OutcomeResult(signal=signal, blocks=changes, position=rec.position)

        result = self.kernel.retrying(attempt)
        self._auto_curate(actor)
        return result

    @staticmethod
    def _live_block(graph: MemoryGraph, block_id: str) -> memory_proj.BlockView:
        block = graph.blocks.get(block_id)
        if block is None:
            raise NotFound(f"block {block_id} does not exist", "send ids returned by memory_recall or memory_search")
        if block.archived:
            raise InvalidInput(
                f"block {block_id} was archived by curate at {block.archived_at:%Y-%m-%d %H:%M:%S} UTC",
                "send outcomes only for blocks that recall still returns",
            )
        return block
