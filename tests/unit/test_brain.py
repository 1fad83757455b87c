"""Brain decisions (pure): which prompts become thoughts, the search words, limits, and the highway rule."""

from __future__ import annotations

import datetime as _dt
import itertools

import pytest

from ledger.brain import decisions as brain
from ledger.core import events as ev
from ledger.core.errors import InvalidInput
from ledger.core.limits import MAX_QUERY_CHARS
from ledger.memory.decisions import MAX_CONTENT_CHARS
from projections.brain import ThoughtTraffic, Traffic, evolve_traffic, is_highway

SEED_AC_B5 = (
    "Test contribution from MCP wrapper acceptance test — this is a declarative statement over fifty characters long."
)
_positions = itertools.count(1)


@pytest.mark.parametrize(
    ("prompt", "kind"),
    [
        (SEED_AC_B5, "statement"),
        ("Role separation keeps reviewers independent from the implementers of a change.", "statement"),
        ("Do not deploy on Fridays: the on-call rotation is thin and rollbacks take hours.", "statement"),
        ("When the store is unreachable, every gate of the ledger fails closed and says why.", "statement"),
        ("Whoever reviews a change must not be the agent that implemented it in the first place.", "statement"),
        ('"Isolation levels matter more than indexes for the race between two transitions."', "statement"),
        ("role separation", "too_short"),
        ("Role separation keeps reviewers independent.", "too_short"),
        ("What is the best way to keep reviewers independent from the implementers of a change", "question"),
        ("How do the workflow gates verify that a memory query really happened in the ledger", "question"),
        ("why does rework clear both memory fields of the task before the agent may claim it again", "question"),
        ("Is role separation enforced by the transition table or only by convention in this project", "question"),
        ("Does the brain count a duplicate thought as a new contribution when the workflow checks it", "question"),
        ("Which transitions require memory_query_session in the default workflow table of the ledger", "question"),
        ("The ledger refuses forged DNA, but does it also refuse a query from before the rework?", "question"),
        ("When should an agent query the brain, before or after it claims a task from the queue?", "question"),
        ("Based on what you said, the reviewer should never be the implementer of the same change.", "follow_up"),
        ("As you said earlier, role separation keeps reviewers independent from the implementers.", "follow_up"),
        ("Following up on the last answer: rework clears both memory fields before the next claim.", "follow_up"),
        ("Tell me everything the brain knows about role separation between reviewers and implementers.", "request"),
        ("Explain how the ledger proves that an agent queried memory before it claimed the task.", "request"),
    ],
)
def test_only_a_declarative_statement_over_50_characters_is_a_contribution(prompt: str, kind: str) -> None:
    classified = brain.classify(prompt)
    assert classified.kind == kind, classified.reason
    assert classified.is_contribution == (kind == "statement")


def test_the_threshold_is_more_than_50_characters() -> None:
    base = "Reviewers never implement what they review, ok then"  # 51 characters
    assert len(base) == 51 and brain.classify(base).is_contribution
    assert not brain.classify(base[:50]).is_contribution
    assert brain.classify("  " + base[:50] + "   ").kind == "too_short"  # surrounding whitespace does not count


def test_a_contribution_is_answered_with_the_seeds_texts() -> None:
    assert brain.contribution_message("stored") == "Thought stored successfully."
    assert (
        brain.contribution_message("not_stored")
        == "Not stored (too short or interrogative). Still retrieved related thoughts:"
    )
    # A duplicate was not stored by this call, but not for being short or a question: its own reason.
    assert brain.contribution_message("duplicate").startswith("Not stored (this thought is already in the brain).")


def test_the_search_words_leave_out_stop_words_and_add_the_context() -> None:
    assert brain.retrieval_query("What is role separation?") == "role separation"
    assert brain.retrieval_query("role separation", "the workflow table") == "role separation workflow table"
    assert brain.retrieval_query("Role role ROLE") == "role"
    assert brain.retrieval_query("Is it what it is?") == "is it what"  # only stop words: searched as sent


