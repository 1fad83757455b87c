"""Fusion of full-text and embedding results: strong matches keep a lead, weak (OR-only) matches earn nothing."""

from __future__ import annotations

import pytest

from projections.search import Hit, fusion


def hit(block_id: str, score: float, strong: bool = True) -> Hit:
    return Hit(block_id, f"text {block_id}", [], score, strong=strong)


def test_a_strong_full_text_match_leads_by_its_relative_bm25() -> None:
    lexical = [hit("a", 8.0), hit("b", 4.0)]
    cosine = {"a": 0.30, "b": 0.30, "c": 0.40}
    ranked = fusion.fuse(lexical, [hit("c", 0.40, strong=False)], cosine, 3)
    assert [h.block_id for h in ranked] == ["a", "b", "c"]
    assert [h.score for h in ranked] == pytest.approx([0.30 + 0.3 * 1.0, 0.30 + 0.3 * 0.5, 0.40])
    assert [(h.bm25, h.cosine) for h in ranked] == [(8.0, 0.30), (4.0, 0.30), (None, 0.40)]


def test_weak_matches_compete_on_cosine_alone_so_they_cannot_push_out_the_meaningful_answers() -> None:
    """A paraphrase query: full text only OR-matched common words; the embeddings found the answers."""
    lexical = [hit("noise1", 9.0, strong=False), hit("noise2", 8.0, strong=False)]
    cosine = {"noise1": 0.10, "noise2": 0.12, "answer": 0.55, "close": 0.41}
    semantic = [hit("answer", 0.55, strong=False), hit("close", 0.41, strong=False)]
    ranked = fusion.fuse(lexical, semantic, cosine, 2)
    assert [h.block_id for h in ranked] == ["answer", "close"]


def test_only_the_limit_is_returned_and_ties_break_by_block_id() -> None:
    cosine = {"b": 0.5, "a": 0.5, "c": 0.1}
    ranked = fusion.fuse([], [hit(k, v, strong=False) for k, v in cosine.items()], cosine, 2)
    assert [h.block_id for h in ranked] == ["a", "b"]


def test_a_candidate_without_a_vector_counts_zero_cosine() -> None:
    ranked = fusion.fuse([hit("a", 2.0)], [], {}, 5)
    assert ranked[0].cosine == 0.0 and ranked[0].score == pytest.approx(fusion.LEXICAL_WEIGHT)


def test_lexical_strength_ignores_weak_and_non_positive_scores() -> None:
    assert fusion.lexical_strength([hit("a", 2.0), hit("b", 1.0), hit("w", 5.0, strong=False)]) == {"a": 1.0, "b": 0.5}
    assert fusion.lexical_strength([hit("w", 5.0, strong=False)]) == {}


def test_the_floor_drops_what_only_meaning_or_some_words_found_under_it_and_keeps_a_match_of_every_word() -> None:
    """Issue 23: below the floor only a full-text match of every content word of the query counts."""
    every = Hit("every", "text every", [], 2.0, all_words=True)
    lexical = [every, hit("some", 1.0), hit("weak", 3.0, strong=False)]
    cosine = {"every": 0.05, "some": 0.10, "weak": 0.50, "near": 0.45, "far": 0.20}
    semantic = [hit("weak", 0.50, strong=False), hit("near", 0.45, strong=False), hit("far", 0.20, strong=False)]
    floored = fusion.fuse(lexical, semantic, cosine, 10, floor=0.30)
    assert [h.block_id for h in floored] == ["weak", "near", "every"]  # "some" matched some words, "far" no word
    assert {h.block_id for h in fusion.fuse(lexical, semantic, cosine, 10)} == set(cosine)  # no floor: all of them
    assert [h.block_id for h in fusion.fuse(lexical, semantic, cosine, 10, floor=0.46)] == ["weak", "every"]


def test_a_hit_under_the_floor_takes_no_slot_of_the_limit() -> None:
    cosine = {"a": 0.9, "b": 0.1, "c": 0.5}
    ranked = fusion.fuse([hit("b", 9.0)], [hit(k, v, strong=False) for k, v in cosine.items()], cosine, 2, floor=0.3)
    assert [h.block_id for h in ranked] == ["a", "c"]  # "b" led by its words (strong, not every word) but is out


def test_nothing_passes_for_a_query_unlike_every_block_and_the_off_floor_keeps_everything() -> None:
    cosine = {"a": 0.16, "b": 0.02, "c": -0.03}
    semantic = [hit(k, v, strong=False) for k, v in cosine.items()]
    assert fusion.fuse([], semantic, cosine, 10, floor=fusion.MIN_SIMILARITY) == []
    assert len(fusion.fuse([], semantic, cosine, 10, floor=fusion.NO_FLOOR)) == 3
    assert fusion.fuse([], [hit("x", 0, strong=False)], {"x": -1.0}, 10, floor=fusion.NO_FLOOR)[0].cosine == -1.0
