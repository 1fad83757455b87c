"""NUL characters and lone surrogates (issue 10, hole 4): never appended, and never able to stop search.

PostgreSQL ``text`` cannot hold U+0000. The encoder refuses any event carrying one (or a lone surrogate) whatever
the path, appending nothing; and an event that reached the database anyway (written there directly, chained
correctly) is skipped by the search index, logged and reported, instead of failing every search, recall, brain
call and replay.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from api.cli import app
from api.settings import Settings
from ledger.core import clock
from ledger.core.canonical import canonical_json, format_ts
from ledger.core.chain import StoredRecord, record_hash
from ledger.core.errors import InvalidInput
from ledger.core.events import MemoryRemembered, to_payload
from ledger.memory import decisions as memory
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.server_support import HTTP_TIMEOUT, running
from tests.store_support import insert_as_ledger

ALICE = Actor("alice", "cli")
EVIL = "evil\x00note about the database schema"


def _remembered(content: str, session_id: str | None = None) -> MemoryRemembered:
    block_id = memory.block_id_for(content.encode("utf-8", "surrogatepass").decode("latin-1"))
    return MemoryRemembered(block_id=block_id, content=content, tags=["t"], session_id=session_id)


@pytest.mark.parametrize(
    ("events", "meta", "field"),
    [
        ([_remembered("a fine block about schemas"), _remembered(EVIL)], {"agent": "alice"}, "content"),
        ([_remembered("lone \ud800 surrogate")], {"agent": "alice"}, "content"),
        ([_remembered("a fine block")], {"agent": "ali\x00ce"}, "meta.agent"),
    ],
    ids=["nul-in-second-event", "lone-surrogate", "nul-in-meta"],
)
def test_the_encoder_refuses_unstorable_text_and_appends_nothing(
    ledger: Ledger, events: list[MemoryRemembered], meta: dict[str, str], field: str
) -> None:
    head = ledger.store.head()
    with pytest.raises(InvalidInput) as caught:
        ledger.store.append("block:multi", 0, events, meta)
    assert field in caught.value.message and caught.value.hint
    assert ledger.store.head() == head  # the clean first event was not appended either


def test_the_service_refuses_nul_text_before_recording(ledger: Ledger) -> None:
    sid = ledger.clock_in(ALICE, "dev").session_id
    head = ledger.store.head()
    with pytest.raises(InvalidInput, match="NUL"):
        ledger.remember(ALICE, EVIL, [], sid)
    with pytest.raises(InvalidInput, match="agent_name"):  # a brain call is several appends: checked before all
        ledger.brain.ask(ALICE, "what do we know about schemas?", agent_name="bad\ud800name")
    assert ledger.store.head() == head


def force_event(ledger: Ledger, event: MemoryRemembered) -> int:
    """Append ``event`` straight into the database, correctly chained and authenticated, as a ledger from before
    the text checks could have written it (a row nobody authenticated is refused before the index sees it)."""
    position, prev_hash = ledger.store.head()
    fields = dict(
        position=position + 1,
        stream=memory.stream_for(event.block_id),
        version=1,
        type=event.type_name,
        schema_version=event.schema_version,
        data_json=canonical_json(to_payload(event)),
        meta_json=canonical_json({"agent": "mallory", "source": "sql"}),
        recorded_at=format_ts(clock.now()),
        prev_hash=prev_hash,
    )
    insert_as_ledger(ledger.store, StoredRecord(*fields.values(), record_hash(**fields)))  # type: ignore[arg-type]
    return position + 1


def test_a_nul_event_in_the_database_is_skipped_and_reported_not_fatal(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = make_ledger(db_url)
    sid = ledger.clock_in(ALICE, "dev").session_id
    good = ledger.remember(ALICE, "The database schema lives in ledger/storage.py for every backend.", [], sid)
    nul = force_event(ledger, _remembered(EVIL))
    assert ledger.verify().ok  # a well-chained row: only the index can tell
    # PostgreSQL text cannot hold the NUL: the index skips it there; SQLite can, and indexes it
    skipped = [nul] if ledger.store.dialect == "postgresql" else []

    with caplog.at_level(logging.WARNING, logger="projections.search.index"):
        found = ledger.search(ALICE, sid, "database schema")
    assert good.block_id in [h.block_id for h in found.results]
    assert all(f"position {p}" in caplog.text for p in skipped)
    recalled = ledger.recall(ALICE, "database schema", "attention", 5, sid)
    assert recalled.blocks
    answer = ledger.brain.ask(ALICE, "what do we know about the database schema?")
    assert answer.trace.thoughts_retrieved >= 1
    assert [k.position for k in ledger.index.skips()] == skipped
    assert all(k.reason for k in ledger.index.skips())

    # replay rebuilds the index: it skips the same event again and says so
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", db_url, "replay", "--json"])
    assert result.exit_code == 0, result.output
    assert [k["position"] for k in json.loads(result.stdout)["index_skipped"]] == skipped
    assert [k.position for k in ledger.index.skips()] == skipped

    doctor = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", db_url, "doctor"])
    assert doctor.exit_code == (1 if skipped else 0), doctor.output
    assert all(f"position {p}" in doctor.output for p in skipped)
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        health = http.get("/health").json()
        rest_sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        searched = http.post("/memory/search", json={"query": "database schema", "session_id": rest_sid})
    assert health["index_skipped"] == skipped
    assert searched.status_code == 200


def test_a_well_formed_batch_after_a_skip_is_still_indexed(make_ledger: LedgerFactory, db_url: str) -> None:
    ledger = make_ledger(db_url)
    sid = ledger.clock_in(ALICE, "dev").session_id
    force_event(ledger, _remembered(EVIL))
    later = ledger.remember(ALICE, "Indexes are rebuilt from the log by replay, never edited by hand.", [], sid)
    hits = ledger.search(ALICE, sid, "indexes rebuilt replay").results
    assert [h.block_id for h in hits] == [later.block_id]


REST_CASES = [
    ("POST", "/memory/blocks", {"content": "evil\x00note"}, None, "field 'content'"),
    ("POST", "/memory/blocks", {"content": "fine text", "tags": ["ok", "b\ud800d"]}, None, "field 'tags.1'"),
    ("POST", "/api/v1/memory", {"prompt": "what is the schema?", "agent_name": "x\udcffy"}, None, "'agent_name'"),
    ("GET", "/events", None, {"stream": "session:\x00"}, "query parameter 'stream'"),
    ("GET", "/memory/blocks/blk%00", None, None, "path parameter 'block_id'"),
]


def test_rest_refuses_nul_and_lone_surrogates_naming_the_field_and_appends_nothing(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        head = ledger.store.head()
        for method, path, body, params, field in REST_CASES:
            content = None if body is None else json.dumps(body).encode()  # \\uXXXX escapes, as a client sends them
            answer = http.request(
                method, path, content=content, params=params, headers={"Content-Type": "application/json"}
            )
            assert answer.status_code == 422, (path, answer.text)
            error = answer.json()["error"]
            assert error["code"] == "invalid_input" and field in error["message"], error
            assert "NUL" in error["hint"]
        assert ledger.store.head() == head


@pytest.mark.anyio
async def test_mcp_refuses_nul_and_lone_surrogate_arguments_naming_them(make_ledger: LedgerFactory) -> None:
    from mcp import Client

    from api.mcp.server import build_mcp

    ledger = make_ledger()
    async with Client(build_mcp(ledger, agent="alice", open_default_session=True)) as client:
        head = ledger.store.head()
        nul = await client.call_tool("memory_remember", {"content": "evil\x00note"})
        tags = await client.call_tool("memory_remember", {"content": "fine", "tags": ["a", "\ud800"]})
        brain = await client.call_tool("query_brain", {"prompt": "schema?", "context": "bad\udc80"})
        after = ledger.store.head()
    assert nul.is_error and "argument 'content' contains a NUL" in nul.content[0].text  # type: ignore[union-attr]
    assert tags.is_error and "argument 'tags.1'" in tags.content[0].text  # type: ignore[union-attr]
    assert brain.is_error and "argument 'context'" in brain.content[0].text  # type: ignore[union-attr]
    assert after == head


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_cli_refuses_undecodable_arguments_and_json_with_nul(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    base = ["--home", str(tmp_path), "--db", str(ledger.store.engine.url)]
    head = ledger.store.head()
    # bytes that are not UTF-8 reach Python's argv as lone surrogates (surrogateescape)
    option = CliRunner().invoke(app, [*base, "task", "create", "t1", "title", "--role", "dev\udcff"])
    argument = CliRunner().invoke(app, [*base, "task", "create", "t1", "bad\udcfftitle"])
    dna = CliRunner().invoke(app, [*base, "task", "create", "t1", "title", "--dna", '{"note": "a\\u0000b"}'])
    proof = tmp_path / "proof.txt"
    proof.write_text("===ODYSSEAN_ANCHOR_PROOF::v5.0===\x00", encoding="utf-8")
    anchored = CliRunner().invoke(app, [*base, "anchor", "validate", str(proof), "--session", "s", "--agent", "a"])
    assert (option.exit_code, argument.exit_code, dna.exit_code, anchored.exit_code) == (2, 2, 2, 2)
    assert "--role" in option.output and "lone surrogate" in option.output
    assert "argument" in argument.output
    assert "--dna.note" in dna.output and "NUL" in dna.output
    assert "proof.txt" in anchored.output and "NUL" in anchored.output
    assert ledger.store.head() == head
