"""Issue 23: hybrid search's similarity floor, with the real model, on a real SQLite file and a real PostgreSQL
schema holding hundreds of blocks. A query sharing no word and no meaning with memory finds nothing, so the stamp
says ZERO; a real query still finds its block and the stamp counts what the search returned; the floor is
``LEDGER_SEARCH_MIN_SIMILARITY``; BM25 alone has none."""

from __future__ import annotations

import itertools
import random
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from api.bootstrap import initialise
from api.settings import Settings
from ledger.service import Actor, Ledger
from ledger.sessions.gate import STAMP_FOUND, STAMP_ZERO
from projections.search import fusion

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import eval_retrieval as ev

ELF = Actor("elf", "cli")
SUBJECTS = [
    "the billing service", "the search API", "the nightly export job", "the mobile app", "the auth gateway",
    "the payments worker", "the analytics pipeline", "the admin dashboard", "the notification queue",
    "the image resizer", "the reporting database", "the checkout page", "the inventory sync", "the email sender",
    "the feature flag service", "the audit log", "the session store", "the recommendation model",
    "the pricing engine", "the customer portal",
]  # fmt: skip
FACTS = [
    "{s} times out when the connection pool is exhausted, so raise the pool size before a big release.",
    "Deploy {s} behind a flag and roll it out to a small share of traffic first.",
    "{S} tags every log line with the request id so an incident can be traced across services.",
    "Run the schema migrations for {s} before the new version goes live.",
    "{S} caches responses for a minute; stale reads right after a write are expected.",
    "Page the on-call engineer when {s} returns errors for more than five minutes.",
    "The flaky integration tests of {s} fail when the clock crosses midnight in UTC.",
    "{S} needs its secrets rotated every quarter; the runbook lists the steps.",
    "Load tests showed {s} saturates its CPU at about two thousand requests per second.",
    "Keep the dependencies of {s} pinned in the lock file and upgrade them in one reviewed batch.",
    "A retry storm in {s} once took down the database; retries now back off exponentially with jitter.",
    "Profile {s} before optimising it: last time the slow part was JSON serialisation, not the queries.",
    "{S} writes its metrics to Prometheus and the dashboards live in the shared Grafana folder.",
    "Ask the data team before changing the event schema that {s} publishes.",
    "{S} runs two replicas in production so a node upgrade never takes it offline.",
]
SLEEP = "Sleep at least eight hours during a heavy training block; recovery happens at night."
HAND = [
    (SLEEP, ["project/fitness"]),
    ("Risk management: size every position so that one loss cannot sink the account.", ["self/value"]),
    ("Squash merge feature branches so the main history stays readable.", ["project/git"]),
]
PARAPHRASE = "how much rest do muscles need after hard workouts"  # no content word shared with SLEEP
BLOCKS = 300


