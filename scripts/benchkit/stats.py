"""Statistics over timing samples: median, nearest-rank percentiles, and a series of samples with its p50/p99."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0..100) of ``values``."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def quantile_exclusive(values: Sequence[float], pct: int) -> float:
    """The ``pct``-th percentile by ``statistics.quantiles`` (its default, exclusive interpolation)."""
    return statistics.quantiles(values, n=100)[pct - 1]


@dataclass
class Series:
    """Samples of one measurement (any unit) with the summaries the reports print."""

    samples: list[float] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return median(self.samples)

    @property
    def p99(self) -> float:
        return percentile(self.samples, 99)

    @property
    def mean(self) -> float:
        return sum(self.samples) / len(self.samples)
