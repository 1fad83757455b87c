"""scripts/eval_retrieval.py on a slice of its labelled set, so the evaluation cannot rot: the set loads, its
paraphrases share no stemmed content word with their answers, and the retrievers are scored end to end."""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path

import pytest

from ledger.memory.constitution import CONSTITUTION
from projections.search import TOKENIZE, fusion

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import eval_floor
import eval_retrieval as ev


def test_the_set_has_the_size_the_issue_asks_for_and_every_label_resolves() -> None:
    blocks, cases = ev.load()
    labels = {b.label for b in blocks} | set(ev.CONSTITUTIONAL_LABELS)
    assert len(labels) == len(blocks) + len(ev.CONSTITUTIONAL_LABELS) >= 200
    assert len([c for c in cases if c.kind != "seed"]) >= 60
    assert {c.kind for c in cases} == set(ev.KINDS)
    assert {label for c in cases for label in c.relevant} <= labels


def test_paraphrases_share_no_stemmed_content_word_with_their_answer() -> None:
    blocks, cases = ev.load()
    shared = {c.query: ev.shared_words(c, blocks) for c in cases if c.kind == "paraphrase"}
    assert {q: s for q, s in shared.items() if s} == {}


def test_the_nonsense_queries_share_no_stemmed_word_with_any_block() -> None:
    blocks, _ = ev.load()
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(content, tokenize='{TOKENIZE}')")
    db.executemany("INSERT INTO t VALUES (?)", [(b.content,) for b in blocks] + [(c.content,) for c in CONSTITUTION])
    salads = ev.nonsense()
    assert len(salads) == 21 and len(set(salads)) == 21
    shared = {
        q: [w for w in q.split() if db.execute("SELECT 1 FROM t WHERE t MATCH ?", (f'"{w}"',)).fetchone()]
        for q in salads
    }
    assert {q: w for q, w in shared.items() if w} == {}


def test_the_evaluation_runs_on_a_slice_and_scores_each_retriever(capsys: pytest.CaptureFixture[str]) -> None:
    blocks, cases = ev.load()
    picked = [next(c for c in cases if c.kind == kind) for kind in ev.KINDS]
    results = ev.run(picked, blocks)
    assert set(results) == set(ev.RETRIEVERS)
    for scores in results.values():
        assert set(scores) == {*ev.KINDS, "all", ev.SELF_FRAME}
        assert all(0 <= s.recall <= 1 and 0 <= s.mrr <= 1 and s.queries for s in scores.values())
    # Seed 002's risk-management question: with query analysis both risk blocks lead (2 of its 5 relevant).
    assert picked[0].query == "What should I consider for risk management?"
    assert (results["BM25"]["seed"].recall, results["BM25"]["seed"].mrr) == (0.4, 1.0)
    assert ev.main(["--queries", "2", "--retriever", "BM25"]) == 0
    assert "| BM25 |" in capsys.readouterr().out


def test_the_constitutional_labels_name_the_blocks_they_label(tmp_path: Path) -> None:
    blocks, _ = ev.load()
    ctx = ev.build(tmp_path, blocks[:1])
    try:
        text = {label: ctx.ledger.memory_block(ctx.ids[label]).block.content for label in ev.CONSTITUTIONAL_LABELS}
    finally:
        ctx.ledger.store.dispose()
    assert text["con-identity"].startswith("I am elf")
    assert text["con-reflection"].startswith("At natural transitions")
    assert text["con-uncertainty"].startswith("Name what you do not know")


def test_no_seed_example_loses_a_block_the_seed_names_and_hybrid_beats_bm25_by_a_third() -> None:
    """Seed 002's example queries, in the self frame where the seed asks them ("SELF FRAME RETRIEVAL (top_k=5)"):
    every named block BM25 alone finds in the top 5, hybrid finds too, and hybrid finds at least one named block
    for every example. Over the whole set (hybrid as shipped), recall@5 is at least 1.3x BM25's."""
    blocks, cases = ev.load()
    seeds = [c for c in cases if c.kind == "seed"]
    with tempfile.TemporaryDirectory(prefix="eval-seed-") as tmp:
        ctx = ev.build(Path(tmp), blocks)
        try:
            assert ctx.ledger.index.semantic is not None, ctx.ledger.index.retrieval
            bm25, hybrid = ev.bm25(ctx), ev.hybrid(ctx)
            for case in seeds:
                named = {ctx.ids[label] for label in case.relevant}
                by_bm25 = named & set(bm25(case.query, ev.K, "self/"))
                by_hybrid = named & set(hybrid(case.query, ev.K, "self/"))
                assert by_bm25 <= by_hybrid, case.query
                assert by_hybrid, case.query
            whole = {
                name: ev.summarise(ev.evaluate(f(ctx), cases, ctx.ids))["all"] for name, f in ev.RETRIEVERS.items()
            }
            answers = [(c.query, {ctx.ids[label] for label in c.relevant}) for c in cases]
            spread = eval_floor.spread(ctx.ledger.index, "hybrid", answers, ev.nonsense())
        finally:
            ctx.ledger.store.dispose()
    assert whole["hybrid"].recall >= 1.3 * whole["BM25"].recall
    # Issue 23: the similarity floor costs neither recall@5 nor MRR, and most nonsense queries find nothing.
    for mode in ("embeddings", "hybrid"):
        floored, before = whole[mode], whole[f"{mode}, no floor"]
        assert floored.recall >= before.recall and floored.mrr >= before.mrr, mode
    assert min(cos for cos, _ in spread.answers) >= fusion.MIN_SIMILARITY  # every correct answer of the top 10
    assert spread.unfloored == 10 * len(spread.found)  # without the floor: the limit, however weak
    assert sum(1 for n in spread.found if n == 0) >= 2 * len(spread.found) // 3
