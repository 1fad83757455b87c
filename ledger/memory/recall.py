"""Recall and curate decisions (seed 002): frames, scoring, guarantees, token budgets, rendering; pure.

The service hands these functions the memory graph (a projection), the active-hours clock as of now and, for a
recall with a query, the full-text hits; they return what to show the agent and the event to record. Nothing
here reads the store or a clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from ledger.core.errors import InvalidInput
from ledger.core.events import Frame, MemoryCurated
from ledger.memory.diversity import Similarity, SimilarityFactory, mmr, word_overlap
from ledger.memory.scoring import BlockColumns, Ranking, Scored, weighted_degrees
from projections import decay
from projections.active_hours import ActiveClock
from projections.memory import BlockView, MemoryGraph

MAX_TOP_K: Final = 50
CANDIDATES_PER_SLOT: Final = 4
"""With a query, the ``top_k × 4`` best full-text matches (after the frame's filter) are the candidates; without
one, the ``top_k × 4`` best-scoring blocks of the frame are the pool that diversity (MMR) chooses from."""
CHARS_PER_TOKEN: Final = 4
"""Token estimate: one token per four characters (as the seed's system counts them)."""
TRUNCATION_MARK: Final = " […]"


@dataclass(frozen=True, slots=True)
class FrameSpec:
    """How a frame chooses, weighs, guarantees, budgets and renders blocks."""

    name: Frame
    weights: decay.Weights
    tag_prefix: str | None  # only blocks with a tag under this prefix are candidates
    guarantees: tuple[str, ...]  # tags whose blocks among the candidates take their slots first
    token_budget: int
    max_guaranteed: int | None = None  # at most this many guaranteed blocks get a reserved slot (None: all)


FRAMES: Final[Mapping[str, FrameSpec]] = {
    "self": FrameSpec("self", decay.SELF_WEIGHTS, "self/", (decay.CONSTITUTIONAL_TAG,), 600, max_guaranteed=2),
    "attention": FrameSpec("attention", decay.ATTENTION_WEIGHTS, None, (), 2000),
    "task": FrameSpec("task", decay.TASK_WEIGHTS, None, ("self/goal",), 800),
}


def frame_spec(frame: str) -> FrameSpec:
    spec = FRAMES.get(frame) if isinstance(frame, str) else None
    if spec is None:
        raise InvalidInput(f"frame {frame!r} is not known", f"send one of {', '.join(FRAMES)}")
    return spec


def check_top_k(top_k: int) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise InvalidInput(f"top_k {top_k!r} is out of range", f"send a top_k from 1 to {MAX_TOP_K}")
    return top_k


def estimate_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN


# --- scoring -------------------------------------------------------------------------------------------------


def weighted_degree(graph: MemoryGraph, block_id: str, clock: ActiveClock) -> float:
    """Sum over the block's co-retrieval edges of their decayed weight plus the co-retrieval bonus, summed exactly
    (``math.fsum``): the adjacency is a set, whose order differs between processes and between a live graph and
    one restored from a snapshot, and a plain sum's last bit followed it."""
    parts: list[float] = []
    lam = graph.blocks[block_id].lam
    for edge in graph.incident(block_id):
        other = graph.blocks[edge.b if edge.a == block_id else edge.a]
        edge_lam = decay.edge_lambda(lam, other.lam, edge.count)
        weight = decay.edge_weight(edge_lam, clock.hours_since(edge.last_co_retrieved_at))
        parts.append(decay.degree_contribution(weight, edge.count))
    return math.fsum(parts)


def score_blocks(
    blocks: Sequence[BlockView],
    weights: decay.Weights,
    graph: MemoryGraph,
    clock: ActiveClock,
    similarity: Mapping[str, float] | None = None,
) -> list[Scored]:
    """Score ``blocks`` against each other, best first (ties by block id). (Over every block of the graph without
    a query, ``scoring.Ranking`` gives the same scores for a fraction of the cost.)

    Centrality is weighted degree over the largest in the scored set and reinforcement is against the most
    reinforced block of the set, as the seed's system normalises them. Without ``similarity`` (no query) the
    similarity weight is dropped and the others renormalised.
    """
    if not blocks:
        return []
    w = weights if similarity is not None else weights.without_similarity()
    degrees = {b.block_id: weighted_degree(graph, b.block_id, clock) for b in blocks}
    centrality = decay.normalised(degrees)
    max_count = max(b.reinforcements for b in blocks)
    scored: list[Scored] = []
    for b in blocks:
        since = clock.hours_since(b.last_reinforced_at)
        breakdown = decay.score(
            w,
            similarity=similarity.get(b.block_id, 0.0) if similarity is not None else 0.0,
            confidence=b.confidence,
            recency=decay.recency(b.lam, since),
            centrality=centrality[b.block_id],
            reinforcement=decay.reinforcement(b.reinforcements, max_count),
        )
        scored.append(Scored(b, breakdown, since, degrees[b.block_id]))
    scored.sort(key=lambda s: (-s.breakdown.total, s.block.block_id))
    return scored


def similarity_from_rank(ranks: Mapping[str, float]) -> dict[str, float]:
    """Full-text ranks (higher is better) normalised to [0, 1] against the best of the candidates."""
    return decay.normalised({k: max(v, 0.0) for k, v in ranks.items()})


# --- recall --------------------------------------------------------------------------------------------------


def in_frame(block: BlockView, spec: FrameSpec) -> bool:
    return block.live and (spec.tag_prefix is None or block.has_tag(spec.tag_prefix))


def is_guaranteed(block: BlockView, spec: FrameSpec) -> bool:
    return any(block.has_tag(tag) for tag in spec.guarantees)


def reserved_slots(ranked: Sequence[Scored], spec: FrameSpec, top_k: int) -> list[Scored]:
    """The guaranteed candidates that get a reserved slot: at most ``spec.max_guaranteed`` (and ``top_k``), the
    most relevant to the query first (similarity, then composite score), or by score without a query."""
    guaranteed = [s for s in ranked if is_guaranteed(s.block, spec)]
    guaranteed.sort(key=lambda s: (-s.breakdown.similarity, -s.breakdown.total, s.block.block_id))
    limit = top_k if spec.max_guaranteed is None else min(spec.max_guaranteed, top_k)
    return guaranteed[:limit]


def _split(ranked: Sequence[Scored], spec: FrameSpec, top_k: int) -> tuple[list[Scored], list[Scored], list[Scored]]:
    """The reserved candidates, the others (not guaranteed) and the surplus (guaranteed, beyond the reserved
    slots), the last two in rank order."""
    reserved = reserved_slots(ranked, spec, top_k)
    taken = {s.block.block_id for s in reserved}
    others = [s for s in ranked if not is_guaranteed(s.block, spec)]
    surplus = [s for s in ranked if is_guaranteed(s.block, spec) and s.block.block_id not in taken]
    return reserved, others, surplus


def pool_of(ranked: Sequence[Scored], spec: FrameSpec, top_k: int) -> list[Scored]:
    """The ``top_k × 4`` candidates a recall chooses from, in rank order: the reserved ones, then the best of the
    others; surplus guaranteed blocks only where the others leave room (see :func:`enforce_guarantees`), so the
    rest of the constitution never pushes the agent's own values out of the pool."""
    size = top_k * CANDIDATES_PER_SLOT
    reserved, others, surplus = _split(ranked, spec, top_k)
    room = max(0, size - len(reserved))
    keep = {s.block.block_id for s in [*reserved, *others[:room], *surplus[: max(0, room - len(others))]]}
    return [s for s in ranked if s.block.block_id in keep]


def enforce_guarantees(
    ranked: Sequence[Scored], spec: FrameSpec, top_k: int, similarity: Similarity | None = None
) -> list[Scored]:
    """Reserved slots first (:func:`reserved_slots`), then the candidates that are not guaranteed compete for
    the remaining slots: by maximal marginal relevance against what is chosen when ``similarity`` is given, else
    by score; the winners are listed best score first. Guaranteed blocks beyond the reserved slots (in the self
    frame, the rest of the constitution) fill only the slots left when no other candidate is: seed 002 guarantees
    the one or two most relevant constitutional blocks and gives the remaining slots to the agent's own
    knowledge. They come last, so a tight token budget drops them first. Nothing is added that was not a
    candidate."""
    reserved, others, surplus = _split(ranked, spec, top_k)
    room = max(0, top_k - len(reserved))
    winners = _compete(others, room, reserved, similarity)
    fallback = _compete(surplus, room - len(winners), [*reserved, *winners], similarity)
    return [*reserved, *winners, *fallback]


def _compete(
    rest: Sequence[Scored], room: int, chosen: Sequence[Scored], similarity: Similarity | None
) -> list[Scored]:
    """Up to ``room`` of ``rest`` (in rank order), by MMR against ``chosen`` when ``similarity`` is given."""
    if room <= 0:
        return []
    if similarity is None or len(rest) <= room:  # nothing to choose between: every candidate gets a slot
        return list(rest[:room])
    won = {s.block.block_id for s in mmr(rest, _relevance, _block_id, similarity, room, chosen=chosen)}
    return [s for s in rest if s.block.block_id in won]


def _relevance(s: Scored) -> float:
    return s.breakdown.total


def _block_id(s: Scored) -> str:
    return s.block.block_id


@dataclass(frozen=True, slots=True)
class Shown:
    """A block as rendered for the agent (``content`` is cut to fit the budget when ``truncated``)."""

    scored: Scored
    content: str
    guaranteed: bool
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Recollection:
    """What a recall shows: the rendered text, the blocks in it, those of the pool left out with the reason, and
    how many candidates ranked below the pool (counted, not listed: without a query that is every other block)."""

    text: str
    tokens: int
    shown: tuple[Shown, ...]
    dropped: tuple[tuple[str, Literal["top_k", "token_budget"]], ...]
    beyond_pool: int = 0


def render(spec: FrameSpec, shown: Sequence[tuple[BlockView, str]]) -> str:
    """The frame's text for the agent (headings as the seed's system renders them)."""
    if spec.name == "self":
        lines = ["## Identity", *(f"- {content}" for _, content in shown)]
    elif spec.name == "task":
        goals = [content for block, content in shown if block.has_tag("self/goal")]
        rest = [content for block, content in shown if not block.has_tag("self/goal")]
        lines = ["## Active Goals", *(f"- {c}" for c in goals), ""] if goals else []
        lines += ["## Context", *(f"[{i}] {c}" for i, c in enumerate(rest, 1))]
    else:
        lines = ["## Relevant Knowledge", *(f"[{i}] {content}" for i, (_, content) in enumerate(shown, 1))]
    if not shown:
        lines.append("(nothing recalled)")
    return "\n".join(lines).rstrip("\n")


def recollect(
    ranked: Sequence[Scored],
    spec: FrameSpec,
    top_k: int,
    texts: Callable[[Sequence[BlockView]], Mapping[str, str]],
    similarity: SimilarityFactory = word_overlap,
    candidates: int | None = None,
) -> Recollection:
    """Reserve the guaranteed slots, fill the others by MMR, then fill the frame's token budget greedily.

    ``texts`` gives the blocks' texts by id (asked once, for the ``top_k × 4`` best-ranked: the pool MMR picks
    from); ``similarity`` builds the block similarity MMR uses from them. Filling stops at the first block that
    does not fit. If not even the first block fits, its content is cut to fit (marked ``[…]``), so the text never
    exceeds the budget and the agent still gets the best block.

    ``ranked`` needs to hold only the best ``top_k × 4`` of the ``candidates`` ranked (default: all are in it),
    and for a frame with guarantees the guaranteed candidates as well (the self frame passes every self block),
    from which :func:`pool_of` takes the pool. The pool's blocks not shown are listed as dropped (``top_k`` or
    ``token_budget``); the candidates below the pool never competed and are only counted (``beyond_pool``), so
    the answer does not grow with the ledger.
    """
    pool = pool_of(ranked, spec, top_k)
    beyond = (len(ranked) if candidates is None else candidates) - len(pool)
    if beyond < 0:
        raise ValueError(f"{len(pool)} ranked blocks are more than the {candidates} candidates")
    text_of = texts([s.block for s in pool])
    chosen = enforce_guarantees(pool, spec, top_k, similarity(text_of))
    reserved = {s.block.block_id for s in reserved_slots(pool, spec, top_k)}
    chosen_ids = {s.block.block_id for s in chosen}
    dropped: list[tuple[str, Literal["top_k", "token_budget"]]] = [
        (s.block.block_id, "top_k") for s in pool if s.block.block_id not in chosen_ids
    ]
    shown: list[Shown] = []
    for i, s in enumerate(chosen):
        content = text_of[s.block.block_id]
        attempt = [*((x.scored.block, x.content) for x in shown), (s.block, content)]
        if estimate_tokens(render(spec, attempt)) <= spec.token_budget:
            shown.append(Shown(s, content, s.block.block_id in reserved))
            continue
        if not shown:
            cut = _cut_to_fit(spec, s.block, content)
            shown.append(Shown(s, cut, s.block.block_id in reserved, truncated=True))
            dropped += [(x.block.block_id, "token_budget") for x in chosen[i + 1 :]]
        else:
            dropped += [(x.block.block_id, "token_budget") for x in chosen[i:]]
        break
    text = render(spec, [(x.scored.block, x.content) for x in shown])
    return Recollection(text, estimate_tokens(text), tuple(shown), tuple(dropped), beyond)


def _cut_to_fit(spec: FrameSpec, block: BlockView, content: str) -> str:
    frame_only = len(render(spec, [(block, "")]))
    room = spec.token_budget * CHARS_PER_TOKEN + (CHARS_PER_TOKEN - 1) - frame_only - len(TRUNCATION_MARK)
    return content[: max(room, 0)].rstrip() + TRUNCATION_MARK


# --- curate --------------------------------------------------------------------------------------------------


def curate_due(graph: MemoryGraph, clock: ActiveClock) -> bool:
    """True once 40 active hours have passed since curate last ran (or since the first clock-in)."""
    last = graph.last_curate.active_hours if graph.last_curate is not None else 0.0
    return clock.now - last >= decay.CURATE_INTERVAL_ACTIVE_HOURS


def decide_curate(graph: MemoryGraph, clock: ActiveClock, trigger: Literal["manual", "auto"]) -> MemoryCurated:
    """Archive decayed blocks (sparing constitutional blocks and bridges), prune weak edges, reinforce every
    constitutional block and the top 5 by composite score.

    Every live block is weighed, so this reads the block table by column (``scoring.BlockColumns``) and builds a
    view only for the five it reinforces."""
    columns = BlockColumns(graph, tags=True)
    ids, tags, lam_of = columns.ids, columns.tags, columns.lam_of(graph)
    live = sorted(columns.in_frame(None), key=ids.__getitem__)
    degrees = weighted_degrees(graph, clock, [ids[i] for i in live], lam_of)
    cutoff = decay.bridge_cutoff(degrees)
    since = clock.hours_since_micros()

    def archivable(i: int, degree: float) -> bool:
        if decay.CONSTITUTIONAL_TAG in tags[i] or (cutoff is not None and degree >= cutoff):
            return False
        return decay.recency(columns.lam[i], since(columns.last_reinforced[i])) < decay.ARCHIVE_SCORE_THRESHOLD

    archived = [ids[i] for i, degree in zip(live, degrees, strict=True) if archivable(i, degree)]
    gone = set(archived)
    pruned: list[tuple[str, str]] = []
    for key in sorted(graph.edges):
        if key[0] in gone or key[1] in gone:
            continue  # leaves with its archived block
        edge = graph.edges[key]
        lam = decay.edge_lambda(lam_of[key[0]], lam_of[key[1]], edge.count)
        if decay.edge_weight(lam, clock.hours_since(edge.last_co_retrieved_at)) < decay.EDGE_PRUNE_THRESHOLD:
            pruned.append(key)
    remaining = [i for i in live if ids[i] not in gone]
    constitutional = [ids[i] for i in remaining if decay.CONSTITUTIONAL_TAG in tags[i]]
    top = Ranking(graph, clock, decay.SELF_WEIGHTS, columns, remaining).best(decay.CURATE_TOP_REINFORCED)
    return MemoryCurated(
        trigger=trigger,
        active_hours=clock.now,
        archived=archived,
        edges_pruned=pruned,
        constitutional_reinforced=constitutional,
        reinforced=[s.block.block_id for s in top],
    )
