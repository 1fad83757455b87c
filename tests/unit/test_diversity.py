"""Diversity for recall: maximal marginal relevance and the word-overlap similarity behind its interface."""

from __future__ import annotations

import pytest

from ledger.memory import diversity
from ledger.memory import recall as rc
from tests.unit.test_recall import ranked, texts_of

TEXTS = {
    "a": "Cache the session in Redis and evict after an hour.",
    "b": "Cache the session in Redis, and evict after an hour!",
    "c": "Billing exports run nightly as CSV files.",
}


def test_word_overlap_is_jaccard_over_content_words() -> None:
    sim = diversity.word_overlap(TEXTS)
    assert sim("a", "b") == pytest.approx(1.0)  # same content words, different punctuation and short words
    assert sim("a", "c") == 0.0
    assert sim("a", "unknown") == 0.0
    assert diversity.content_words("I am an Elf, it is 2026") == {"elf", "2026"}


def test_mmr_skips_a_near_copy_of_a_chosen_block_for_a_distinct_one() -> None:
    scores = {"a": 1.0, "b": 0.95, "c": 0.8}
    sim = diversity.word_overlap(TEXTS)
    picked = diversity.mmr(list(scores), scores.__getitem__, str, sim, 2)
    assert picked == ["a", "c"]


def test_mmr_with_lambda_one_or_no_overlap_is_plain_ranking() -> None:
    scores = {"a": 1.0, "b": 0.95, "c": 0.8}
    sim = diversity.word_overlap(TEXTS)
    assert diversity.mmr(list(scores), scores.__getitem__, str, sim, 2, lam=1.0) == ["a", "b"]
    assert diversity.mmr(list(scores), scores.__getitem__, str, lambda a, b: 0.0, 3) == ["a", "b", "c"]


def test_mmr_counts_blocks_already_chosen_as_redundancy() -> None:
    scores = {"b": 1.0, "c": 0.8}
    sim = diversity.word_overlap(TEXTS)
    assert diversity.mmr(list(scores), scores.__getitem__, str, sim, 1, chosen=["a"]) == ["c"]


def test_recall_fills_the_competing_slots_by_mmr_and_lists_them_best_first() -> None:
    candidates = ranked(("d1", 0.9, ("self/value",)), ("d2", 0.88, ("self/value",)), ("d3", 0.7, ("self/value",)))
    from tests.unit.test_recall import TEXTS as SHARED

    SHARED.update({"d1": TEXTS["a"], "d2": TEXTS["b"], "d3": TEXTS["c"]})
    result = rc.recollect(candidates, rc.FRAMES["attention"], 2, texts_of)
    assert [s.scored.block.block_id for s in result.shown] == ["d1", "d3"]
    assert result.dropped == (("d2", "top_k"),)
    plain = rc.recollect(candidates, rc.FRAMES["attention"], 2, texts_of, lambda texts: lambda a, b: 0.0)
    assert [s.scored.block.block_id for s in plain.shown] == ["d1", "d2"]