def corpus() -> list[tuple[str, list[str]]]:
    """Three hand-written blocks and 297 generated ones: each a fact template about one of twenty services."""
    pairs = list(itertools.product(SUBJECTS, FACTS))
    random.Random(23).shuffle(pairs)
    made = [(fact.format(s=s, S=s[0].upper() + s[1:]), [f"project/{s.split()[1]}"]) for s, fact in pairs]
    return HAND + made[: BLOCKS - len(HAND)]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def memory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A ledger of :func:`corpus`, built once per backend: remembered (word consolidation), then embedded."""
    home = tmp_path_factory.mktemp("floor")
    if request.param == "sqlite":
        url, schema, server = f"sqlite:///{home / 'ledger.db'}", None, None
    else:
        import psycopg

        server, schema = request.getfixturevalue("pg_server"), "t_" + secrets.token_hex(6)
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        url = f"{server}{'&' if '?' in server else '?'}options={quote('-csearch_path=' + schema)}"
    plain, _ = initialise(Settings(home=home, database_url=url, semantic=False))  # type: ignore[call-arg]
    try:
        assert [plain.remember(ELF, text, tags).status for text, tags in corpus()] == ["created"] * BLOCKS
    finally:
        plain.store.dispose()
    hybrid, _ = initialise(Settings(home=home, database_url=url, semantic=True))  # type: ignore[call-arg]
    try:
        semantic = hybrid.index.semantic
        assert semantic is not None, hybrid.index.retrieval
        semantic.ensure_schema()
        assert semantic.catch_up() == BLOCKS
    finally:
        hybrid.store.dispose()
    yield Settings(home=home, database_url=url)  # type: ignore[call-arg]
    if schema is not None:
        import psycopg

        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def opened() -> Iterator[list[Ledger]]:
    """The ledgers a test opens on the shared database; their engines are disposed after it."""
    built: list[Ledger] = []
    yield built
    for ledger in built:
        ledger.store.dispose()


def open_ledger(memory: Settings, built: list[Ledger], **settings: object) -> Ledger:
    """Another process's ledger on the shared database (its keys), with ``settings`` over the environment's."""
    ledger, _ = initialise(Settings(home=memory.home, database_url=memory.database_url, **settings))  # type: ignore[arg-type]
    built.append(ledger)
    return ledger


def search_and_stamp(ledger: Ledger, query: str, limit: int = 10) -> tuple[list[str], str | None]:
    """``memory_search`` in a new session, then ``assert_compliance``: the contents found and the stamp."""
    sid = ledger.clock_in(ELF, "dev").session_id
    found = ledger.search(ELF, sid, query, limit)
    assert found.count == len(found.results)
    stamp = ledger.assert_compliance(ELF, sid).stamp
    return [h.content for h in found.results], stamp


def test_nonsense_finds_nothing_and_the_stamp_says_zero(memory: Settings, opened: list[Ledger]) -> None:
    """Issue 23's query and the evaluation set's 20 word salads, none sharing a word with any block."""
    ledger = open_ledger(memory, opened, semantic=True)
    assert ledger.index.min_similarity == fusion.MIN_SIMILARITY
    salads = ev.nonsense()
    assert len(salads) == 21 and salads[0] == "xylophone quantum banana"
    for query in salads:
        assert search_and_stamp(ledger, query) == ([], STAMP_ZERO), query
    before = open_ledger(memory, opened, semantic=True, search_min_similarity=fusion.NO_FLOOR)
    found, stamp = search_and_stamp(before, salads[0])  # without the floor: the limit, however weak
    assert len(found) == 10 and stamp == STAMP_FOUND.format(n=10)


def test_a_real_query_finds_its_block_and_the_stamp_counts_the_hits_returned(
    memory: Settings, opened: list[Ledger]
) -> None:
    ledger = open_ledger(memory, opened, semantic=True)
    for query, first in [
        (PARAPHRASE, SLEEP),  # by meaning alone
        ("billing service migrations", "Run the schema migrations for the billing service before the new"),
        ("what breaks when too many requests retry at once", "A retry storm in"),
    ]:
        found, stamp = search_and_stamp(ledger, query)
        assert found and found[0].startswith(first), (query, found[:1])
        assert stamp == STAMP_FOUND.format(n=len(found))
        hits = ledger.index.search(query, 10)
        assert all(h.all_words or (h.cosine or 0) >= fusion.MIN_SIMILARITY for h in hits)
    sleep_only, _ = search_and_stamp(ledger, PARAPHRASE)
    assert sleep_only == [SLEEP]  # the other 299 blocks are about software: none near it


def test_the_floor_is_a_setting_and_a_higher_one_drops_what_a_lower_one_keeps(
    memory: Settings, opened: list[Ledger], monkeypatch: pytest.MonkeyPatch
) -> None:
    query = "credential rotation schedule"  # near the "secrets rotated every quarter" blocks, sharing no word
    low = open_ledger(memory, opened, semantic=True, search_min_similarity=0.25)
    monkeypatch.setenv("LEDGER_SEARCH_MIN_SIMILARITY", "0.31")
    high = open_ledger(memory, opened, semantic=True)
    assert high.index.min_similarity == 0.31
    kept = {h.block_id: h.cosine for h in low.index.search(query, 20)}
    fewer = {h.block_id: h.cosine for h in high.index.search(query, 20)}
    assert fewer and set(fewer) < set(kept)
    dropped = set(kept) - set(fewer)
    assert all(0.25 <= (kept[b] or 0) < 0.31 for b in dropped) and all((c or 0) >= 0.31 for c in fewer.values())
    assert search_and_stamp(high, query)[1] == STAMP_FOUND.format(n=min(10, len(fewer)))
    # A match of every content word of the query stays whatever its cosine; some of the words, or meaning, do not.
    monkeypatch.setenv("LEDGER_SEARCH_MIN_SIMILARITY", "0.99")
    strict = open_ledger(memory, opened, semantic=True)
    [only] = strict.index.search("billing service migrations", 10)
    assert only.all_words and only.cosine is not None and only.cosine < 0.99
    assert only.content.startswith("Run the schema migrations for the billing service")
    assert strict.index.search("billing migrations xylophone", 10) == []  # xylophone is in no block


def test_bm25_alone_has_no_floor(memory: Settings, opened: list[Ledger]) -> None:
    """Without embeddings (LEDGER_SEMANTIC=false) search is as it was, whatever the floor says."""
    plain = open_ledger(memory, opened, semantic=False)
    strict = open_ledger(memory, opened, semantic=False, search_min_similarity=0.99)
    for query in ["billing migrations xylophone", "flaky integration tests", "xylophone quantum banana"]:
        assert search_and_stamp(strict, query) == search_and_stamp(plain, query), query
    assert len(search_and_stamp(strict, "billing migrations xylophone")[0]) == 10  # weak OR matches, kept
    assert search_and_stamp(strict, "xylophone quantum banana") == ([], STAMP_ZERO)  # no word: nothing, as before


def test_only_a_query_whose_every_content_word_the_memory_holds_gives_all_word_matches(
    memory: Settings, opened: list[Ledger]
) -> None:
    index = open_ledger(memory, opened, semantic=False).index
    every = index.search("flaky integration tests", 5)
    assert every and all(h.all_words for h in every)
    assert not any(h.all_words for h in index.search("flaky integration xylophone", 5))  # a word in no block
    assert not any(h.all_words for h in index.search("what is it about", 5))  # stop words only: no content word
    assert not any(h.all_words for h in index.search("billing xylophone", 5))  # one word kept of two


def test_the_floor_setting_refuses_a_value_that_is_not_a_cosine(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="search_min_similarity"):
        Settings(home=tmp_path, search_min_similarity=1.5)  # type: ignore[call-arg]


def test_a_recall_counts_only_the_blocks_relevant_to_its_query(memory: Settings, opened: list[Ledger]) -> None:
    """A recall shows its top_k blocks whatever the query; the token it issues counts only those the similarity floor
    keeps, so nonsense recalled is ZERO relevant memories, and a real query counts what is near it."""
    ledger = open_ledger(memory, opened, semantic=True)
    sid = ledger.clock_in(ELF, "dev").session_id
    nonsense = ledger.recall(ELF, "xylophone quantum banana", "attention", 5, sid)
    assert len(nonsense.blocks) == 5 and nonsense.relevant == 0
    assert ledger.assert_compliance(ELF, sid).stamp == STAMP_ZERO
    sid = ledger.clock_in(ELF, "dev").session_id
    real = ledger.recall(ELF, PARAPHRASE, "attention", 5, sid)
    assert real.relevant is not None and 1 <= real.relevant <= len(real.blocks)
    assert SLEEP in [b.content for b in real.blocks]
    assert ledger.assert_compliance(ELF, sid).stamp == STAMP_FOUND.format(n=real.relevant)
    queryless = ledger.recall(ELF, None, "attention", 5, None)
    assert queryless.relevant is None  # no query, no token: nothing to count
