"""The synthetic memory: seeded sentences of real and made-up words with Zipf-like frequencies, tags and queries,
and the fill that appends them as blocks through the store's own write transaction and hash chain."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from ledger.core.canonical import format_ts
from ledger.core.chain import chain_rows
from ledger.core.events import MemoryRemembered
from ledger.core.mapper import encode, encode_meta
from ledger.memory import decisions as memory
from ledger.service import Ledger
from memory_bench.common import AGENT, FILL_BATCH, HEAD, INSERT

# Real words first (the most frequent ranks), then made-up pronounceable ones up to a few thousand.
REAL_WORDS = """
database migration schema table index query cache session token error retry timeout lock transaction commit
rollback server client request response header payload event stream projection replay ledger hash chain
verify signature receipt key agent memory block recall search curate decay archive edge graph score weight
frame budget test fixture mock assert coverage lint type check build deploy release version branch merge
conflict rebase review patch diff file path directory config setting environment variable secret password
user role permission admin policy audit log metric trace span latency throughput benchmark profile memory
leak thread process worker queue job scheduler cron backoff limit quota rate burst window bucket sqlite
postgres connection pool driver cursor row column constraint unique foreign primary sequence vacuum analyze
backup restore snapshot checkpoint wal fsync journal page disk storage bucket blob upload download stream
parser tokenizer grammar syntax encoding unicode json yaml toml csv markdown html template render view
component handler route endpoint middleware authentication authorization cookie header cors proxy gateway
network socket port host dns certificate tls encryption decrypt compress archive bundle package dependency
upgrade downgrade pin resolver lockfile wheel module import export function class method interface protocol
adapter factory builder registry plugin hook callback promise future async await loop coroutine channel
signal shutdown startup health probe readiness liveness container image kubernetes pod cluster node replica
shard partition leader follower election consensus quorum heartbeat gossip clock drift skew monotonic
timestamp timezone calendar interval duration deadline budget estimate plan milestone phase goal task issue
ticket bug regression fix workaround hotfix incident outage postmortem alert pager oncall runbook dashboard
customer invoice billing payment refund subscription plan tier discount coupon report export import sync
""".split()  # noqa: SIM905
FUNCTION_WORDS = """the a an to of in for and is on with when we it that this from by as at be not or but
after before because so if then our must should can will was were has have""".split()  # noqa: SIM905
TAGS = [
    f"{area}/{topic}"
    for area, topics in {
        "project": ["db", "api", "auth", "ui", "infra", "ci", "docs", "billing", "search", "memory"],
        "topic": ["performance", "security", "testing", "migration", "incident", "design", "tooling", "data"],
        "lang": ["python", "sql", "typescript", "rust", "go", "bash"],
        "team": ["platform", "payments", "growth", "core"],
    }.items()
    for topic in topics
]
SELF_TAGS = ["self/value", "self/goal", "self/constraint"]


def pseudo_words(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    out: list[str] = []
    while len(out) < count:
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4)))
        if rng.random() < 0.3:
            word += rng.choice("nrst")
        if word not in taken:
            taken.add(word)
            out.append(word)
    return out


@dataclass
class Corpus:
    """Seeded synthetic text: content words with Zipf-like frequencies, sentences, tags and queries."""

    seed: int = 2026
    vocabulary: int = 3_000
    words: list[str] = field(init=False)
    cum: list[float] = field(init=False)

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        real = list(dict.fromkeys(REAL_WORDS))
        rng.shuffle(real)
        taken = set(real) | set(FUNCTION_WORDS)
        self.words = real + pseudo_words(rng, self.vocabulary - len(real), taken)
        total, self.cum = 0.0, []
        for rank in range(1, len(self.words) + 1):
            total += 1.0 / rank**1.05
            self.cum.append(total)
        self.rng = random.Random(self.seed + 1)

    def sentence(self) -> str:
        rng = self.rng
        n = rng.randint(8, 22)
        content = rng.choices(self.words, cum_weights=self.cum, k=n)
        out = [w if rng.random() > 0.35 else f"{rng.choice(FUNCTION_WORDS)} {w}" for w in content]
        text = " ".join(out)
        return text[0].upper() + text[1:] + rng.choice(".....!?")

    def block(self) -> tuple[str, list[str], str]:
        rng = self.rng
        tags = rng.sample(TAGS, rng.randint(1, 3))
        if rng.random() < 0.003:
            tags.append(rng.choice(SELF_TAGS))
        r = rng.random()
        category = "observation" if r < 0.10 else "decision" if r < 0.25 else "knowledge"
        text = self.sentence() if rng.random() < 0.6 else self.sentence() + " " + self.sentence()
        return text, tags, category

    def queries(self, n: int) -> list[str]:
        """2–3 word queries: each word half the time from the 150 most frequent, else from the rest."""
        rng = random.Random(self.seed + 2)
        out = []
        for _ in range(n):
            words: list[str] = []
            while len(words) < rng.choice((2, 2, 3)):
                w = rng.choice(self.words[:150]) if rng.random() < 0.5 else rng.choice(self.words[150:])
                if w not in words:
                    words.append(w)
            out.append(" ".join(words))
        return out


def fill(ledger: Ledger, corpus: Corpus, count: int, seen: set[str], progress: Callable[[int], None]) -> int:
    """Append ``count`` new ``MemoryRemembered`` events, each on its own ``block:<id>`` stream.

    ``SqlEventStore.append`` writes one stream per call (one fsync each), so this writes ``FILL_BATCH`` blocks
    per transaction through the store's own ``write_transaction``, ``encode`` and ``chain_rows`` (the same
    hash chain ``append`` builds; ``synchronous`` stays FULL), with each row's authenticator and its leaves in the
    transparency-log tree written in the same transaction as ``append`` writes them (the store's ``_seal``).
    Every stream is new (version 1), so the per-stream version check that ``append`` makes could not fail;
    ``store.verify()`` checks the chain, the authenticators and the tree after.
    """
    store = ledger.store
    meta_json = encode_meta({"agent": AGENT, "source": "cli"})
    written = 0
    while written < count:
        todo = min(FILL_BATCH, count - written)
        with store.write_transaction() as cur:
            cur.execute(HEAD)
            position, prev_hash, last_at = cur.fetchone()
            tree = store._compact(cur, position)
            recorded_at = max(format_ts(ledger.clock()), last_at)
            rows = []
            for _ in range(todo):
                while True:
                    text, tags, category = corpus.block()
                    block_id = memory.block_id_for(text)
                    if block_id not in seen:
                        seen.add(block_id)
                        break
                event = MemoryRemembered(block_id=block_id, content=text, tags=tags, category=category)
                [row] = chain_rows(
                    position=position,
                    version=0,
                    stream=memory.stream_for(block_id),
                    recorded_at=recorded_at,
                    prev_hash=prev_hash,
                    meta_json=meta_json,
                    encoded=[encode(event)],
                )
                rows.append(row)
                position, prev_hash = row[0], row[9]
            cur.executemany(INSERT, rows)
            store._seal(cur, tree, rows)
        store._forget_head()
        written += todo
        progress(todo)
    return written
