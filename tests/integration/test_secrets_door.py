"""Credentials at the door (issue 26, point 4), through the façade and the console on a real SQLite file and a
real PostgreSQL schema: each kind is refused on every command that takes caller text — memory, search and recall
queries, task notes and context, brain contributions and queries — naming the kind and the field, never the
credential; nothing is appended, and the credential is in no file under the ledger's home and nowhere in a
``pg_dump`` of its schema. ``redact`` stores the placeholder, ``off`` stores the text (which the same file and dump
checks then find), and texts that only talk about keys are stored."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from api.cli import app
from ledger.core.errors import SecretInText
from ledger.core.events import MemoryRemembered, MemorySearched, TaskWorkRecorded
from ledger.memory.decisions import normalise
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.secret_samples import BENIGN, SAMPLES, Sample, leaked_into_dump, leaked_into_files

ALICE = Actor("alice", "cli")
OPERATOR = Actor("operator", "cli", admin=True)
UPDATE = {  # a managed update that passes its checks, with the notes under test added to it
    "progress_made": "Refresh tokens now rotate on every use; the old one is revoked.",
    "files_modified": ["src/auth/refresh.py"],
}


def commands(ledger: Ledger, sid: str, block_id: str) -> dict[str, tuple[str, Callable[[str], Any]]]:
    """Every command that takes caller text: its name -> (the field a refusal names, a call with ``text`` there)."""
    return {
        "memory_remember": ("content", lambda text: ledger.remember(ALICE, text, ["ops"], sid)),
        "memory_supersede": ("content", lambda text: ledger.supersede(ALICE, block_id, text, sid)),
        "memory_outcome note": ("note", lambda text: ledger.outcome(ALICE, [block_id], 0.9, sid, note=text)),
        "memory_search": ("query", lambda text: ledger.search(ALICE, sid, text)),
        "memory_recall": ("query", lambda text: ledger.recall(ALICE, text, session_id=sid)),
        "clock_in focus": ("focus", lambda text: ledger.clock_in(ALICE, "dev", focus=text)),
        "task_create dna": ("dna.notes", lambda text: ledger.task_create(ALICE, "t-new", "New", dna={"notes": text})),
        "task_update_dna": ("set.blockers", lambda text: ledger.task_update_dna(ALICE, "t-1", {"blockers": text})),
        "manage_task notes": (
            "work_notes",
            lambda text: ledger.manage_task(ALICE, "update", {"task_id": "t-1", "work_notes": text, **UPDATE}, sid),
        ),
        "manage_context insight": (
            "insight",
            lambda text: ledger.manage_context(
                ALICE, "add_insight", {"task_id": "t-1", "insight": text, "category": "pattern"}, sid
            ),
        ),
        "brain contribution": ("prompt", lambda text: ledger.brain.ask(ALICE, text, contribute=True)),
        "brain query context": (
            "context",
            lambda text: ledger.brain.ask(ALICE, "what do we know about deploys?", context=text, session_id=sid),
        ),
    }


def prepared(ledger: Ledger) -> tuple[str, str]:
    """A session, a block and a task to act on, and the search index and snapshots written once."""
    sid = ledger.clock_in(ALICE, "dev").session_id
    block_id = ledger.remember(ALICE, "Deploys go through the staging pipeline first.", ["ops"], sid).block_id
    ledger.task_create(ALICE, "t-1", "Refresh tokens")
    ledger.search(ALICE, sid, "staging pipeline")
    ledger.brain.ask(ALICE, "what do we know about the staging pipeline?", session_id=sid)
    return sid, block_id


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.kind)
def test_each_kind_is_refused_everywhere_and_left_in_no_file(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, sample: Sample
) -> None:
    ledger = make_ledger(db_url, snapshot_every_events=1)
    sid, block_id = prepared(ledger)
    head = ledger.store.head()
    for name, (field, call) in commands(ledger, sid, block_id).items():
        with pytest.raises(SecretInText) as caught:
            call(sample.text)
        error = caught.value
        assert [(path, kind) for path, kind, _, _ in error.found] == [(field, sample.kind)], (name, error.found)
        assert sample.kind in error.message and sample.needle not in str(error), name
        assert ledger.store.head() == head, f"{name} appended something"
    ledger.compliance_report()  # the read models fold and snapshot again after the refusals
    assert leaked_into_files(tmp_path, sample.needle) == []
    if db_url.startswith("postgresql"):
        assert not leaked_into_dump(db_url, sample.needle)


def test_off_stores_the_credential_and_the_checks_find_it(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control of the test above: with the scan off (and free text stored in the clear, as before encryption)
    the credential is appended, and the very checks that found nothing there find it in the database's files
    (SQLite) and in the schema's dump (PostgreSQL)."""
    ledger = make_ledger(db_url, secret_scan="off")
    monkeypatch.setattr(ledger.kernel.keys, "seal", lambda *args, **kwargs: False)
    sid = ledger.clock_in(ALICE, "dev").session_id
    for sample in SAMPLES:
        assert ledger.remember(ALICE, sample.text, ["ops"], sid).status == "created"
    for sample in SAMPLES:
        if db_url.startswith("postgresql"):
            assert leaked_into_dump(db_url, sample.needle), sample.kind
        else:
            assert leaked_into_files(tmp_path, sample.needle), sample.kind


