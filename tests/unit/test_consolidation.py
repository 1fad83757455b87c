"""Consolidation decisions (pure): link a near-duplicate, flag a negation, store the rest."""

from __future__ import annotations

import pytest

from ledger.memory.consolidation import Neighbour, Verdict, decide, negated, numbers, overlap


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Always run the migrations before deploying.", False),
        ("Never run the migrations before deploying.", True),
        ("Don't use tabs in Makefiles.", True),
        ("Don’t use tabs in Makefiles.", True),  # a typographic apostrophe
        ("Avoid reversible moves when knowledge is thin.", True),
        ("It is not true that we never deploy on Fridays.", False),  # two negations
        ("Nothing in the cache is stale.", True),
    ],
)
def test_negation_is_read_from_the_words(text: str, expected: bool) -> None:
    assert negated(text) is expected


def test_overlap_leaves_out_negations_and_stop_words() -> None:
    assert overlap("Always run the migrations before deploying.", "Never run the migrations before deploying.") == 1.0
    assert (
        overlap("Prefer reversible moves when knowledge is thin.", "Avoid reversible moves when knowledge is thin.")
        == 0.8
    )
    assert overlap("Deploys run on Fridays.", "Cache keys expire hourly.") == 0.0


def test_a_restatement_above_the_threshold_is_linked() -> None:
    near = [Neighbour("blk_a", "The staging server restarts every night at 2am.", 0.91)]
    assert decide("The staging server reboots nightly at 2am.", near, "cosine") == Verdict("link", "blk_a", 0.91)


def test_a_close_text_below_the_threshold_is_stored() -> None:
    near = [Neighbour("blk_a", "Cache invalidation happens on every write.", 0.78)]
    assert decide("Cache invalidation happens on every write to orders.", near, "cosine").action == "store"


def test_texts_that_differ_in_a_number_are_different_facts() -> None:
    near = [Neighbour("blk_a", "The API listens on port 8080.", 0.98)]
    assert numbers("The API listens on port 8081.") == {"8081"}
    assert decide("The API listens on port 8081.", near, "cosine").action == "store"


def test_a_negation_of_a_near_duplicate_is_flagged_not_linked() -> None:
    near = [Neighbour("blk_a", "Always run the migrations before deploying.", 0.89)]
    assert decide("Never run the migrations before deploying.", near, "cosine") == Verdict("flag", "blk_a", 0.89)


def test_a_negation_about_something_else_is_not_a_contradiction() -> None:
    near = [Neighbour("blk_a", "Always run the migrations before deploying.", 0.83)]
    assert decide("Never deploy on Fridays without a rollback plan.", near, "cosine").action == "store"


def test_a_negation_far_in_meaning_is_not_a_contradiction() -> None:
    near = [Neighbour("blk_a", "Run the migrations before deploying.", 0.5)]
    assert decide("Never run the migrations before deploying.", near, "cosine").action == "store"


def test_the_word_fallback_links_only_near_identical_wording_and_flags_negations() -> None:
    same = [Neighbour("blk_a", "Run the database migrations before deploying", 1.0)]
    assert decide("Run the database migrations before deploying!", same, "words").action == "link"
    assert decide("Never run the database migrations before deploying", same, "words").action == "flag"
    partial = [Neighbour("blk_a", "Run the database migrations before deploying", 0.5)]
    assert decide("Run the migrations after the release", partial, "words").action == "store"
