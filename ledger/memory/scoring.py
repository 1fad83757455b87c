"""Scoring every block at once (a queryless recall, curate, the block list): pure, over the memory graph.

``recall.score_blocks`` scores block views it is handed, each with its own walk of its edges; over every block of a
large ledger that builds tens of thousands of views and reads each neighbour's row again per edge. :class:`Ranking`
gives the same scores from the block table read column by column (``ColumnTable.gather``) and each edge's share of
weighted degree computed once, and builds views only for the blocks an answer shows. Its floats are those of
``score_blocks``: the same operations in the same order (degrees and the total summed exactly by ``math.fsum``,
whatever the order), checked against it on random graphs in ``tests/unit/test_scoring.py``.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Final

from projections import decay
from projections.active_hours import ActiveClock
from projections.memory import BlockView, MemoryGraph, Pair, pair, tags_match


@dataclass(frozen=True, slots=True)
class Scored:
    """A block with its score breakdown and the inputs behind it."""

    block: BlockView
    breakdown: decay.ScoreBreakdown
    active_hours_since: float
    degree: float


_FIELDS: Final = ("lam", "confidence", "reinforcements", "last_reinforced_at", "archived_at", "superseded_by")


class BlockColumns:
    """Every block's scoring inputs as parallel lists (row ``i`` is block ``ids[i]``), read from the graph's block
    table without building a view per block; ``tags`` and ``tier`` are read too when asked for."""

    def __init__(self, graph: MemoryGraph, *, tags: bool = False, tier: bool = False) -> None:
        extra = (("tags",) if tags else ()) + (("tier",) if tier else ())
        ids, columns = graph.blocks.gather(*_FIELDS, *extra)
        self.ids: list[str] = ids
        self.lam: Sequence[float] = columns[0]
        self.confidence: Sequence[float] = columns[1]
        self.reinforcements: Sequence[int] = columns[2]
        self.last_reinforced: Sequence[int] = columns[3]  # microseconds since the epoch
        self.archived: list[bool] = [a is not None for a in columns[4]]
        self.live: list[bool] = [a is None and s is None for a, s in zip(columns[4], columns[5], strict=True)]
        self.tags: list[tuple[str, ...]] = columns[6] if tags else []
        self.tier: list[Any] = columns[-1] if tier else []

    def __len__(self) -> int:
        return len(self.ids)

    def in_frame(self, tag_prefix: str | None) -> list[int]:
        """The rows of live blocks, with a tag under ``tag_prefix`` if given (``recall.in_frame``; read ``tags``)."""
        rows = [i for i, live in enumerate(self.live) if live]
        if tag_prefix is not None:
            tags = self.tags
            rows = [i for i in rows if tags_match(tags[i], tag_prefix)]
        return rows

    def lam_of(self, graph: MemoryGraph) -> dict[str, float]:
        """The decay rate of every block with a co-retrieval edge (what :func:`weighted_degrees` reads)."""
        linked = graph.adjacent
        return {b: lam for b, lam in zip(self.ids, self.lam, strict=True) if b in linked}


def weighted_degrees(
    graph: MemoryGraph, clock: ActiveClock, ids: Sequence[str], lam_of: dict[str, float]
) -> list[float]:
    """``recall.weighted_degree`` of each of ``ids``: each edge's share worked out once (it is the same for both
    its blocks), then summed per block exactly (``math.fsum``), as ``weighted_degree`` sums them."""
    share: dict[Pair, float] = {}
    edges, adjacent, hours = graph.edges, graph.adjacent, clock.hours_since
    out: list[float] = []
    for block_id in ids:
        parts: list[float] = []
        for other in adjacent.get(block_id, ()):
            key = pair(block_id, other)
            part = share.get(key)
            if part is None:
                edge = edges[key]
                lam = decay.edge_lambda(lam_of[key[0]], lam_of[key[1]], edge.count)
                weight = decay.edge_weight(lam, hours(edge.last_co_retrieved_at))
                part = share[key] = decay.degree_contribution(weight, edge.count)
            parts.append(part)
        out.append(math.fsum(parts))
    return out


class Ranking:
    """The query-less scores of the blocks in ``rows`` against each other (as ``recall.score_blocks`` gives them
    with no similarity), kept as floats; :meth:`best` builds the views and breakdowns of the best only."""

    def __init__(
        self,
        graph: MemoryGraph,
        clock: ActiveClock,
        weights: decay.Weights,
        columns: BlockColumns,
        rows: Sequence[int],
    ) -> None:
        self.graph, self.columns, self.rows = graph, columns, list(rows)
        self.weights = w = weights.without_similarity()
        ids = [columns.ids[i] for i in self.rows]
        self.degrees = weighted_degrees(graph, clock, ids, columns.lam_of(graph))
        self.top_degree = max(self.degrees, default=0.0)
        self.max_count = max((columns.reinforcements[i] for i in self.rows), default=0)
        since: Callable[[int], float] = clock.hours_since_micros()
        last = columns.last_reinforced
        self.since = array("d", [since(last[i]) for i in self.rows])
        self.totals = self._totals(w)

    def __len__(self) -> int:
        return len(self.rows)

    def _parts(self, j: int) -> tuple[float, float, float, float]:
        """Confidence, recency, centrality and reinforcement of the ``j``-th block, as ``score_blocks`` works them
        out (``decay.recency``, ``decay.normalised``, ``decay.reinforcement``)."""
        c, i = self.columns, self.rows[j]
        lam, since, count = c.lam[i], self.since[j], c.reinforcements[i]
        if lam < 0:
            decay.recency(lam, since)  # raises as score_blocks would
        recency = math.exp(-lam * since)
        top = self.top_degree
        centrality = self.degrees[j] / top if top > 0 else 0.0
        reinforcement = 0.0 if self.max_count == 0 else math.log1p(count) / math.log1p(self.max_count)
        return c.confidence[i], recency, centrality, reinforcement

    def _totals(self, weights: decay.Weights) -> array[float]:
        """Every block's total: :meth:`_parts` inlined (one loop, no call per block), combined as ``decay.score``
        combines them (the same products; ``fsum`` is exact whatever their order)."""
        c = self.columns
        lams, confidences, counts = c.lam, c.confidence, c.reinforcements
        w_sim, w_conf, w_rec, w_cent, w_reinf = weights.as_tuple()
        exp, log1p, fsum = math.exp, math.log1p, math.fsum
        top, max_count = self.top_degree, self.max_count
        log_max = log1p(max_count) if max_count else 0.0
        sim = w_sim * 0.0
        totals = array("d")
        for i, since, degree in zip(self.rows, self.since, self.degrees, strict=True):
            lam, confidence = lams[i], confidences[i]
            if lam < 0 or not 0.0 <= confidence <= 1.0:
                decay.score(weights, 0.0, confidence, decay.recency(lam, since), 0.0, 0.0)  # raises as it would
            centrality = degree / top if top > 0 else 0.0
            reinforcement = 0.0 if max_count == 0 else log1p(counts[i]) / log_max
            totals.append(
                fsum(
                    (sim, w_conf * confidence, w_rec * exp(-lam * since), w_cent * centrality, w_reinf * reinforcement)
                )
            )
        return totals

    def scored(self, j: int) -> Scored:
        """The ``j``-th block of ``rows`` with its view and breakdown."""
        confidence, recency, centrality, reinforcement = self._parts(j)
        block = self.graph.blocks[self.columns.ids[self.rows[j]]]
        breakdown = decay.score(
            self.weights,
            similarity=0.0,
            confidence=confidence,
            recency=recency,
            centrality=centrality,
            reinforcement=reinforcement,
        )
        return Scored(block, breakdown, self.since[j], self.degrees[j])

    def best(self, n: int, also: Collection[str] = ()) -> list[Scored]:
        """The ``n`` best, best first (ties by block id): ``score_blocks(...)[:n]``; with the blocks named in
        ``also`` among them wherever they rank (a frame's guaranteed blocks, which compete for their reserved slots
        however low they score)."""
        ids, rows, totals = self.columns.ids, self.rows, self.totals
        order = heapq.nsmallest(n, range(len(rows)), key=lambda j: (-totals[j], ids[rows[j]]))
        if also:
            chosen = set(order)
            order += [j for j, i in enumerate(rows) if ids[i] in also and j not in chosen]
            order.sort(key=lambda j: (-totals[j], ids[rows[j]]))
        return [self.scored(j) for j in order]
