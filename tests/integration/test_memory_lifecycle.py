"""The memory lifecycle of seed 002 on a real ledger: tiers, decay by active hours, frames and guarantees,
recall reinforcement, curate, outcomes, and replay agreeing with the live system.

Time only moves through freezegun; active hours accrue only while a session is clocked in. The lifecycle is the
memory handlers' and folds': its ledgers are on the in-memory store (``MEMORY``), except where a second process
opens the same database or the search index's SQL is the subject (``db_url``: SQLite and PostgreSQL).
"""

from __future__ import annotations

import datetime as _dt
import math

import pytest
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory, StepTickTimeFactory

from ledger.core.errors import InvalidInput, NotFound
from ledger.core.events import MemoryCurated, MemoryRecalled
from ledger.memory.constitution import CONSTITUTION
from ledger.memory.report import BlockOut
from ledger.service import Actor, Ledger
from projections.decay import LAMBDA, Tier
from projections.search import index as search_index
from tests.conftest import MEMORY, LedgerFactory

T0 = _dt.datetime(2026, 6, 1, 8, 0, tzinfo=_dt.UTC)
ELF = Actor("elf", "mcp")
OPERATOR = Actor("operator", "cli", admin=True)
Clock = FrozenDateTimeFactory | StepTickTimeFactory


def work(ledger: Ledger, clock: Clock, hours: float) -> None:
    """One session of ``hours`` active hours: clock in, let time pass, clock out."""
    sid = ledger.clock_in(ELF, "dev").session_id
    clock.tick(_dt.timedelta(hours=hours))
    ledger.clock_out(ELF, sid)


def block(ledger: Ledger, block_id: str) -> BlockOut:
    return ledger.memory_block(block_id).block


def constitutional_ids(ledger: Ledger) -> set[str]:
    return {b.block_id for b in ledger.memory_blocks(tier="permanent", archived=None).blocks}


# --- tiers ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "category", "tier"),
    [
        (["self/constitutional", "self/value"], None, Tier.PERMANENT),
        (["self/value"], None, Tier.DURABLE),
        (["self/constraint"], "observation", Tier.DURABLE),
        (["self/goal"], None, Tier.DURABLE),
        (["project/ci"], "observation", Tier.EPHEMERAL),
        (["project/db"], None, Tier.STANDARD),
        ([], "decision", Tier.STANDARD),
    ],
)
def test_a_blocks_tier_and_decay_rate_follow_from_its_tags_and_category(
    make_ledger: LedgerFactory, tags: list[str], category: str | None, tier: Tier
) -> None:
    ledger = make_ledger(MEMORY)
    who = OPERATOR if "self/constitutional" in tags else ELF  # only a person adds to the constitution
    block_id = ledger.remember(who, "Migrations run before the deploy.", tags, category=category).block_id
    got = block(ledger, block_id)
    assert (got.tier, got.decay_rate, got.category) == (tier.value, LAMBDA[tier], category or "knowledge")


