"""A recall's answer does not grow with the ledger: it lists the candidate pool (``top_k × 4``) block by block and
only counts the candidates below it; and the blocks it shows and lists are those the full ranking of every block
gives. On a real ledger, SQLite and PostgreSQL, with edges, reinforcements, archived and superseded blocks."""

from __future__ import annotations

import datetime as _dt

from freezegun import freeze_time

from ledger.memory import recall as rc
from ledger.service import Actor, Ledger
from projections import decay
from tests.conftest import LedgerFactory

T0 = _dt.datetime(2026, 6, 1, 8, 0, tzinfo=_dt.UTC)
ELF = Actor("elf", "mcp")
WORDS = ["cache", "index", "schema", "deploy", "token", "queue"]


def fill(ledger: Ledger, clock: object) -> dict[str, str]:
    """40 standard blocks, 10 ephemeral ones archived by a curate 70 active hours later, one superseded, two
    goals, edges and reinforcements from recalls with a query; returns the superseded and archived ids."""
    for i in range(40):
        ledger.remember(ELF, f"Note {i} about the {WORDS[i % 6]} and the {WORDS[(i * 5) % 6]}.", ["project/x"])
    fleeting = [
        ledger.remember(ELF, f"Observed {i} once.", ["project/y"], category="observation").block_id for i in range(10)
    ]
    for goal in ("Ship the cache rewrite.", "Keep the deploy green."):
        ledger.remember(ELF, goal, ["self/goal"])
    old = ledger.remember(ELF, "Note about the queue, wrong.", ["project/x"]).block_id
    ledger.supersede(ELF, old, "Note about the queue, corrected.")
    for word in WORDS[:4]:
        ledger.recall(ELF, word, frame="attention", top_k=4)
    sid = ledger.clock_in(ELF, "dev").session_id
    clock.tick(_dt.timedelta(hours=70))  # type: ignore[attr-defined]
    ledger.clock_out(ELF, sid)
    ledger.curate(ELF)
    return {"superseded": old, **{f"archived{i}": b for i, b in enumerate(fleeting)}}


def full_ranking(ledger: Ledger, frame: str) -> list[rc.Scored]:
    """Every live block of the frame scored one view at a time, as recall did before it was bounded."""
    spec = rc.FRAMES[frame]
    with ledger.memory._live() as (graph, clock):
        views = [b for b in graph.live_blocks(spec.tag_prefix) if rc.in_frame(b, spec)]
        return rc.score_blocks(views, spec.weights, graph, clock)


def test_a_queryless_recall_lists_its_pool_counts_the_rest_and_shows_what_the_full_ranking_shows(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(db_url)
        gone = fill(ledger, clock)
        for frame, top_k in (("attention", 3), ("task", 2), ("task", 1), ("attention", 6)):
            ranking = full_ranking(ledger, frame)
            pool = rc.pool_of(ranking, rc.FRAMES[frame], top_k)  # the best top_k × 4, a goal among them however low
            assert len(ranking) > len(pool) and not {s.block.block_id for s in ranking} & set(gone.values())
            result = ledger.recall(ELF, frame=frame, top_k=top_k)
            shown = [b.block_id for b in result.blocks]
            listed = [d.block_id for d in result.dropped]
            # Every block of the pool is shown or listed, once; nothing else is listed; the rest is counted.
            assert sorted(shown + listed) == sorted(s.block.block_id for s in pool)
            assert result.dropped_beyond_pool == len(ranking) - len(pool)
            assert all(d.reason == "top_k" for d in result.dropped)  # short texts: the budget cuts nothing
            # The blocks shown carry the scores the full ranking gave them, to the last bit.
            scores = {s.block.block_id: s.breakdown for s in ranking}
            for b in result.blocks:
                expected = scores[b.block_id]
                assert (b.score.total, b.score.centrality, b.score.recency) == (
                    round(expected.total, 6),
                    round(expected.centrality, 6),
                    round(expected.recency, 6),
                )
            if frame == "task":
                goals = [b for b in result.blocks if "self/goal" in b.tags]
                assert goals and all(b.guaranteed for b in goals)


def test_a_recall_with_a_query_has_nothing_beyond_its_pool(make_ledger: LedgerFactory, db_url: str) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(db_url)
        fill(ledger, clock)
        result = ledger.recall(ELF, "cache index", frame="attention", top_k=2)
        assert result.dropped_beyond_pool == 0
        assert 0 < len(result.blocks) + len(result.dropped) <= 2 * rc.CANDIDATES_PER_SLOT


def test_the_block_list_and_curate_agree_with_scoring_every_view(make_ledger: LedgerFactory, db_url: str) -> None:
    """``memory_blocks`` (scored by column) lists what ``score_blocks`` over the same views ranks, with its count."""
    with freeze_time(T0) as clock:
        ledger = make_ledger(db_url)
        gone = fill(ledger, clock)
        for archived in (False, True, None):
            listed = ledger.memory_blocks(archived=archived, limit=7)
            with ledger.memory._live() as (graph, active):
                views = [
                    b
                    for b in graph.blocks.values()
                    if archived is None or (b.archived == archived and (archived or b.superseded_by is None))
                ]
                expected = rc.score_blocks(views, decay.ATTENTION_WEIGHTS, graph, active)
            assert listed.count == len(expected) and listed.count > 7
            assert [b.block_id for b in listed.blocks] == [s.block.block_id for s in expected[:7]]
            assert [b.score.total for b in listed.blocks] == [round(s.breakdown.total, 6) for s in expected[:7]]
        assert ledger.memory_blocks(archived=True, limit=50).count == len(gone) - 1


def test_a_queryless_self_recall_counts_the_self_blocks_below_its_pool(make_ledger: LedgerFactory, db_url: str) -> None:
    """The self frame takes its candidates from the tag index; its answer is bounded the same way."""
    with freeze_time(T0) as clock:
        ledger = make_ledger(db_url)
        ledger.setup_memory(ELF)  # ten constitutional blocks
        fill(ledger, clock)  # two goals among other blocks: twelve self/ blocks in all
        ranking = full_ranking(ledger, "self")
        result = ledger.recall(ELF, frame="self", top_k=1)
        shown = [b.block_id for b in result.blocks]
        listed = [d.block_id for d in result.dropped]
        assert len(ranking) == 12 and result.dropped_beyond_pool == 12 - rc.CANDIDATES_PER_SLOT
        assert sorted(shown + listed) == sorted(s.block.block_id for s in ranking[: rc.CANDIDATES_PER_SLOT])
