"""Diversity for recall (issue 14): maximal marginal relevance over the candidates, and the block similarity it
uses; pure.

MMR picks, one slot at a time, the candidate that maximises ``λ·relevance − (1 − λ)·max similarity to the blocks
already chosen``, so a frame is not filled with five paraphrases of one idea (seed 002: MMR "prevents
monoculture"). Relevance is the candidate's composite score scaled to [0, 1] against the best candidate.

The similarity is behind :class:`Similarity` (two block ids → [0, 1]) so that sentence embeddings can replace it:
today it is :func:`word_overlap`, the Jaccard overlap of the blocks' content words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Protocol, TypeVar

MMR_LAMBDA: Final = 0.7
"""Weight of relevance against redundancy. Seed 002 names MMR but no λ; 0.7 is the value commonly used for
retrieval (Carbonell & Goldstein): relevance leads, and a near-copy of a chosen block (overlap near 1) loses
about 0.3 of score, enough to let a distinct block scoring a little lower take the slot."""

_WORD: Final = re.compile(r"\w{3,}")  # shorter words ("a", "is", "of", "I") are mostly function words


class Similarity(Protocol):
    """How alike two candidate blocks are, from 0 (unrelated) to 1 (the same), by block id."""

    def __call__(self, a: str, b: str, /) -> float: ...


SimilarityFactory = Callable[[Mapping[str, str]], Similarity]
"""Builds a :class:`Similarity` from the candidates' texts by block id (an embedding-based one may ignore them)."""


def content_words(text: str) -> frozenset[str]:
    """Case-folded words of at least three word characters (letters, digits, ``_``)."""
    return frozenset(_WORD.findall(text.casefold()))


def word_overlap(texts: Mapping[str, str]) -> Similarity:
    """Jaccard overlap of the content words of two blocks' texts (a stand-in until embeddings are available)."""
    words = {block_id: content_words(text) for block_id, text in texts.items()}

    def similarity(a: str, b: str, /) -> float:
        wa, wb = words.get(a, frozenset()), words.get(b, frozenset())
        shared = len(wa & wb)
        union = len(wa) + len(wb) - shared
        return shared / union if union else 0.0

    return similarity


T = TypeVar("T")


def mmr(
    candidates: Sequence[T],
    relevance: Callable[[T], float],
    key: Callable[[T], str],
    similarity: Similarity,
    k: int,
    *,
    chosen: Sequence[T] = (),
    lam: float = MMR_LAMBDA,
) -> list[T]:
    """Pick up to ``k`` of ``candidates`` by maximal marginal relevance, given blocks ``chosen`` already.

    ``relevance`` is scaled to [0, 1] against the best candidate; ties go to the earlier candidate, so with
    ``lam = 1`` (or no overlap at all) the result is the top ``k`` in the given order.
    """
    best = max((relevance(c) for c in candidates), default=0.0)
    scale = best if best > 0 else 1.0
    pool = list(candidates)
    keys = [key(c) for c in pool]
    gain = [lam * relevance(c) / scale for c in pool]
    # The largest similarity of each candidate to anything chosen so far, updated as blocks are chosen.
    redundancy = [max((similarity(k, key(t)) for t in chosen), default=0.0) for k in keys]
    picked: list[T] = []
    left = list(range(len(pool)))
    while left and len(picked) < k:
        i = max(left, key=lambda j: (gain[j] - (1 - lam) * redundancy[j], -j))
        left.remove(i)
        picked.append(pool[i])
        for j in left:
            redundancy[j] = max(redundancy[j], similarity(keys[j], keys[i]))
    return picked