def test_step6_constitutional_tag_assigns_permanent_tier(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    ledger.setup_memory(ELF)
    tiers = {b.tier for b in ledger.memory_blocks(tag="self/constitutional").blocks}
    assert tiers == {"permanent"}


def test_step6_seed_creates_10_constitutional_blocks(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    result = ledger.setup_memory(ELF)
    listed = ledger.memory_blocks(tag="self/constitutional").blocks
    assert len(result.created) == 10 == result.constitutional_blocks == len(listed)
    assert {b.content for b in listed} == {c.content for c in CONSTITUTION}
    assert all(b.tags[0] == "self/constitutional" and len(b.tags) == 2 for b in listed)


def test_step6_init_seeds_constitutional_idempotent(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    ledger.setup_memory(ELF)
    again = ledger.setup_memory(ELF)
    assert again.created == [] and len(again.already_present) == 10
    assert ledger.memory_stats().constitutional == 10 == ledger.memory_stats().blocks


# --- decay by active hours --------------------------------------------------------------------------------------


def test_half_lives_are_693_and_69_3_active_hours_and_the_constitution_survives_10000(
    make_ledger: LedgerFactory,
) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(MEMORY)
        standard = ledger.remember(ELF, "The CI cache lives in S3.", ["project/ci"]).block_id
        durable = ledger.remember(ELF, "Prefer small reversible changes.", ["self/value"]).block_id
        permanent = ledger.remember(OPERATOR, "I keep my word.", ["self/constitutional"]).block_id
        work(ledger, clock, math.log(2) / 0.010)  # ≈ 69.31 active hours
        at_standard_half_life = {b: block(ledger, b).score.recency for b in (standard, durable, permanent)}
        work(ledger, clock, math.log(2) / 0.001 - math.log(2) / 0.010)  # up to ≈ 693.1 active hours
        at_durable_half_life = block(ledger, durable).score.recency
        work(ledger, clock, 10_000 - math.log(2) / 0.001)  # up to 10,000 active hours
        after_10000 = block(ledger, permanent)
    assert at_standard_half_life[standard] == pytest.approx(0.5, abs=1e-4)
    assert at_standard_half_life[durable] == pytest.approx(math.exp(-0.001 * 69.3147), abs=1e-4)
    assert at_durable_half_life == pytest.approx(0.5, abs=1e-4)
    assert after_10000.score.active_hours_since_reinforced == pytest.approx(10_000, abs=1e-3)
    assert after_10000.score.recency > 0.90  # exp(-0.1) ≈ 0.905


def test_step6_constitutional_survives_long_decay(make_ledger: LedgerFactory) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(MEMORY)
        ledger.setup_memory(ELF)
        work(ledger, clock, 10_000)
        recencies = [b.score.recency for b in ledger.memory_blocks(tag="self/constitutional").blocks]
    assert len(recencies) == 10 and min(recencies) > 0.90


def test_a_week_of_idle_wall_clock_time_between_sessions_changes_no_score(make_ledger: LedgerFactory) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(MEMORY)
        ledger.setup_memory(ELF)
        a = ledger.remember(ELF, "Staging resets every Monday.", ["project/env"]).block_id
        ledger.remember(ELF, "Saw a flaky test in the payments suite.", ["project/ci"], category="observation")
        sid = ledger.clock_in(ELF, "dev").session_id
        ledger.recall(ELF, "staging payments", session_id=sid)
        clock.tick(_dt.timedelta(hours=5))
        ledger.clock_out(ELF, sid)
        before = ledger.memory_blocks(archived=None)
        clock.tick(_dt.timedelta(days=7))
        after = ledger.memory_blocks(archived=None)
    assert before.active_hours == after.active_hours == pytest.approx(5.0)
    assert [b.score for b in before.blocks] == [b.score for b in after.blocks]
    assert block(ledger, a).score.recency == pytest.approx(math.exp(-0.010 * 5.0))


# --- frames and guarantees ---------------------------------------------------------------------------------------

DOMAIN_VALUES = [
    "Form a hypothesis about the slow query, then run the smallest experiment: evidence beats hunches.",
    "Every experiment gets a written hypothesis and the evidence that would refute it.",
    "Hypothesis first, experiment second, evidence decides; profile before optimising.",
    "Keep an evidence log of each experiment and hypothesis while debugging.",
    "A hypothesis without an experiment is a guess; collect evidence from production traces.",
    "Run the experiment on a copy of the data and record the evidence for the hypothesis.",
]


def test_step6_constitutional_blocks_guaranteed_in_self_frame_even_when_they_score_lower(
    make_ledger: LedgerFactory,
) -> None:
    """Seed 002 "Guarantee Enforcement" and Step 6 tests 2 and 6: constitutional candidates take their slots
    first although domain values outscore them; the domain values fill the remaining slots by score."""
    ledger = make_ledger(MEMORY)
    ledger.setup_memory(ELF)
    values = [ledger.remember(ELF, text, ["self/value", "project/perf"]).block_id for text in DOMAIN_VALUES]
    ledger.outcome(ELF, values, 1.0)  # the domain values proved useful: higher confidence than the constitution
    result = ledger.recall(ELF, "hypothesis experiment evidence", frame="self", top_k=5)
    constitution = constitutional_ids(ledger)
    guaranteed = [b for b in result.blocks if b.block_id in constitution]
    competing = [b for b in result.blocks if b.block_id not in constitution]
    left_out = [d.block_id for d in result.dropped]

    assert len(result.blocks) == 5
    assert guaranteed and all(b.guaranteed for b in guaranteed) and not any(b.guaranteed for b in competing)
    assert result.blocks[: len(guaranteed)] == guaranteed  # guaranteed slots come first
    # The constitutional candidates score lower than every domain value shown, yet they are in.
    assert max(b.score.total for b in guaranteed) < min(b.score.total for b in competing)
    # Domain values fill exactly the remaining slots, best first, and the ones left out scored lower.
    assert len(competing) == 5 - len(guaranteed)
    assert [b.score.total for b in competing] == sorted((b.score.total for b in competing), reverse=True)
    # Left out: the domain values that lost, and (hybrid search makes every self/ block a candidate by meaning)
    # constitutional blocks beyond the two reserved slots, which only fill slots no other candidate can.
    assert set(left_out) <= set(values) | set(constitution)
    lost = [d for d in left_out if d in values]
    assert len(lost) == len(values) - len(competing)
    dropped_scores = [block(ledger, d).score for d in lost]
    assert all(d.confidence == competing[-1].score.confidence for d in dropped_scores)
    [event] = [r.event for r in ledger.store.iter_events(types=["MemoryRecalled"])]
    assert isinstance(event, MemoryRecalled)
    assert event.guaranteed_ids == [b.block_id for b in guaranteed]
    assert event.block_ids == [b.block_id for b in result.blocks]


def test_step6_domain_values_compete_for_non_guaranteed_slots_without_a_query(make_ledger: LedgerFactory) -> None:
    """Seed 002 edge case 1 and Step 6 test 6: a queryless SELF recall with ``top_k=5`` reserves at most two slots
    for constitutional blocks; the domain values take the other slots (the other constitutional blocks only fill
    slots nothing else can, issue 23). The similarity weight is dropped."""
    ledger = make_ledger(MEMORY)
    ledger.setup_memory(ELF)
    values = [ledger.remember(ELF, text, ["self/value"]).block_id for text in DOMAIN_VALUES[:4]]
    ledger.remember(ELF, "Domain knowledge outside the self frame.", ["project/x"])
    for _ in range(3):  # used together: reinforced and linked by co-retrieval edges
        ledger.recall(ELF, "hypothesis experiment evidence", frame="attention", top_k=4)
    result = ledger.recall(ELF, frame="self", top_k=5)
    constitution = constitutional_ids(ledger)
    guaranteed = [b for b in result.blocks if b.guaranteed]
    domain = [b.block_id for b in result.blocks if b.block_id in values]

    assert len(result.blocks) == 5
    assert 1 <= len(guaranteed) <= 2 and {b.block_id for b in guaranteed} <= constitution
    assert result.blocks[: len(guaranteed)] == guaranteed  # reserved slots come first
    assert len(domain) == 5 - len(guaranteed) == 3  # the rest of the constitution waits: there are values to show
    assert all(b.score.weights["similarity"] == 0.0 for b in result.blocks)
    assert result.text.startswith("## Identity\n- ")
    assert result.tokens <= result.token_budget == 600


def test_with_top_k_above_the_values_the_constitution_fills_the_slots_left_after_its_two_reserved(
    make_ledger: LedgerFactory,
) -> None:
    ledger = make_ledger(MEMORY)
    ledger.setup_memory(ELF)
    values = {ledger.remember(ELF, text, ["self/value"]).block_id for text in DOMAIN_VALUES[:4]}
    result = ledger.recall(ELF, frame="self", top_k=12)
    ids = {b.block_id for b in result.blocks}
    assert ids <= constitutional_ids(ledger) | values and len(ids) == 12  # 14 candidates for 12 slots
    assert sum(b.guaranteed for b in result.blocks) == 2
    assert values <= ids and [b.block_id in values for b in result.blocks] == [False] * 2 + [True] * 4 + [False] * 6
    assert len(result.blocks) + len(result.dropped) == 14


def test_the_self_frame_holds_only_self_blocks_and_the_budget_trims_the_text(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    ledger.setup_memory(ELF)
    ledger.remember(ELF, "evidence " * 200, ["project/notes"])  # not a self block: never in the self frame
    long_value = ledger.remember(ELF, "Evidence matters. " + "x" * 3000, ["self/value"]).block_id
    result = ledger.recall(ELF, "evidence", frame="self", top_k=10)
    assert all(any(t.startswith("self/") for t in b.tags) for b in result.blocks)
    assert result.tokens <= 600
    assert long_value not in [b.block_id for b in result.blocks]
    assert (long_value, "token_budget") in [(d.block_id, d.reason) for d in result.dropped]


def test_a_single_block_larger_than_the_budget_is_cut_to_fit(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    huge = ledger.remember(ELF, "checkpoint " * 900, ["project/notes"]).block_id
    result = ledger.recall(ELF, "checkpoint", frame="task", top_k=3)
    assert [b.block_id for b in result.blocks] == [huge]
    assert result.blocks[0].truncated and result.text.endswith("[…]")
    assert result.tokens <= result.token_budget == 800


def test_the_task_frame_guarantees_goals_and_renders_them_apart(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    goal = ledger.remember(ELF, "Ship the billing export this sprint.", ["self/goal"]).block_id
    for i in range(6):
        ledger.remember(ELF, f"Billing export detail {i}: billing billing export export CSV.", ["project/billing"])
    result = ledger.recall(ELF, "billing export", frame="task", top_k=3)
    assert result.blocks[0].block_id == goal and result.blocks[0].guaranteed
    assert result.text.startswith("## Active Goals\n- Ship the billing export this sprint.\n\n## Context\n[1] ")


def test_recall_reinforces_what_it_returns_and_links_co_retrieved_blocks(make_ledger: LedgerFactory) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(MEMORY)
        a = ledger.remember(ELF, "Redis holds the session cache.", ["project/cache"]).block_id
        b = ledger.remember(ELF, "The session cache evicts after an hour.", ["project/cache"]).block_id
        c = ledger.remember(ELF, "Unrelated: the logo is blue.", ["project/brand"]).block_id
        work(ledger, clock, 10)
        ledger.recall(ELF, "session cache", top_k=5)
        after = {x: block(ledger, x) for x in (a, b, c)}
        stats = ledger.memory_stats()
    assert after[a].reinforcements == after[b].reinforcements == 1 and after[c].reinforcements == 0
    assert after[a].score.recency == 1.0 and after[c].score.recency == pytest.approx(math.exp(-0.1))
    assert after[a].score.weighted_degree > 0 and after[c].score.weighted_degree == 0
    assert stats.edges == 1


def test_a_recall_with_a_query_issues_the_token_and_a_queryless_one_does_not(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    ledger.setup_memory(ELF)
    sid = ledger.clock_in(ELF, "dev").session_id
    ledger.recall(ELF, frame="self", session_id=sid)
    refused = ledger.assert_compliance(ELF, sid)
    recalled = ledger.recall(ELF, "curiosity hypothesis", frame="self", session_id=sid)
    passed = ledger.assert_compliance(ELF, sid)
    again = ledger.assert_compliance(ELF, sid)
    assert refused.status == "FAIL" and refused.reason == "no_search"
    assert recalled.token_expires_at is not None
    assert passed.status == "PASS" and passed.stamp and f"FOUND {len(recalled.blocks)} RELEVANT" in passed.stamp
    assert again.status == "FAIL" and again.reason == "token_consumed"
    assert ledger.compliance_report().agents[0].searches == 1


def test_recall_in_someone_elses_session_is_refused_and_records_nothing(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    ledger.setup_memory(ELF)
    sid = ledger.clock_in(Actor("other", "mcp"), "dev").session_id
    head = ledger.store.head()
    with pytest.raises(Exception, match="belongs to"):
        ledger.recall(ELF, "curiosity", session_id=sid)
    assert ledger.store.head() == head


@pytest.mark.parametrize(
    ("kwargs", "hint"),
    [
        ({"frame": "dream"}, "self, attention, task"),
        ({"top_k": 0}, "top_k from 1"),
        ({"top_k": 51}, "top_k from 1"),
        ({"query": "   "}, "what you are looking for"),
        ({"query": "!!! ???"}, "at least one word"),
    ],
)
def test_bad_recall_input_says_what_to_send_and_changes_nothing(
    make_ledger: LedgerFactory, kwargs: dict[str, object], hint: str
) -> None:
    ledger = make_ledger(MEMORY)
    ledger.setup_memory(ELF)
    head = ledger.store.head()
    with pytest.raises(InvalidInput) as err:
        ledger.recall(ELF, **kwargs)  # type: ignore[arg-type]
    assert hint in err.value.hint
    assert ledger.store.head() == head


# --- outcome -----------------------------------------------------------------------------------------------------


def test_outcomes_update_confidence_by_a_beta_update_and_a_bad_signal_doubles_decay(
    make_ledger: LedgerFactory,
) -> None:
    ledger = make_ledger(MEMORY)
    good = ledger.remember(ELF, "Feature flags guard risky launches.", ["project/release"]).block_id
    bad = ledger.remember(ELF, "Deploy on Fridays.", ["project/release"], category="observation").block_id
    first = ledger.outcome(ELF, [good, bad], 1.0)
    ledger.outcome(ELF, [good], 0.5)
    penalised = ledger.outcome(ELF, [bad], 0.1)
    ledger.outcome(ELF, [good], 0.1)
    ledger.outcome(ELF, [good], 0.1)
    g, b = block(ledger, good), block(ledger, bad)
    # prior strength 2: c1 = (0.5·2 + 1)/3, c2 = (c1·3 + 0.5)/4, c3 = (c2·4 + 0.1)/5, c4 = (c3·5 + 0.1)/6
    c1 = (0.5 * 2 + 1.0) / 3
    c4 = ((((c1 * 3 + 0.5) / 4) * 4 + 0.1) / 5 * 5 + 0.1) / 6
    assert first.blocks[0].confidence_after == pytest.approx(c1, abs=1e-6)
    assert g.confidence == pytest.approx(c4, abs=1e-6) and g.outcomes == 4
    assert g.decay_rate == pytest.approx(0.010 * 4)  # doubled twice, still under the cap
    assert penalised.blocks[0].decay_rate_before == b.decay_rate == 0.050  # EPHEMERAL is already at the cap
    ledger.outcome(ELF, [good], 0.0)
    assert block(ledger, good).decay_rate == 0.050  # 0.08 capped at 0.05


@pytest.mark.parametrize(
    ("ids", "signal", "error"),
    [([], 0.5, InvalidInput), (["blk_missing"], 0.5, NotFound), (None, 1.5, InvalidInput), (None, -0.1, InvalidInput)],
)
def test_bad_outcomes_are_refused_and_change_nothing(
    make_ledger: LedgerFactory, ids: list[str] | None, signal: float, error: type[Exception]
) -> None:
    ledger = make_ledger(MEMORY)
    real = ledger.remember(ELF, "Something real.", []).block_id
    head = ledger.store.head()
    with pytest.raises(error):
        ledger.outcome(ELF, [real] if ids is None else ids, signal)
    assert ledger.store.head() == head


# --- curate -------------------------------------------------------------------------------------------------------


def test_step6_curate_reinforces_constitutional(make_ledger: LedgerFactory) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(MEMORY)
        ledger.setup_memory(ELF)
        work(ledger, clock, 3)
        result = ledger.curate(ELF)
        listed = ledger.memory_blocks(tag="self/constitutional").blocks
    assert result.constitutional_reinforced == 10 and result.archived == 0
    assert all(b.reinforcements >= 1 and b.score.active_hours_since_reinforced == 0 for b in listed)


def _curate_world(ledger: Ledger, clock: Clock) -> dict[str, str]:
    """Two bridges (B, P) linked to four spokes and to each other; a stale block, an observation, a value."""
    ids = {
        "B": ledger.remember(ELF, "Bridge note: alpha beta gamma delta bp.", ["project/graph"]).block_id,
        "P": ledger.remember(ELF, "Partner note: alpha beta gamma delta bp.", ["project/graph"]).block_id,
        "x1": ledger.remember(ELF, "Spoke one mentions alpha.", ["project/graph"]).block_id,
        "x2": ledger.remember(ELF, "Spoke two mentions beta.", ["project/graph"]).block_id,
        "x3": ledger.remember(ELF, "Spoke three mentions gamma.", ["project/graph"]).block_id,
        "x4": ledger.remember(ELF, "Spoke four mentions delta.", ["project/graph"]).block_id,
        "stale": ledger.remember(ELF, "A stale fact nobody recalls.", ["project/misc"]).block_id,
        "seen": ledger.remember(ELF, "Saw the deploy hang once.", ["project/ops"], category="observation").block_id,
        "value": ledger.remember(ELF, "Prefer boring technology.", ["self/value"]).block_id,
    }
    for word in ("alpha", "beta", "gamma", "delta"):
        ledger.recall(ELF, word, top_k=3)  # B, P and one spoke, co-retrieved
    ledger.recall(ELF, "bp", top_k=2)  # B and P again
    work(ledger, clock, 39)  # not yet due for the automatic curate
    return ids


def test_curate_archives_the_decayed_spares_bridges_and_the_constitution_prunes_and_reinforces(
    make_ledger: LedgerFactory,
) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(MEMORY)
        ledger.setup_memory(ELF)
        ids = _curate_world(ledger, clock)
        assert ledger.memory_stats().curates == 0
        work(ledger, clock, 361)  # 400 active hours since the recalls: STANDARD recency e^-4 ≈ 0.018
        before = ledger.memory_blocks(archived=None)
        result = ledger.curate(ELF)
        live = ledger.memory_blocks()
        archived = ledger.memory_blocks(archived=True)
        edges_after = ledger.memory_stats().edges
        searched = ledger.recall(ELF, "alpha beta gamma delta stale deploy", top_k=20)
    scores = {b.block_id: b for b in before.blocks}
    degree = {k: scores[v].score.weighted_degree for k, v in ids.items()}
    name = {v: k for k, v in ids.items()}

    assert sorted(name[b] for b in result.archived_ids) == ["seen", "stale", "x1", "x2", "x3", "x4"]
    # B and P decayed just as far as the spokes, but they are the top 20% by weighted degree: bridges.
    assert scores[ids["B"]].score.recency < 0.05 and scores[ids["x1"]].score.recency < 0.05
    assert degree["B"] == degree["P"] > degree["x1"] > 0
    assert {ids["B"], ids["P"], ids["value"]} <= {b.block_id for b in live.blocks}
    assert constitutional_ids(ledger) <= {b.block_id for b in live.blocks}
    # The B–P edge decayed below 0.10 and is pruned; the spokes' edges leave with the spokes.
    assert result.edges_pruned == 1 and edges_after == 0
    assert result.constitutional_reinforced == 10
    assert result.reinforced == 5 and len(set(result.reinforced_ids)) == 5
    assert all(scores[b].reinforcements < block(ledger, b).reinforcements for b in result.reinforced_ids)
    # Archived blocks leave search and recall but stay in the ledger, with their history.
    assert {b.block_id for b in archived.blocks} == set(result.archived_ids)
    assert not set(result.archived_ids) & {b.block_id for b in searched.blocks}
    history = ledger.memory_block(ids["stale"]).history
    assert [h.type for h in history] == ["MemoryRemembered", "MemoryCurated"]
    with pytest.raises(InvalidInput, match="archived"):
        ledger.outcome(ELF, [ids["stale"]], 1.0)


def test_curate_runs_by_itself_once_every_40_active_hours(make_ledger: LedgerFactory) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(MEMORY)
        ledger.setup_memory(ELF)
        _curate_world(ledger, clock)  # 39 active hours: recalls so far curated nothing
        ledger.recall(ELF, "alpha")
        assert ledger.memory_stats().curates == 0
        work(ledger, clock, 1.5)  # 40.5 active hours
        ledger.recall(ELF, "alpha")  # the first memory command after 40 active hours curates
        ledger.recall(ELF, "beta")  # and the next one does not
        work(ledger, clock, 39)
        ledger.remember(ELF, "Still within the interval.", [])
        work(ledger, clock, 1)
        ledger.remember(ELF, "Past the next interval.", [])
    curates = [
        (r.agent, r.event.trigger, round(r.event.active_hours, 3))
        for r in ledger.store.iter_events(types=["MemoryCurated"])
        if isinstance(r.event, MemoryCurated)
    ]
    assert curates == [("system", "auto", 40.5), ("system", "auto", 80.5)]


def test_replaying_the_log_gives_the_live_scores_and_archive_set(make_ledger: LedgerFactory, db_url: str) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(db_url)
        ledger.setup_memory(ELF)
        ids = _curate_world(ledger, clock)
        ledger.outcome(ELF, [ids["value"], ids["B"]], 0.9)
        work(ledger, clock, 361)
        ledger.curate(ELF)
        sid = ledger.clock_in(ELF, "dev").session_id
        clock.tick(_dt.timedelta(hours=2))
        ledger.recall(ELF, "boring technology bridge", frame="attention", session_id=sid)
        live = ledger.memory_blocks(archived=None, limit=100)
        replayed = ledger.memory_blocks(archived=None, limit=100, position=ledger.store.head()[0])
        fresh_process = make_ledger(db_url).memory_blocks(archived=None, limit=100)
        clock.tick(_dt.timedelta(minutes=10))  # the open session keeps counting until its idle timeout
        live_later = ledger.memory_blocks(archived=None, limit=100)
        by_time = ledger.memory_blocks(archived=None, limit=100, as_of=live_later.as_of)
    assert live.count == 19 and sum(1 for b in live.blocks if b.archived_at) == 6
    assert replayed.blocks == live.blocks == fresh_process.blocks
    assert live_later.active_hours == pytest.approx(live.active_hours + 10 / 60)
    assert by_time.blocks == live_later.blocks != live.blocks
    assert {b.block_id for b in replayed.blocks if b.archived_at} == {b.block_id for b in live.blocks if b.archived_at}


@pytest.mark.parametrize("optimize_after", [1, 1000])
def test_the_search_index_drops_archived_blocks_incrementally_and_on_rebuild(
    make_ledger: LedgerFactory, db_url: str, monkeypatch: pytest.MonkeyPatch, optimize_after: int
) -> None:
    # With 1, the archive also runs FTS5's 'optimize' merge (done for large archives on SQLite).
    monkeypatch.setattr(search_index, "OPTIMIZE_AFTER_REMOVALS", optimize_after)
    with freeze_time(T0) as clock:
        ledger = make_ledger(db_url)
        kept = ledger.remember(ELF, "Kept: the gizmo ships in May.", ["self/value"]).block_id
        gone = [ledger.remember(ELF, f"Gone {i}: the gizmo was late.", ["project/x"]).block_id for i in range(3)]
        sid = ledger.clock_in(ELF, "dev").session_id
        assert {h.block_id for h in ledger.search(ELF, sid, "gizmo").results} == {kept, *gone}
        clock.tick(_dt.timedelta(hours=400))
        ledger.clock_out(ELF, sid)
        assert set(ledger.curate(ELF).archived_ids) == set(gone)
        sid = ledger.clock_in(ELF, "dev").session_id
        incremental = [h.block_id for h in ledger.search(ELF, sid, "gizmo").results]
        checkpoint = ledger.index.checkpoint()
        ledger.search(ELF, sid, "gizmo")  # nothing new for the index: the read path writes nothing
        unmoved = ledger.index.checkpoint()
        ledger.rebuild_index()
        rebuilt = [h.block_id for h in ledger.search(ELF, sid, "gizmo").results]
    assert incremental == rebuilt == [kept]
    assert unmoved == checkpoint < ledger.store.head()[0]
