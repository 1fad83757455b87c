"""Scoring every block by column (``scoring.Ranking``, ``decide_curate``) gives exactly the floats, order and
events of scoring block views one by one (``recall.score_blocks``): checked on random graphs with ties, archived
and superseded blocks, and edges whose ends are archived."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.events import MemoryCurated
from ledger.memory import recall as rc
from ledger.memory.scoring import BlockColumns, Ranking, weighted_degrees
from projections import decay
from projections.active_hours import ActiveClock, SessionSpan
from projections.memory import BlockView, EdgeView, MemoryGraph, pair

T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)
NOW = T0 + _dt.timedelta(hours=400)
LAMBDAS = [*decay.LAMBDA.values(), 0.02]
TAGS = [(), ("project/x",), ("self/value",), ("self/goal",), (decay.CONSTITUTIONAL_TAG, "self/value")]


def at(minutes: int) -> _dt.datetime:
    return T0 + _dt.timedelta(minutes=minutes, microseconds=minutes % 7)


# Few distinct values, so that ties in every component (and in the total) are common.
moments = st.integers(min_value=-600, max_value=30_000).map(at)


@st.composite
def graphs(draw: Any) -> MemoryGraph:
    graph = MemoryGraph()
    ids = [f"blk_{i:03d}" for i in draw(st.lists(st.integers(0, 60), min_size=0, max_size=40, unique=True))]
    for block_id in ids:
        tags = draw(st.sampled_from(TAGS))
        graph.blocks[block_id] = BlockView(
            block_id=block_id,
            tags=tags,
            category="knowledge",
            tier=decay.tier_for(tags),
            lam=draw(st.sampled_from(LAMBDAS)),
            created_at=T0,
            created_by=None,
            last_reinforced_at=draw(moments),
            confidence=draw(st.sampled_from([0.0, 0.5, 0.75, 1.0]) | st.floats(0, 1)),
            reinforcements=draw(st.sampled_from([0, 0, 1, 3, 40])),
            archived_at=draw(st.sampled_from([None, None, None, T0])),
            superseded_by=draw(st.sampled_from([None, None, None, "blk_new"])),
        )
    if len(ids) >= 2:
        for x, y in draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=80)):
            if x == y:
                continue
            key = pair(x, y)
            count = draw(st.sampled_from([1, 2, 9, 10, 30]))
            graph.edges[key] = EdgeView(key[0], key[1], count, T0, draw(moments))
            graph.adjacent.setdefault(key[0], set()).add(key[1])
            graph.adjacent.setdefault(key[1], set()).add(key[0])
    return graph


@st.composite
def clocks(draw: Any) -> ActiveClock:
    spans = []
    for i, (start, hours, ended) in enumerate(
        draw(st.lists(st.tuples(st.integers(-600, 30_000), st.integers(0, 200), st.booleans()), max_size=6))
    ):
        begin = at(start)
        end = begin + _dt.timedelta(hours=hours, microseconds=start % 11)
        spans.append(SessionSpan(f"s{i}", begin, end, end if ended else None))
    return ActiveClock.of(spans, NOW)


def views(graph: MemoryGraph, prefix: str | None) -> list[BlockView]:
    spec = rc.FrameSpec("attention", decay.ATTENTION_WEIGHTS, prefix, (), 100)
    return [b for b in graph.blocks.values() if rc.in_frame(b, spec)]


@settings(max_examples=300)
@given(graph=graphs(), clock=clocks(), frame=st.sampled_from(sorted(rc.FRAMES)), n=st.integers(1, 50))
def test_ranking_by_column_is_score_blocks_to_the_last_bit(
    graph: MemoryGraph, clock: ActiveClock, frame: str, n: int
) -> None:
    spec = rc.FRAMES[frame]
    columns = BlockColumns(graph, tags=True)
    ranking = Ranking(graph, clock, spec.weights, columns, columns.in_frame(spec.tag_prefix))
    expected = rc.score_blocks(views(graph, spec.tag_prefix), spec.weights, graph, clock)
    assert len(ranking) == len(expected)
    totals = {columns.ids[i]: total for i, total in zip(ranking.rows, ranking.totals, strict=True)}
    assert {s.block.block_id: s.breakdown.total for s in expected} == totals  # what it ranks by, every block
    assert ranking.best(n) == expected[:n]  # views, breakdowns (every float), hours since, degree, order
    assert ranking.best(len(expected) + 1) == expected


@settings(max_examples=200)
@given(graph=graphs(), clock=clocks())
def test_weighted_degrees_in_one_pass_equal_weighted_degree_block_by_block(
    graph: MemoryGraph, clock: ActiveClock
) -> None:
    ids = list(graph.blocks)  # archived and superseded blocks too: their edges count for their neighbours
    lam_of = BlockColumns(graph).lam_of(graph)
    assert weighted_degrees(graph, clock, ids, lam_of) == [rc.weighted_degree(graph, b, clock) for b in ids]


@settings(max_examples=200)
@given(graph=graphs(), clock=clocks(), tag=st.sampled_from([None, "self/", "project/x", "self/goal"]))
def test_a_chosen_subset_including_archived_blocks_scores_as_score_blocks_scores_it(
    graph: MemoryGraph, clock: ActiveClock, tag: str | None
) -> None:
    """As the block list does (``archived=None``: every block, archived or superseded, by tag)."""
    columns = BlockColumns(graph, tags=True)
    rows = [i for i, b in enumerate(columns.ids) if tag is None or graph.blocks[b].has_tag(tag)]
    chosen = [graph.blocks[columns.ids[i]] for i in rows]
    expected = rc.score_blocks(chosen, decay.ATTENTION_WEIGHTS, graph, clock)
    assert Ranking(graph, clock, decay.ATTENTION_WEIGHTS, columns, rows).best(100) == expected


@settings(max_examples=300)
@given(clock=clocks(), moment=st.integers(-2_000, 40_000).map(at) | st.sampled_from([NOW, T0]))
def test_hours_since_a_moment_in_microseconds_is_hours_since_the_moment(clock: ActiveClock, moment: Any) -> None:
    micros = (moment - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)) // _dt.timedelta(microseconds=1)
    assert clock.hours_since_micros()(micros) == clock.hours_since(moment)


def reference_curate(graph: MemoryGraph, clock: ActiveClock, trigger: Literal["manual", "auto"]) -> MemoryCurated:
    """``decide_curate`` as it was before it read the block table by column: every live block as a view."""
    live = sorted(graph.live_blocks(), key=lambda b: b.block_id)
    degrees = {b.block_id: rc.weighted_degree(graph, b.block_id, clock) for b in live}
    cutoff = decay.bridge_cutoff(degrees.values())

    def archivable(b: BlockView) -> bool:
        if b.constitutional or (cutoff is not None and degrees[b.block_id] >= cutoff):
            return False
        return decay.recency(b.lam, clock.hours_since(b.last_reinforced_at)) < decay.ARCHIVE_SCORE_THRESHOLD

    archived = [b.block_id for b in live if archivable(b)]
    gone = set(archived)
    pruned: list[tuple[str, str]] = []
    for key in sorted(graph.edges):
        if key[0] in gone or key[1] in gone:
            continue
        edge = graph.edges[key]
        lam = decay.edge_lambda(graph.blocks[key[0]].lam, graph.blocks[key[1]].lam, edge.count)
        if decay.edge_weight(lam, clock.hours_since(edge.last_co_retrieved_at)) < decay.EDGE_PRUNE_THRESHOLD:
            pruned.append(key)
    remaining = [b for b in live if b.block_id not in gone]
    top = rc.score_blocks(remaining, decay.SELF_WEIGHTS, graph, clock)[: decay.CURATE_TOP_REINFORCED]
    return MemoryCurated(
        trigger=trigger,
        active_hours=clock.now,
        archived=archived,
        edges_pruned=pruned,
        constitutional_reinforced=[b.block_id for b in remaining if b.constitutional],
        reinforced=[s.block.block_id for s in top],
    )


@settings(max_examples=200)
@given(graph=graphs(), clock=clocks())
def test_curate_by_column_decides_what_curate_by_view_decided(graph: MemoryGraph, clock: ActiveClock) -> None:
    assert rc.decide_curate(graph, clock, "manual") == reference_curate(graph, clock, "manual")


def test_a_large_packed_table_with_a_forgotten_block_ranks_as_score_blocks() -> None:
    """Past ``PACK_AT`` keys a copied table packs them; a delete leaves a dead row; the hot set is partial."""
    graph = MemoryGraph()
    for i in range(3000):
        tags = TAGS[i % len(TAGS)]
        graph.blocks[f"blk_{i:05d}"] = BlockView(
            f"blk_{i:05d}",
            tags,
            "knowledge",
            decay.tier_for(tags),
            LAMBDAS[i % 5],
            T0,
            None,
            at(i % 97),
            confidence=(i % 13) / 12,
            reinforcements=i % 4,
        )
    graph.blocks = graph.blocks.copy()
    for i in range(0, 2990, 7):
        key = pair(f"blk_{i:05d}", f"blk_{i + 9:05d}")
        graph.edges[key] = EdgeView(*key, 1 + i % 12, T0, at(i % 50))
        graph.adjacent.setdefault(key[0], set()).add(key[1])
        graph.adjacent.setdefault(key[1], set()).add(key[0])
    del graph.blocks["blk_00005"]
    graph.blocks["blk_00006"] = BlockView("blk_00006", (), "knowledge", decay.Tier.STANDARD, 0.01, T0, None, at(5))
    clock = ActiveClock.of([SessionSpan("s", T0, NOW, NOW)], NOW)
    columns = BlockColumns(graph, tags=True)
    for frame in ("attention", "task", "self"):
        spec = rc.FRAMES[frame]
        ranking = Ranking(graph, clock, spec.weights, columns, columns.in_frame(spec.tag_prefix))
        expected = rc.score_blocks(views(graph, spec.tag_prefix), spec.weights, graph, clock)
        assert ranking.best(20) == expected[:20] and len(ranking) == len(expected)
    assert rc.decide_curate(graph, clock, "auto") == reference_curate(graph, clock, "auto")


def test_recollect_from_the_pool_alone_lists_what_it_listed_from_every_candidate_and_counts_the_rest() -> None:
    clock = ActiveClock.of([SessionSpan("s", T0, NOW, NOW)], NOW)
    graph = MemoryGraph()
    for i in range(40):
        graph.blocks[f"b{i:02d}"] = BlockView(
            f"b{i:02d}",
            ("self/goal",) if i % 9 == 0 else (),
            "knowledge",
            decay.Tier.STANDARD,
            0.01,
            T0,
            None,
            at(i * 50),
            reinforcements=i % 3,
        )
    spec, top_k = rc.FRAMES["task"], 3
    columns = BlockColumns(graph, tags=True)
    ranking = Ranking(graph, clock, spec.weights, columns, columns.in_frame(None))
    everything = rc.score_blocks(views(graph, None), spec.weights, graph, clock)
    texts = {b: f"text of {b} " * 20 for b in graph.blocks}

    def texts_of(blocks: Any) -> dict[str, str]:
        return {b.block_id: texts[b.block_id] for b in blocks}

    full = rc.recollect(everything, spec, top_k, texts_of)
    goals = {b for b in graph.blocks if graph.blocks[b].has_tag("self/goal")}  # what the recall handler adds
    best = ranking.best(top_k * rc.CANDIDATES_PER_SLOT + len(goals), goals)
    bounded = rc.recollect(best, spec, top_k, texts_of, candidates=40)
    assert bounded == full
    assert any(s.guaranteed for s in full.shown)  # a goal ranked below the pool still takes its reserved slot
    assert full.beyond_pool == 40 - 12 and len(full.shown) + len(full.dropped) == 12
