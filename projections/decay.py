"""Decay, reinforcement and scoring of memory blocks: pure functions and constants, no I/O.

A block decays with *active hours* (see ``projections.active_hours``), never wall-clock time, at the rate λ of
its tier; recall reinforces it; an outcome signal updates its confidence and may speed its decay. This module
imports nothing but the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final


class Tier(StrEnum):
    """How fast a block fades: chosen from its tags and category by :func:`tier_for`."""

    PERMANENT = "permanent"
    DURABLE = "durable"
    STANDARD = "standard"
    EPHEMERAL = "ephemeral"


LAMBDA: Final[Mapping[Tier, float]] = MappingProxyType(
    {
        Tier.PERMANENT: 0.00001,  # half-life ≈ 69,315 active hours
        Tier.DURABLE: 0.001,  # ≈ 693 active hours
        Tier.STANDARD: 0.010,  # ≈ 69.3 active hours
        Tier.EPHEMERAL: 0.050,  # ≈ 13.9 active hours
    }
)
"""The decay rate λ (per active hour) of each tier."""

CONSTITUTIONAL_TAG: Final = "self/constitutional"
DURABLE_TAGS: Final = frozenset({"self/value", "self/constraint", "self/goal"})
EPHEMERAL_CATEGORY: Final = "observation"

INITIAL_CONFIDENCE: Final = 0.50
"""A new block's confidence before any outcome."""

# --- co-retrieval edges --------------------------------------------------------------------------------------
CO_RETRIEVAL_EDGE_WEIGHT: Final = 0.55
"""The weight of a co-retrieval edge when last reinforced; it then decays with active hours."""
EDGE_LAMBDA_FACTOR: Final = 0.5
"""An edge decays at this fraction of the slower-decaying of its two blocks' rates."""
EDGE_SETTLED_COUNT: Final = 10
"""An edge co-retrieved this many times decays half as fast again."""
EDGE_COUNT_BONUS: Final = 0.10
"""Each edge adds ``weight + 0.10 · log(1 + co-retrievals)`` to its blocks' weighted degree."""

# --- outcome -------------------------------------------------------------------------------------------------
PRIOR_STRENGTH: Final = 2.0
"""Pseudo-observations behind a block's initial confidence in the Beta update."""
PENALTY_SIGNAL_THRESHOLD: Final = 0.20
"""An outcome signal below this doubles the block's λ."""
LAMBDA_CAP: Final = 0.050
"""A penalised λ never exceeds this (the EPHEMERAL rate)."""

# --- curate --------------------------------------------------------------------------------------------------
ARCHIVE_SCORE_THRESHOLD: Final = 0.05
"""Curate archives blocks whose recency-weighted score is below this."""
EDGE_PRUNE_THRESHOLD: Final = 0.10
"""Curate prunes co-retrieval edges whose weight is below this."""
BRIDGE_PROTECTION_FRACTION: Final = 0.20
"""The top fraction of blocks by weighted degree that curate never archives (bridge protection)."""
CURATE_TOP_REINFORCED: Final = 5
"""Curate reinforces this many blocks with the best composite score."""
CURATE_INTERVAL_ACTIVE_HOURS: Final = 40.0
"""Curate runs automatically once per this many active hours."""


def tier_for(tags: Iterable[str], category: str | None = None) -> Tier:
    """The decay tier of a block: constitutional wins over durable, durable over ephemeral, else standard."""
    tag_set = set(tags)
    if CONSTITUTIONAL_TAG in tag_set:
        return Tier.PERMANENT
    if tag_set & DURABLE_TAGS:
        return Tier.DURABLE
    if category == EPHEMERAL_CATEGORY:
        return Tier.EPHEMERAL
    return Tier.STANDARD


def half_life(lam: float) -> float:
    """Active hours after which recency halves: ``ln 2 / λ``."""
    if lam <= 0:
        raise ValueError(f"decay rate {lam!r} must be positive")
    return math.log(2) / lam


def recency(lam: float, active_hours_since: float) -> float:
    """``exp(-λ · h)`` with ``h`` the active hours since the block was last reinforced."""
    if lam < 0:
        raise ValueError(f"decay rate {lam!r} must not be negative")
    if active_hours_since < 0:
        raise ValueError(f"active hours {active_hours_since!r} must not be negative")
    return math.exp(-lam * active_hours_since)


def reinforcement(count: int, max_count: int) -> float:
    """``log(1 + count) / log(1 + max_count)``: the block's reinforcement count against the most reinforced block's.

    0 when no block has been reinforced yet (``max_count == 0``).
    """
    if count < 0 or max_count < count:
        raise ValueError(f"reinforcement count {count!r} must be in [0, max_count={max_count!r}]")
    if max_count == 0:
        return 0.0
    return math.log1p(count) / math.log1p(max_count)


@dataclass(frozen=True, slots=True)
class Weights:
    """The weight of each score component; the weights are non-negative and sum to 1."""

    similarity: float
    confidence: float
    recency: float
    centrality: float
    reinforcement: float

    def __post_init__(self) -> None:
        values = self.as_tuple()
        if any(w < 0 for w in values):
            raise ValueError(f"weights must not be negative: {values}")
        if not math.isclose(math.fsum(values), 1.0, abs_tol=1e-9):
            raise ValueError(f"weights must sum to 1: {values}")

    def as_tuple(self) -> tuple[float, float, float, float, float]:
        """(similarity, confidence, recency, centrality, reinforcement)."""
        return (self.similarity, self.confidence, self.recency, self.centrality, self.reinforcement)

    def without_similarity(self) -> Weights:
        """The weights for a query-less recall: similarity dropped, the other four renormalised to sum to 1."""
        rest = math.fsum((self.confidence, self.recency, self.centrality, self.reinforcement))
        if rest == 0:
            raise ValueError("no weight is left once similarity is dropped")
        return Weights(
            similarity=0.0,
            confidence=self.confidence / rest,
            recency=self.recency / rest,
            centrality=self.centrality / rest,
            reinforcement=self.reinforcement / rest,
        )


