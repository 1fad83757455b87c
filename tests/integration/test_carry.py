"""Carrying a ledger written before encryption into a new, encrypted one (issue 26, point 5), on real SQLite files
(and one PostgreSQL variant): a block named by ``--without`` leaves no byte in the new ledger's home, the other
live blocks are found by search there, encrypted; ``LedgerCarried`` holds the old head's note, which opens with the
old ledger's vkey and names its head; a ledger that is not new, or an old ledger that does not verify, is refused
and nothing changes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.bootstrap import initialise
from api.cli import app
from api.settings import Settings
from ledger.audit.carry import opened_by
from ledger.core.errors import Conflict, IntegrityViolation, InvalidInput, SecretInText
from ledger.core.events import LedgerCarried, MemoryRemembered
from ledger.memory import decisions as memory
from ledger.service import Actor, Ledger
from tests.secret_samples import SAMPLES, leaked_into_files

ALICE = Actor("alice", "cli")
OPERATOR = Actor("operator", "cli", admin=True)
CANARY = "wuzzlethorpe"  # the block left behind: in no file of the new ledger
KEPT = "gribblenook"  # a plaintext block carried
LATER = "snorkelbane"  # a block written after encryption, carried
GONE = "flimbertash"  # forgotten in the old ledger
SHELVED = "quorblemint"  # archived in the old ledger: carried, archived here


_OPENED: list[Ledger] = []


@pytest.fixture(autouse=True)
def _dispose() -> Iterator[None]:
    """Every ledger a test made is closed after it."""
    yield
    while _OPENED:
        _OPENED.pop().store.dispose()


def make(home: Path, url: str | None = None) -> Ledger:
    settings = Settings(home=home, database_url=url or f"sqlite:///{home / 'ledger.db'}", semantic=False)
    ledger, _ = initialise(settings, seed_new=True)
    _OPENED.append(ledger)
    return ledger


def legacy_block(ledger: Ledger, content: str, tags: list[str]) -> str:
    """A block written as before encryption: plaintext in the log, under its content-hash id."""
    store = ledger.kernel.store
    cipher, store.cipher = store.cipher, None
    block_id = memory.block_id_for(content)
    try:
        store.append(
            f"block:{block_id}", 0, [MemoryRemembered(block_id=block_id, content=content, tags=tags)], {"agent": "al"}
        )
    finally:
        store.cipher = cipher
    return block_id


def old_ledger(home: Path, url: str | None = None) -> tuple[Ledger, dict[str, str]]:
    home.mkdir()
    old = make(home, url)
    ids = {
        "canary": legacy_block(old, f"The customer {CANARY} lives at 3 Elm Row.", ["crm"]),
        "kept": legacy_block(old, f"Deploys go out on Tuesdays after the {KEPT} check.", ["ops"]),
        "gone": legacy_block(old, f"An obsolete {GONE} rule.", ["ops"]),
    }
    ids["later"] = old.remember(
        ALICE, f"The {LATER} cache is warmed at start.", ["perf"], category="knowledge"
    ).block_id
    ids["erased"] = old.remember(ALICE, "A note erased before the move.", []).block_id
    ids["shelved"] = legacy_block(old, f"The {SHELVED} runbook, archived.", ["ops"])
    old.archive_block(OPERATOR, ids["shelved"], "replaced by the new runbook")
    old.forget(OPERATOR, ids["gone"], "obsolete")
    old.erase_block(OPERATOR, ids["erased"], "erasure request #1")
    return old, ids


def test_carrying_leaves_the_named_block_behind_and_brings_the_rest_encrypted(tmp_path: Path) -> None:
    old, ids = old_ledger(tmp_path / "old")
    assert leaked_into_files(tmp_path / "old", CANARY)  # the control: the old log keeps the plaintext
    old_head = old.store.head()
    (tmp_path / "new").mkdir()
    new = make(tmp_path / "new")
    before = new.store.head()[0]

    dry = new.carry_from(OPERATOR, old, [ids["canary"]], dry_run=True)
    assert dry.position == 0 and new.store.head()[0] == before  # a dry run writes nothing

    result = new.carry_from(OPERATOR, old, [ids["canary"]])

    assert old.store.head() == old_head and old.transparency.latest() is None  # the old ledger is only read
    assert (result.carried, result.archived) == (3, 1) and result.left_out["without"] == [ids["canary"]]
    assert result.left_out["forgotten"] == [ids["gone"]] and result.left_out["erased"] == [ids["erased"]]
    assert len(result.left_out["present"]) == 10  # the constitution: init wrote the same texts here
    new.store.dispose()
    assert not leaked_into_files(tmp_path / "new", CANARY)

    new = make(tmp_path / "new")  # opened again, as the next command would
    with new.store.engine.connect() as conn:  # the log holds the carried texts encrypted (the index has the words)
        for word in (KEPT, LATER):
            assert conn.exec_driver_sql(f"SELECT count(*) FROM events WHERE data LIKE '%{word}%'").scalar() == 0
    assert new.verify().ok
    for word in (KEPT, LATER):
        [hit] = new.memory_lookup(word).results
        assert hit.block_id not in ids.values()  # a keyed id of this ledger
    assert new.memory_lookup(CANARY).results == [] and new.memory_lookup(SHELVED).results == []  # archived here
    [shelved] = new.memory_blocks(archived=True).blocks
    assert shelved.block_id not in ids.values()
    [rec] = list(new.store.iter_events(types=[LedgerCarried.type_name]))
    carried = rec.event
    assert isinstance(carried, LedgerCarried)
    assert carried.vkey == old.tlog_vkey() and carried.origin == old.tlog_origin()
    assert (carried.head_position, carried.head_hash) == old_head
    assert (carried.blocks_carried, carried.blocks_archived, carried.blocks_left_out) == (3, 1, 13)
    assert carried.left_out["without"] == [ids["canary"]]
    head = opened_by(carried.vkey, carried.checkpoint)  # the note opens with the old ledger's key
    assert head.origin == old.tlog_origin() and head.size == old_head[0]
    assert head.root == old.store.tree_root(old_head[0])
    [kept] = new.memory_lookup(KEPT).results
    source = new.memory_block(kept.block_id)
    assert "ops" in source.block.tags

    with pytest.raises(Conflict, match="not new"):  # a second carry: refused, nothing written
        new.carry_from(OPERATOR, old, [])
    assert new.store.head()[0] == rec.position


def test_a_ledger_in_use_is_refused_and_unchanged(tmp_path: Path) -> None:
    old, _ = old_ledger(tmp_path / "old")
    (tmp_path / "new").mkdir()
    new = make(tmp_path / "new")
    new.remember(ALICE, "already in use", [])
    head = new.store.head()
    with pytest.raises(Conflict, match=r"not new .*MemoryRemembered"):
        new.carry_from(OPERATOR, old, [])
    assert new.store.head() == head


def test_an_old_ledger_that_does_not_verify_is_refused(tmp_path: Path) -> None:
    old, ids = old_ledger(tmp_path / "old")
    victim = next(r.position for r in old.store.iter_records() if r.stream == f"block:{ids['kept']}")
    with old.store.engine.begin() as conn:
        conn.exec_driver_sql("DROP TRIGGER events_reject_update")
        conn.exec_driver_sql(f"UPDATE events SET data = replace(data, 'Tuesdays', 'Fridays') WHERE position = {victim}")
    (tmp_path / "new").mkdir()
    new = make(tmp_path / "new")
    head = new.store.head()
    with pytest.raises(IntegrityViolation, match=f"does not verify at position {victim}"):
        new.carry_from(OPERATOR, old, [])
    assert new.store.head() == head


def test_unknown_ids_and_the_same_ledger_are_refused(tmp_path: Path) -> None:
    old, _ = old_ledger(tmp_path / "old")
    with pytest.raises(InvalidInput, match="same origin"):
        old.carry_from(OPERATOR, old, [])
    (tmp_path / "new").mkdir()
    new = make(tmp_path / "new")
    with pytest.raises(InvalidInput, match="blk_nope"):
        new.carry_from(OPERATOR, old, ["blk_nope"])


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_command_checks_then_carries_with_yes(tmp_path: Path) -> None:
    old, ids = old_ledger(tmp_path / "old")
    old.store.dispose()
    (tmp_path / "new").mkdir()
    assert cli(tmp_path / "new", "init")[0] == 0

    code, _, err = cli(tmp_path / "new", "carry", "--from-home", str(tmp_path / "nowhere"))
    assert code == 1 and "holds no ledger to read" in err and not (tmp_path / "nowhere").exists()
    old_db = f"sqlite:///{tmp_path / 'old' / 'ledger.db'}"
    code, _, err = cli(tmp_path / "new", "carry", "--from-home", str(tmp_path / "new"), "--from-db", old_db)
    assert code == 1 and "key files are not the ledger's" in err  # the old ledger is read with its own keys

    code, out, err = cli(tmp_path / "new", "carry", "--from-home", str(tmp_path / "old"), "--without", ids["canary"])
    assert code == 0, err
    assert "would carry 3 blocks (1 archived)" in out and "nothing written" in out

    args = ["carry", "--from-home", str(tmp_path / "old"), "--without", ids["canary"], "--yes", "--json"]
    code, out, err = cli(tmp_path / "new", *args)
    assert code == 0, err
    done = json.loads(out)
    assert done["carried"] and done["blocks_carried"] == 3 and done["left_out"]["without"] == [ids["canary"]]
    assert cli(tmp_path / "new", "verify")[0] == 0
    assert not leaked_into_files(tmp_path / "new", CANARY)

    code, _, err = cli(tmp_path / "new", *args)  # again: the ledger is no longer new
    assert code == 1 and "not new" in err

    # the recorded note holds against the old database, as README "Erasure" says an auditor checks it
    (tmp_path / "old-head.note").write_text(done["checkpoint"], encoding="utf-8")
    code, out, err = cli(tmp_path / "old", "verify", "--checkpoint", str(tmp_path / "old-head.note"))
    assert code == 0 and "tree checkpoints: 1 of 1 held" in out, err


@pytest.mark.postgres
def test_carrying_from_sqlite_into_postgresql(tmp_path: Path, pg_url: str) -> None:
    old, ids = old_ledger(tmp_path / "old")
    (tmp_path / "new").mkdir()
    new = make(tmp_path / "new", pg_url)
    result = new.carry_from(OPERATOR, old, [ids["canary"]])
    assert result.carried == 3 and new.verify().ok
    assert [h.block_id for h in new.memory_lookup(KEPT).results]
    assert new.memory_lookup(CANARY).results == []


def test_a_credential_in_an_old_block_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """The door's scan holds for carried text: a block written before the scan, holding a credential, stops the carry
    (naming the old block and what to do) with nothing written; left out with --without, the carry goes through."""
    old, _ = old_ledger(tmp_path / "old")
    sample = SAMPLES[0]
    leaked_id = legacy_block(old, sample.text, ["ops"])
    (tmp_path / "new").mkdir()
    new = make(tmp_path / "new")
    head = new.store.head()
    with pytest.raises(SecretInText, match=f"old block {leaked_id}") as refused:
        new.carry_from(OPERATOR, old, [])
    assert f"--without {leaked_id}" in (refused.value.hint or "")
    assert new.store.head() == head
    assert new.carry_from(OPERATOR, old, [leaked_id]).left_out["without"] == [leaked_id]
    new.store.dispose()
    assert not leaked_into_files(tmp_path / "new", sample.needle)
