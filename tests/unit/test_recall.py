"""Recall and curate decisions as pure functions: guarantees, token budgets, rendering, edges and bridges."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.memory import recall as rc
from projections import decay
from projections.memory import BlockView

T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)


TEXTS: dict[str, str] = {}  # the blocks' texts, which the graph does not hold (the log does)


def view(block_id: str, content: str = "x", tags: tuple[str, ...] = ()) -> BlockView:
    tier = decay.tier_for(tags)
    TEXTS[block_id] = content
    return BlockView(block_id, tags, "knowledge", tier, decay.LAMBDA[tier], T0, "elf", T0)


def texts_of(blocks: Sequence[BlockView]) -> dict[str, str]:
    return {b.block_id: TEXTS[b.block_id] for b in blocks}


def scored(block: BlockView, total: float) -> rc.Scored:
    w = decay.ATTENTION_WEIGHTS
    return rc.Scored(block, decay.ScoreBreakdown(total, 0, 0, 0, 0, w, total), 0.0, 0.0)


def ranked(*items: tuple[str, float, tuple[str, ...]]) -> list[rc.Scored]:
    out = [scored(view(i, f"content of {i}", tags), total) for i, total, tags in items]
    return sorted(out, key=lambda s: -s.breakdown.total)


CONST = ("self/constitutional", "self/value")


def test_guaranteed_candidates_take_their_slots_first_and_the_rest_compete() -> None:
    candidates = ranked(
        ("d1", 0.9, ("self/value",)),
        ("d2", 0.8, ("self/value",)),
        ("c1", 0.3, CONST),
        ("d3", 0.7, ("self/value",)),
        ("c2", 0.2, CONST),
    )
    chosen = rc.enforce_guarantees(candidates, rc.FRAMES["self"], 3)
    assert [s.block.block_id for s in chosen] == ["c1", "c2", "d1"]


def test_at_most_two_constitutional_slots_are_reserved_and_the_rest_compete_on_score() -> None:
    """Seed 002 edge case 1: the constitution does not crowd out domain knowledge."""
    candidates = ranked(*((f"c{i}", i / 10, CONST) for i in range(6)), ("d", 0.99, ("self/value",)))
    chosen = rc.enforce_guarantees(candidates, rc.FRAMES["self"], 3)
    assert [s.block.block_id for s in chosen] == ["c5", "c4", "d"]
    assert [s.block.block_id for s in rc.reserved_slots(candidates, rc.FRAMES["self"], 3)] == ["c5", "c4"]


def test_with_a_query_the_reserved_slots_go_to_the_most_relevant_constitutional_blocks() -> None:
    w = decay.SELF_WEIGHTS
    relevant = rc.Scored(view("c_rel", "x", CONST), decay.ScoreBreakdown(0.9, 0, 0, 0, 0, w, 0.2), 0.0, 0.0)
    strong = [scored(view(f"c{i}", "x", CONST), 0.5 + i / 10) for i in range(3)]
    chosen = rc.reserved_slots([*strong, relevant], rc.FRAMES["self"], 5)
    assert [s.block.block_id for s in chosen] == ["c_rel", "c2"]


def test_the_task_frame_still_reserves_every_goal() -> None:
    goals = ranked(*((f"g{i}", i / 10, ("self/goal",)) for i in range(4)), ("d", 0.99, ()))
    assert [s.block.block_id for s in rc.enforce_guarantees(goals, rc.FRAMES["task"], 4)] == ["g3", "g2", "g1", "g0"]


def test_a_frame_without_guarantees_is_plain_ranking() -> None:
    candidates = ranked(("a", 0.1, CONST), ("b", 0.9, ()), ("c", 0.5, ()))
    assert [s.block.block_id for s in rc.enforce_guarantees(candidates, rc.FRAMES["attention"], 2)] == ["b", "c"]


def test_the_attention_frame_renders_numbered_knowledge() -> None:
    spec = rc.FRAMES["attention"]
    text = rc.render(spec, [(view("a"), "first"), (view("b"), "second")])
    assert text == "## Relevant Knowledge\n[1] first\n[2] second"
    assert rc.render(spec, []) == "## Relevant Knowledge\n(nothing recalled)"


def test_filling_stops_at_the_first_block_that_does_not_fit() -> None:
    spec = rc.FRAMES["self"]  # 600 tokens ≈ 2400 characters
    items = [scored(view(f"b{i}", "y" * 900, CONST), 1 - i / 10) for i in range(4)]
    result = rc.recollect(items, spec, 4, texts_of)
    assert [s.scored.block.block_id for s in result.shown] == ["b0", "b1"]
    assert result.dropped == (("b2", "token_budget"), ("b3", "token_budget"))
    assert result.tokens == rc.estimate_tokens(result.text) <= 600


def expected_pool(items: Sequence[rc.Scored], spec: rc.FrameSpec, top_k: int) -> list[str]:
    """The pool as the seed's rule makes it (items in score order, no query): the reserved guaranteed blocks,
    then the best others, then more guaranteed blocks only if room is left."""
    guaranteed = [s for s in items if rc.is_guaranteed(s.block, spec)]
    bound = top_k if spec.max_guaranteed is None else min(spec.max_guaranteed, top_k)
    others = [s for s in items if not rc.is_guaranteed(s.block, spec)]
    order = [*guaranteed[:bound], *others, *guaranteed[bound:]]
    return [s.block.block_id for s in order[: top_k * rc.CANDIDATES_PER_SLOT]]


@given(
    sizes=st.lists(st.integers(min_value=1, max_value=12_000), min_size=0, max_size=30),
    top_k=st.integers(min_value=1, max_value=rc.MAX_TOP_K),
    frame=st.sampled_from(sorted(rc.FRAMES)),
    every=st.integers(min_value=1, max_value=4),
)
def test_a_recollection_never_exceeds_the_budget_and_accounts_for_every_candidate(
    sizes: list[int], top_k: int, frame: str, every: int
) -> None:
    spec = rc.FRAMES[frame]
    tags = ("self/goal",) if frame == "task" else CONST
    items = [
        scored(view(f"b{i:02}", "z" * n, tags if i % every == 0 else ("self/value",)), 1 - i / 100)
        for i, n in enumerate(sizes)
    ]
    result = rc.recollect(items, spec, top_k, texts_of)
    shown = [s.scored.block.block_id for s in result.shown]
    dropped = [b for b, _ in result.dropped]
    pool = expected_pool(items, spec, top_k)
    assert result.tokens <= spec.token_budget
    assert sorted(shown + dropped) == sorted(pool)  # the pool is accounted for block by block
    assert result.beyond_pool == len(items) - len(pool)  # the candidates below it only by count
    assert len(shown) <= top_k and (not items or shown)  # the best candidate is always shown, cut if need be
    assert all(s.truncated == (s.content != TEXTS[s.scored.block.block_id]) for s in result.shown)
    reserved = [s for s in result.shown if s.guaranteed]
    assert result.shown[: len(reserved)] == tuple(reserved)
    assert len(reserved) <= (spec.max_guaranteed or top_k)
    extra = [s for s in result.shown[len(reserved) :] if rc.is_guaranteed(s.scored.block, spec)]
    if extra:  # guaranteed beyond the reserved slots only once every other candidate of the pool is shown
        others = {b for b in pool if not rc.is_guaranteed(next(s.block for s in items if s.block.block_id == b), spec)}
        assert others <= set(shown)


def test_beyond_its_reserved_slots_the_constitution_fills_only_what_nothing_else_can() -> None:
    """Issue 23: three constitutional blocks among five, when the agent had values to show, broke the bound."""
    candidates = ranked(*((f"c{i}", 0.9 - i / 100, CONST) for i in range(6)), ("d1", 0.5, ("self/value",)))
    chosen = rc.enforce_guarantees(candidates, rc.FRAMES["self"], 5)
    assert [s.block.block_id for s in chosen] == ["c0", "c1", "d1", "c2", "c3"]
    values = ranked(*((f"d{i}", 0.5 - i / 100, ("self/value",)) for i in range(6)))
    chosen = rc.enforce_guarantees([*candidates[:6], *values], rc.FRAMES["self"], 5)
    assert [s.block.block_id for s in chosen] == ["c0", "c1", "d0", "d1", "d2"]


def test_the_pool_keeps_the_agents_values_that_rank_below_the_constitution() -> None:
    """Twenty constitutional blocks outscoring every value would fill a ``top_k × 4`` pool of 12 by rank alone."""
    constitution = [(f"c{i:02}", 0.9 - i / 1000, CONST) for i in range(20)]
    candidates = ranked(*constitution, ("d1", 0.1, ("self/value",)), ("d2", 0.05, ("self/value",)))
    pool = [s.block.block_id for s in rc.pool_of(candidates, rc.FRAMES["self"], 3)]
    result = rc.recollect(candidates, rc.FRAMES["self"], 3, texts_of)
    assert pool == [*(f"c{i:02}" for i in range(10)), "d1", "d2"]
    assert [s.scored.block.block_id for s in result.shown] == ["c00", "c01", "d1"]
    assert result.beyond_pool == 10


def test_edges_decay_at_half_the_slower_blocks_rate_and_settle_after_ten_co_retrievals() -> None:
    assert decay.edge_lambda(0.010, 0.001, 1) == pytest.approx(0.0005)
    assert decay.edge_lambda(0.010, 0.050, 10) == pytest.approx(0.0025)
    assert decay.edge_weight(0.005, 0) == 0.55
    assert decay.edge_weight(0.005, 400) == pytest.approx(0.55 * 0.1353352832, rel=1e-9)
    assert decay.degree_contribution(0.5, 0) == 0.5


def test_the_bridge_cutoff_is_the_80th_percentile_of_the_connected_blocks() -> None:
    assert decay.bridge_cutoff([0.0, 0.0]) is None
    assert decay.bridge_cutoff([1.0, 1.0, 1.0, 1.0, 4.0]) == 4.0
    assert decay.bridge_cutoff([0.0, *range(1, 11)]) == 9
    assert decay.bridge_cutoff([2.5]) == 2.5


@pytest.mark.parametrize("frame", ["", "SELF", None, 3])
def test_an_unknown_frame_names_the_known_ones(frame: object) -> None:
    with pytest.raises(Exception, match="not known") as err:
        rc.frame_spec(frame)  # type: ignore[arg-type]
    assert "self, attention, task" in getattr(err.value, "hint", "")
