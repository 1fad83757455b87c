"""Query analysis in memory search, on SQLite FTS5 and PostgreSQL alike: stop words dropped, stemming, blocks
matching every content word first and the rest filled from blocks matching any (issue 14)."""

from __future__ import annotations

import pytest

from ledger.service import Actor, Ledger
from projections.query_analysis import query_terms

ELF = Actor("elf", "mcp")
RISK = [
    "Risk management: size every position so one loss cannot sink the account.",
    "Good risk management means a stop-loss decided before entering the trade.",
]


def ids(ledger: Ledger, query: str, limit: int = 5) -> list[str]:
    sid = ledger.clock_in(ELF, "dev").session_id
    try:
        return [h.block_id for h in ledger.search(ELF, sid, query, limit).results]
    finally:
        ledger.clock_out(ELF, sid)


def test_stop_words_are_dropped_unless_the_query_has_nothing_else() -> None:
    assert query_terms("What should I consider for risk management?") == ["consider", "risk", "management"]
    assert query_terms("What is it?") == ["what", "is", "it"]
    assert query_terms("the THE risk Risk") == ["risk"]


def test_seed_002_risk_management_question_finds_the_risk_blocks_first(ledger: Ledger) -> None:
    ledger.setup_memory(ELF)  # the ten constitutional blocks, full of "I", "what", "should"
    risk = [ledger.remember(ELF, text, ["self/value"]).block_id for text in RISK]
    ledger.remember(ELF, "Deployment risk is lowest on a Tuesday morning.", ["project/release"])
    found = ids(ledger, "What should I consider for risk management?")
    assert set(found[:2]) == set(risk)


def test_stemming_matches_other_forms_of_a_word(ledger: Ledger) -> None:
    block = ledger.remember(ELF, "Managing risks early keeps the project healthy.", ["project/x"]).block_id
    assert ids(ledger, "risk management") == [block]


def test_blocks_matching_every_word_rank_before_those_matching_some(ledger: Ledger) -> None:
    # "gizmo" alone, repeated, would win on BM25 against a block that has both words once.
    weak = ledger.remember(ELF, "Gizmo gizmo gizmo gizmo: the gizmo is everywhere.", ["p/x"]).block_id
    strong = ledger.remember(ELF, "A gizmo needs a sprocket to turn.", ["p/x"]).block_id
    other = ledger.remember(ELF, "The sprocket is made of brass.", ["p/x"]).block_id
    found = ids(ledger, "gizmo sprocket")
    assert found[0] == strong and set(found) == {strong, weak, other}
    sid = ledger.clock_in(ELF, "dev").session_id
    scores = [h.score for h in ledger.search(ELF, sid, "gizmo sprocket").results]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0


def test_the_or_fill_stops_at_the_limit_and_strong_matches_are_not_repeated(ledger: Ledger) -> None:
    both = [ledger.remember(ELF, f"Widget and gadget number {i}.", ["p/x"]).block_id for i in range(2)]
    for i in range(4):
        ledger.remember(ELF, f"Only a widget here, item {i}.", ["p/x"])
    found = ids(ledger, "widget gadget", limit=4)
    assert len(found) == 4 == len(set(found)) and set(found[:2]) == set(both)


def test_a_query_of_only_stop_words_still_searches(make_ledger: object, sqlite_url: str) -> None:
    # SQLite indexes every word, so a stop-word query finds the blocks that have them. (PostgreSQL's 'english'
    # configuration does not index stop words: there such a query is accepted and finds nothing.)
    ledger = make_ledger(sqlite_url)  # type: ignore[operator]
    block = ledger.remember(ELF, "What it is, is what it was.", ["p/x"]).block_id
    assert ids(ledger, "what is it") == [block]


@pytest.mark.postgres
def test_a_query_of_only_stop_words_still_searches_on_postgres(make_ledger: object, pg_url: str) -> None:
    """PostgreSQL's english index holds no stop words; such a query is matched without the stop list."""
    ledger = make_ledger(pg_url)  # type: ignore[operator]
    found = ledger.remember(ELF, "What it is, is what it was.", ["p/x"]).block_id
    ledger.remember(ELF, "Deploys run on Fridays.", ["p/x"])
    assert ids(ledger, "what is it") == [found]
    assert ledger.index.search("what is it", 5, "q/") == []  # the tag filter applies


def _rebuild_index_without_stemming(ledger: Ledger, version: str | None) -> None:
    """Turn the ledger's index into one built as an older ledger would have: no stemming, ``version`` recorded."""
    sqlite = ledger.store.dialect == "sqlite"
    with ledger.store.engine.begin() as conn:
        if sqlite:
            conn.exec_driver_sql("DROP TABLE memory_fts")
            conn.exec_driver_sql(
                "CREATE VIRTUAL TABLE memory_fts USING fts5(block_id UNINDEXED, content, tags, tags_json UNINDEXED,"
                " provenance_json UNINDEXED, tokenize='unicode61')"
            )
        else:
            conn.exec_driver_sql("UPDATE memory_index SET tsv = to_tsvector('simple', content)")
        conn.exec_driver_sql("DELETE FROM projection_checkpoints WHERE name = 'memory_search_index'")
        conn.exec_driver_sql("DELETE FROM projection_versions WHERE name = 'memory_search_index'")
        if version is not None:
            conn.exec_driver_sql(
                ledger.store.sql("INSERT INTO projection_versions (name, version) VALUES (?, ?)"),
                ("memory_search_index", version),
            )
    if sqlite:
        ledger.index.catch_up()  # the unstemmed table, filled from the log


@pytest.mark.parametrize("version", ["fts5 tokenize=unicode61", None], ids=["other-tokenizer", "unversioned"])
def test_an_index_built_with_another_tokenizer_is_rebuilt_when_the_ledger_opens(
    make_ledger: object, db_url: str, version: str | None
) -> None:
    ledger = make_ledger(db_url)  # type: ignore[operator]
    block = ledger.remember(ELF, "Managing risks early keeps the project healthy.", ["project/x"]).block_id
    ledger.index.catch_up()
    _rebuild_index_without_stemming(ledger, version)
    assert ledger.index.search("management risk", 5) == []  # the old index does not stem
    reopened = make_ledger(db_url)  # type: ignore[operator]
    assert reopened.index.checkpoint() > 0  # rebuilt in the open, not left to the first search
    assert [h.block_id for h in reopened.index.search("management risk", 5)] == [block]