def test_redact_stores_the_placeholder_in_every_kind_of_text(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url, secret_scan="redact")
    sid = ledger.clock_in(ALICE, "dev").session_id
    ledger.task_create(ALICE, "t-1", "Refresh tokens")
    for sample in SAMPLES:
        stored = ledger.remember(ALICE, sample.text, ["ops"], sid)
        placeholder = f"[REDACTED:{sample.kind}]"
        block = ledger.memory_block(stored.block_id).block
        assert placeholder in block.content and sample.needle not in block.content
        # the id is the stored text's, not the credential's
        assert stored.block_id == ledger.kernel.block_id(normalise(block.content))
        ledger.search(ALICE, sid, sample.text)
        ledger.manage_task(ALICE, "update", {"task_id": "t-1", "work_notes": sample.text, **UPDATE}, sid)
    queries = [e.event.query for e in ledger.store.iter_events(types=[MemorySearched.type_name])]
    notes = [e.event.params["work_notes"] for e in ledger.store.iter_events(types=[TaskWorkRecorded.type_name])]
    for sample in SAMPLES:
        assert any(f"[REDACTED:{sample.kind}]" in q for q in queries)
        assert any(f"[REDACTED:{sample.kind}]" in n for n in notes)
    github = next(s for s in SAMPLES if s.kind == "github_token")
    thought = ledger.brain.ask(ALICE, f"The release job signs its tags with {github.needle} too.", contribute=True)
    assert thought.trace.contribution == "stored"
    assert ledger.memory_block(thought.trace.thought_id or "").block.content == (
        "The release job signs its tags with [REDACTED:github_token] too."
    )
    assert ledger.verify().ok
    for sample in SAMPLES:
        assert leaked_into_files(tmp_path, sample.needle) == []
        if db_url.startswith("postgresql"):
            assert not leaked_into_dump(db_url, sample.needle)


def test_texts_that_only_talk_about_keys_are_stored(make_ledger: LedgerFactory, db_url: str) -> None:
    ledger = make_ledger(db_url)
    sid = ledger.clock_in(ALICE, "dev").session_id
    for text in BENIGN:
        assert ledger.remember(ALICE, text, ["ops"], sid).status == "created"
        ledger.search(ALICE, sid, text)
    stored = [e.event.content for e in ledger.store.iter_events(types=[MemoryRemembered.type_name])]
    assert all(text in stored for text in BENIGN)


def test_the_console_refuses_too(make_ledger: LedgerFactory, db_url: str, tmp_path: Path) -> None:
    ledger = make_ledger(db_url)
    block_id = ledger.remember(ALICE, "Backups run weekly.", ["ops"]).block_id
    head = ledger.store.head()
    github = next(s for s in SAMPLES if s.kind == "github_token")
    calls = {
        "content": ["memory", "supersede", block_id, github.text],
        "reason": ["memory", "forget", block_id, "--reason", github.text],
        "dna.notes": ["task", "create", "t-1", "Rotate keys", "--dna", json.dumps({"notes": github.text})],
        "title": ["task", "create", "t-1", github.text],
    }
    for field, args in calls.items():
        result = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", db_url, *args])
        assert result.exit_code != 0, (field, result.stdout)
        assert f"{field}, line 1" in result.stderr and "(github_token)" in result.stderr, (field, result.stderr)
        assert github.needle not in result.stdout + result.stderr
        assert ledger.store.head() == head, f"{args} appended something"
