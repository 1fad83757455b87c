"""Fusing full-text (BM25) and embedding (cosine) results into one ranking; pure.

``fused = cosine + LEXICAL_WEIGHT × lexical``, where ``lexical`` is a block's BM25 score over the best BM25 score
of the query's *strong* matches (blocks matching every word of the query that matters, the AND stage of
:mod:`projections.search.ranking`), and 0 for everything else. Weak matches (OR-only: some of the words) earn no
lexical credit: they compete on their cosine alone, like any block the embeddings found. That is what keeps them
out: plain reciprocal rank fusion gives the 5th weak match of a paraphrase query the same credit as the 5th
strong match of a keyword query, and those weak matches pushed the right answers out of the top 5 (measured in
``scripts/eval_retrieval.py``). A strong match, the keyword query's answer, keeps a lead proportional to how well
it matched. ``LEXICAL_WEIGHT`` was chosen on the odd-numbered queries of the labelled set only (docs/DESIGN_NOTES.md).

A hit must be relevant to count: one that is not a full-text match of every content word of the query (found by
its embedding alone, a weak OR match, a match of only the query's words the memory holds) is kept only when its
cosine with the query is at least a floor (:data:`MIN_SIMILARITY`, ``LEDGER_SEARCH_MIN_SIMILARITY``), so a query
sharing no word and no meaning with any block finds nothing instead of the ``limit`` least unrelated blocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from projections.search.ranking import Hit

LEXICAL_WEIGHT: Final = 0.3
"""How much the best strong full-text match is worth, in cosine units (cosines of related texts are 0.3–0.7)."""
MIN_SIMILARITY: Final = 0.28
"""The cosine a hit needs unless it matches every content word of the query; calibrated on
``scripts/eval_retrieval.py``'s correct answers against its nonsense queries (docs/DESIGN_NOTES.md)."""
NO_FLOOR: Final = -1.0
"""The floor that is off: every candidate counts, whatever its cosine (as before the floor)."""
SEMANTIC_CANDIDATES: Final = 50
"""How many nearest blocks by cosine join the full-text hits as candidates (at least the limit)."""


def relevant(hit: Hit, floor: float) -> bool:
    """Whether a hybrid hit counts as relevant at ``floor``: a match of every content word of the query, or a
    cosine at or above the floor (the test :func:`fuse` applies, for callers that rank without dropping)."""
    return floor <= NO_FLOOR or hit.all_words or (hit.cosine is not None and hit.cosine >= floor)


def lexical_strength(hits: Sequence[Hit]) -> dict[str, float]:
    """Each strong hit's score over the best strong score (0 to 1); weak hits are left out."""
    strong = [h for h in hits if h.strong and h.score > 0]
    if not strong:
        return {}
    best = max(h.score for h in strong)
    return {h.block_id: h.score / best for h in strong}


def fuse(
    lexical: Sequence[Hit],
    semantic: Sequence[Hit],
    cosine: Mapping[str, float],
    limit: int,
    weight: float = LEXICAL_WEIGHT,
    floor: float = NO_FLOOR,
) -> list[Hit]:
    """The best ``limit`` of the full-text hits and the nearest blocks, by fused score (ties by block id), less
    those below ``floor``: a candidate whose cosine is under it counts only as a full-text match of every content
    word of the query (``Hit.all_words``).

    ``semantic`` holds the nearest blocks (their text filled in); ``cosine`` the cosine of every candidate with the
    query (a candidate without one counts 0). Each hit returned carries ``bm25`` (its full-text score, or ``None``)
    and ``cosine``; ``score`` is the fused score.
    """
    strength = lexical_strength(lexical)
    candidates: dict[str, Hit] = {}
    for h in lexical:
        candidates[h.block_id] = replace(h, bm25=h.score)
    for h in semantic:
        candidates.setdefault(h.block_id, replace(h, strong=False, bm25=None))
    fused = []
    for block_id, h in candidates.items():
        cos = cosine.get(block_id, 0.0)
        if floor > NO_FLOOR and cos < floor and not h.all_words:
            continue
        score = cos + weight * strength.get(block_id, 0.0)
        fused.append(replace(h, score=score, cosine=cos))
    fused.sort(key=lambda h: (-h.score, h.block_id))
    return fused[:limit]
