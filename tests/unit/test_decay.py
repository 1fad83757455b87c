"""Decay tiers, recency, reinforcement, weights, scores and outcome updates: pure functions, plain asserts."""

from __future__ import annotations

import math

import pytest

from projections import decay
from projections.decay import (
    ATTENTION_WEIGHTS,
    LAMBDA,
    SELF_WEIGHTS,
    TASK_WEIGHTS,
    Tier,
    Weights,
    beta_update,
    half_life,
    penalised_rate,
    recency,
    reinforcement,
    score,
    tier_for,
)

# --- tiers ---------------------------------------------------------------------------------------------------


def test_each_tier_has_the_rate_of_the_issue() -> None:
    assert LAMBDA[Tier.PERMANENT] == 0.00001
    assert LAMBDA[Tier.DURABLE] == 0.001
    assert LAMBDA[Tier.STANDARD] == 0.010
    assert LAMBDA[Tier.EPHEMERAL] == 0.050


def test_constitutional_tag_assigns_permanent_tier() -> None:
    assert tier_for(["self/constitutional"]) is Tier.PERMANENT


def test_constitutional_wins_over_durable_and_ephemeral() -> None:
    assert tier_for(["self/value", "self/constitutional"], "observation") is Tier.PERMANENT


@pytest.mark.parametrize("tag", ["self/value", "self/constraint", "self/goal"])
def test_value_constraint_and_goal_tags_are_durable_even_for_an_observation(tag: str) -> None:
    assert tier_for([tag]) is Tier.DURABLE
    assert tier_for(["project/db", tag], "observation") is Tier.DURABLE


def test_an_observation_is_ephemeral() -> None:
    assert tier_for(["project/db"], "observation") is Tier.EPHEMERAL


def test_anything_else_is_standard() -> None:
    assert tier_for([]) is Tier.STANDARD
    assert tier_for(["self/context", "project/db"], "knowledge") is Tier.STANDARD


# --- recency and reinforcement -------------------------------------------------------------------------------


def test_recency_is_one_right_after_reinforcement() -> None:
    assert recency(LAMBDA[Tier.STANDARD], 0.0) == 1.0


def test_recency_is_the_exponential_of_minus_lambda_times_hours() -> None:
    assert recency(0.01, 100.0) == pytest.approx(math.exp(-1.0))
    assert recency(0.05, 20.0) == pytest.approx(0.36787944117144233)


def test_half_lives_are_69_point_3_standard_and_693_durable_active_hours() -> None:
    assert half_life(LAMBDA[Tier.STANDARD]) == pytest.approx(69.3, abs=0.05)
    assert half_life(LAMBDA[Tier.DURABLE]) == pytest.approx(693.1, abs=0.05)
    assert recency(LAMBDA[Tier.STANDARD], half_life(LAMBDA[Tier.STANDARD])) == pytest.approx(0.5)


def test_a_permanent_block_keeps_recency_above_090_after_10000_active_hours() -> None:
    assert recency(LAMBDA[Tier.PERMANENT], 10_000.0) > 0.90


def test_recency_refuses_negative_hours() -> None:
    with pytest.raises(ValueError):
        recency(0.01, -1.0)


def test_reinforcement_is_log_count_over_log_max_count() -> None:
    assert reinforcement(3, 15) == pytest.approx(math.log(4) / math.log(16))
    assert reinforcement(3, 15) == pytest.approx(0.5)
    assert reinforcement(7, 7) == 1.0
    assert reinforcement(0, 7) == 0.0


def test_reinforcement_is_zero_when_nothing_was_reinforced() -> None:
    assert reinforcement(0, 0) == 0.0


def test_reinforcement_refuses_a_count_above_the_maximum() -> None:
    with pytest.raises(ValueError):
        reinforcement(8, 7)


# --- weights and scores --------------------------------------------------------------------------------------


def test_the_presets_are_the_weights_of_the_issue() -> None:
    assert SELF_WEIGHTS.as_tuple() == (0.10, 0.30, 0.05, 0.25, 0.30)
    assert ATTENTION_WEIGHTS.as_tuple() == (0.35, 0.15, 0.25, 0.15, 0.10)
    assert TASK_WEIGHTS.as_tuple() == (0.20, 0.20, 0.20, 0.20, 0.20)


@pytest.mark.parametrize("weights", [SELF_WEIGHTS, ATTENTION_WEIGHTS, TASK_WEIGHTS])
def test_dropping_similarity_renormalises_the_rest_to_sum_one(weights: Weights) -> None:
    without = weights.without_similarity()
    assert without.similarity == 0.0
    assert math.fsum(without.as_tuple()) == pytest.approx(1.0)
    # The remaining weights keep their proportions.
    assert without.confidence / without.reinforcement == pytest.approx(weights.confidence / weights.reinforcement)