SELF_WEIGHTS: Final = Weights(similarity=0.10, confidence=0.30, recency=0.05, centrality=0.25, reinforcement=0.30)
ATTENTION_WEIGHTS: Final = Weights(similarity=0.35, confidence=0.15, recency=0.25, centrality=0.15, reinforcement=0.10)
TASK_WEIGHTS: Final = Weights(similarity=0.20, confidence=0.20, recency=0.20, centrality=0.20, reinforcement=0.20)


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """A block's composite score with every component (each in [0, 1]) and the weights that combined them."""

    similarity: float
    confidence: float
    recency: float
    centrality: float
    reinforcement: float
    weights: Weights
    total: float


def score(
    weights: Weights,
    similarity: float,
    confidence: float,
    recency: float,
    centrality: float,
    reinforcement: float,
) -> ScoreBreakdown:
    """``w_sim·similarity + w_conf·confidence + w_rec·recency + w_cent·centrality + w_reinf·reinforcement``."""
    components = (similarity, confidence, recency, centrality, reinforcement)
    for name, value in zip(
        ("similarity", "confidence", "recency", "centrality", "reinforcement"), components, strict=True
    ):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} {value!r} must be in [0, 1]")
    total = math.fsum(w * c for w, c in zip(weights.as_tuple(), components, strict=True))
    return ScoreBreakdown(
        similarity=similarity,
        confidence=confidence,
        recency=recency,
        centrality=centrality,
        reinforcement=reinforcement,
        weights=weights,
        total=total,
    )


def beta_update(confidence: float, n_outcomes: int, signal: float, prior_strength: float = PRIOR_STRENGTH) -> float:
    """The block's confidence after one more outcome ``signal`` in [0, 1]: the mean of a Beta posterior.

    Confidence is the mean of Beta(α, β). The block's initial confidence ``c₀`` is a prior worth
    ``prior_strength`` (k) pseudo-observations, α₀ = k·c₀ and β₀ = k·(1 − c₀); each outcome is a fractional
    observation adding ``signal`` to α and ``1 − signal`` to β. After ``n`` outcomes the mean is therefore
    ``c_n = (k·c₀ + Σ signals) / (k + n)``, and one more outcome ``s`` gives the recursive form used here::

        c_{n+1} = (c_n · (k + n) + s) / (k + n + 1)

    ``n_outcomes`` is the number of outcomes already folded into ``confidence`` (0 for a fresh block); the
    caller counts this one. The seed gives no formula, only "a Beta update (prior strength 2.0)".
    """
    if not 0.0 <= confidence <= 1.0:
        raise ValueError(f"confidence {confidence!r} must be in [0, 1]")
    if not 0.0 <= signal <= 1.0:
        raise ValueError(f"signal {signal!r} must be in [0, 1]")
    if n_outcomes < 0:
        raise ValueError(f"outcome count {n_outcomes!r} must not be negative")
    if prior_strength <= 0:
        raise ValueError(f"prior strength {prior_strength!r} must be positive")
    weight = prior_strength + n_outcomes
    return (confidence * weight + signal) / (weight + 1)


def penalised_rate(lam: float, signal: float) -> float:
    """The block's λ after an outcome: doubled when ``signal`` is below 0.20, capped at λ = 0.050.

    A rate already above the cap is left as it is (the penalty never lowers a rate).
    """
    if not 0.0 <= signal <= 1.0:
        raise ValueError(f"signal {signal!r} must be in [0, 1]")
    if signal >= PENALTY_SIGNAL_THRESHOLD:
        return lam
    return max(lam, min(2 * lam, LAMBDA_CAP))


def edge_lambda(lam_a: float, lam_b: float, count: int) -> float:
    """An edge's decay rate: half the slower of its blocks' rates, halved again once it is settled."""
    lam = min(lam_a, lam_b) * EDGE_LAMBDA_FACTOR
    return lam * EDGE_LAMBDA_FACTOR if count >= EDGE_SETTLED_COUNT else lam


def edge_weight(lam: float, active_hours_since: float) -> float:
    """``0.55 · exp(-λ_edge · h)`` with ``h`` the active hours since the pair was last co-retrieved."""
    return CO_RETRIEVAL_EDGE_WEIGHT * recency(lam, active_hours_since)


def degree_contribution(weight: float, count: int) -> float:
    """What one edge adds to each of its blocks' weighted degree."""
    return weight + EDGE_COUNT_BONUS * math.log1p(count)


def normalised(values: Mapping[str, float]) -> dict[str, float]:
    """Each value divided by the largest (all 0 when the largest is 0): centrality from weighted degree."""
    top = max(values.values(), default=0.0)
    return {k: (v / top if top > 0 else 0.0) for k, v in values.items()}


def bridge_cutoff(degrees: Iterable[float]) -> float | None:
    """The weighted degree at or above which a block is a protected bridge: the top 20% of connected blocks.

    The cutoff is the 80th percentile of the non-zero degrees; ``None`` when no block has an edge.
    """
    nonzero = sorted(d for d in degrees if d > 0.0)
    if not nonzero:
        return None
    index = min(int(len(nonzero) * (1.0 - BRIDGE_PROTECTION_FRACTION)), len(nonzero) - 1)
    return nonzero[index]