def test_the_search_words_stay_within_the_query_limit() -> None:
    prompt = " ".join(f"word{i}" for i in range(2000))
    query = brain.retrieval_query(prompt)
    assert len(query) <= MAX_QUERY_CHARS
    assert query.startswith("word0 word1 ") and not query.endswith(" ")


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("", "prompt is empty"),
        ("   \n", "prompt is empty"),
        ("x" * (MAX_CONTENT_CHARS + 1), f"the limit is {MAX_CONTENT_CHARS}"),
    ],
)
def test_a_bad_prompt_is_refused_with_what_to_send(prompt: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        brain.check_prompt(prompt)
    assert caught.value.hint


def test_a_prompt_without_words_cannot_be_searched() -> None:
    with pytest.raises(InvalidInput, match="no searchable words"):
        brain.retrieval_query("?!? — ...")


def test_an_over_long_context_is_refused() -> None:
    assert brain.check_context("  ") is None
    with pytest.raises(InvalidInput, match="context is"):
        brain.check_context("x" * (brain.MAX_CONTEXT_CHARS + 1))


def test_the_summary_says_what_was_found_and_stored() -> None:
    stored = brain.summary(
        retrieved=["A thought.", "Another thought."],
        highways=1,
        contribution="stored",
        thought_id="blk_1",
        reason="",
    )
    assert stored.startswith("Stored your thought blk_1. Found 2 related thoughts:")
    assert "1 of them is a highway" in stored
    duplicate = brain.summary(retrieved=[], highways=0, contribution="duplicate", thought_id="blk_2", reason="")
    assert duplicate == "This thought already exists as blk_2; nothing new was stored. Found no related thoughts."
    question = brain.summary(
        retrieved=["A thought."], highways=0, contribution="not_stored", thought_id=None, reason="it ends with '?'"
    )
    assert question.endswith("Not stored as a thought: it ends with '?'.")


# --- highways ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("retrievals", "agents", "highway"),
    [(3, 2, True), (7, 4, True), (2, 2, False), (3, 1, False), (10, 1, False), (0, 0, False)],
)
def test_a_highway_is_retrieved_3_times_by_2_agents(retrievals: int, agents: int, highway: bool) -> None:
    assert is_highway(retrievals, agents) is highway


def test_traffic_counts_retrievals_and_distinct_agents() -> None:
    t = None
    for agent in ["alice", "alice", "alice"]:
        t = evolve_traffic(t, agent)
    assert t == Traffic(3, frozenset({"alice"})) and not t.is_highway
    t = evolve_traffic(t, "bob")
    assert t.retrievals == 4 and t.agents == {"alice", "bob"} and t.is_highway
    assert evolve_traffic(None, None) == Traffic(1, frozenset())


def _rec(event: ev.DomainEvent, agent: str) -> ev.RecordedEvent:
    return ev.RecordedEvent(
        position=next(_positions),
        stream="s",
        version=1,
        recorded_at=_dt.datetime(2026, 3, 2, tzinfo=_dt.UTC),
        meta={"agent": agent},
        event=event,
        hash="0" * 64,
    )


def _searched(agent: str, *ids: str) -> ev.RecordedEvent:
    return _rec(ev.MemorySearched(session_id="ses_1", query="q", limit=10, result_ids=list(ids), count=len(ids)), agent)


def test_the_traffic_fold_finds_highways_from_search_events() -> None:
    traffic = ThoughtTraffic()
    for rec in [_searched("alice", "blk_a", "blk_b"), _searched("alice", "blk_a"), _searched("bob", "blk_a", "blk_b")]:
        traffic.apply(rec)
    assert traffic.highways() == ["blk_a"]
    assert traffic.of("blk_a") == Traffic(3, frozenset({"alice", "bob"}))
    assert traffic.of("blk_b").retrievals == 2 and not traffic.of("blk_b").is_highway
    assert traffic.of("blk_unknown") == Traffic()


def test_a_search_listing_a_thought_twice_counts_once() -> None:
    traffic = ThoughtTraffic()
    traffic.apply(_searched("alice", "blk_a", "blk_a"))
    assert traffic.of("blk_a").retrievals == 1