def test_task_weights_without_similarity_are_a_quarter_each() -> None:
    assert TASK_WEIGHTS.without_similarity().as_tuple() == pytest.approx((0.0, 0.25, 0.25, 0.25, 0.25))


def test_weights_must_sum_to_one() -> None:
    with pytest.raises(ValueError):
        Weights(similarity=0.5, confidence=0.5, recency=0.5, centrality=0.0, reinforcement=0.0)


def test_the_score_total_is_the_weighted_sum_of_the_components() -> None:
    breakdown = score(ATTENTION_WEIGHTS, similarity=1.0, confidence=0.5, recency=0.8, centrality=0.0, reinforcement=1.0)
    assert breakdown.total == pytest.approx(0.35 * 1.0 + 0.15 * 0.5 + 0.25 * 0.8 + 0.15 * 0.0 + 0.10 * 1.0)
    assert breakdown.total == pytest.approx(0.725)
    assert (breakdown.similarity, breakdown.confidence, breakdown.recency) == (1.0, 0.5, 0.8)
    assert (breakdown.centrality, breakdown.reinforcement) == (0.0, 1.0)
    assert breakdown.weights is ATTENTION_WEIGHTS


def test_a_block_perfect_in_every_component_scores_one() -> None:
    for weights in (SELF_WEIGHTS, ATTENTION_WEIGHTS, TASK_WEIGHTS, SELF_WEIGHTS.without_similarity()):
        assert score(weights, 1.0, 1.0, 1.0, 1.0, 1.0).total == pytest.approx(1.0)


def test_without_a_query_similarity_does_not_count() -> None:
    weights = SELF_WEIGHTS.without_similarity()
    assert score(weights, 1.0, 0.5, 0.5, 0.5, 0.5).total == pytest.approx(0.5)


def test_a_component_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError):
        score(TASK_WEIGHTS, 1.5, 0.0, 0.0, 0.0, 0.0)


# --- outcomes ------------------------------------------------------------------------------------------------


def test_a_first_success_moves_confidence_a_third_of_the_way_with_prior_strength_two() -> None:
    assert beta_update(0.5, 0, 1.0) == pytest.approx(2 / 3)
    assert beta_update(0.5, 0, 0.0) == pytest.approx(1 / 3)


def test_a_signal_equal_to_the_confidence_leaves_it_unchanged() -> None:
    assert beta_update(0.7, 4, 0.7) == pytest.approx(0.7)


def test_sequential_updates_equal_the_batch_posterior_mean() -> None:
    signals = [1.0, 0.0, 0.9, 0.25, 1.0]
    confidence = 0.5
    for n, s in enumerate(signals):
        confidence = beta_update(confidence, n, s)
    assert confidence == pytest.approx((2.0 * 0.5 + sum(signals)) / (2.0 + len(signals)))


def test_later_outcomes_move_confidence_less() -> None:
    assert beta_update(0.5, 10, 1.0) == pytest.approx((0.5 * 12 + 1.0) / 13)
    assert beta_update(0.5, 10, 1.0) - 0.5 < beta_update(0.5, 0, 1.0) - 0.5


def test_a_signal_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError):
        beta_update(0.5, 0, 1.2)
    with pytest.raises(ValueError):
        penalised_rate(0.01, -0.1)


def test_a_signal_below_020_doubles_the_decay_rate() -> None:
    assert penalised_rate(LAMBDA[Tier.STANDARD], 0.19) == pytest.approx(0.020)
    assert penalised_rate(LAMBDA[Tier.DURABLE], 0.0) == pytest.approx(0.002)


def test_a_signal_of_020_or_more_leaves_the_decay_rate() -> None:
    assert penalised_rate(LAMBDA[Tier.STANDARD], 0.20) == LAMBDA[Tier.STANDARD]
    assert penalised_rate(LAMBDA[Tier.STANDARD], 1.0) == LAMBDA[Tier.STANDARD]


def test_the_penalised_rate_is_capped_at_0050() -> None:
    assert penalised_rate(0.03, 0.1) == 0.050
    assert penalised_rate(LAMBDA[Tier.EPHEMERAL], 0.1) == 0.050
    rate = LAMBDA[Tier.STANDARD]
    for _ in range(10):
        rate = penalised_rate(rate, 0.0)
    assert rate == 0.050


def test_curate_constants_are_those_of_the_issue() -> None:
    assert decay.ARCHIVE_SCORE_THRESHOLD == 0.05
    assert decay.EDGE_PRUNE_THRESHOLD == 0.10
    assert decay.BRIDGE_PROTECTION_FRACTION == 0.20
    assert decay.CURATE_TOP_REINFORCED == 5
    assert decay.CURATE_INTERVAL_ACTIVE_HOURS == 40.0
    assert decay.PRIOR_STRENGTH == 2.0
