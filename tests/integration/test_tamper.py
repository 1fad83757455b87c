"""An attacker at the database: rows off the chain, truncation, rewrites, an emptied table (issue 10, holes 1-2).

The database itself refuses a row that does not extend the chain; a row forced in anyway (triggers disabled,
as a superuser or an old database could) is never obeyed and ``verify`` reports it. What the chain alone cannot
tell — a clean truncation, a rewrite re-hashed to the end, an emptied table — a signed checkpoint kept outside
the database does.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from api.cli import app
from ledger.audit import checkpoints
from ledger.core import clock as _clock
from ledger.core import receipt_key, signing
from ledger.core.canonical import canonical_json, format_ts
from ledger.core.chain import GENESIS_HASH, record_hash, verify_chain
from ledger.core.errors import Conflict
from ledger.core.events import MemorySearched
from ledger.core.storage import RowKey, SqlEventStore, make_engine
from ledger.service import Actor, Ledger
from projections.search import SearchIndex
from tests.conftest import LedgerFactory

ALICE = Actor("alice", "mcp")
INSERT = (
    "INSERT INTO events (position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_WITH_MAC = INSERT.replace(", hash)", ", hash, mac)").replace("?)", "?, ?)")


def raw(store: SqlEventStore, statement: str, params: Sequence[Any] = ()) -> None:
    """Run SQL straight on the database, behind the store's back."""
    with store.engine.begin() as conn:
        conn.exec_driver_sql(store.sql(statement), tuple(params))


def disable_chain_triggers(store: SqlEventStore) -> None:
    """What an attacker with DDL rights (or a database from before the triggers) can do: on the events, whose rows
    hold their authenticators and tree hashes."""
    if store.dialect == "sqlite":
        for name in ("events_require_chain", "events_reject_update", "events_reject_delete"):
            raw(store, f"DROP TRIGGER IF EXISTS {name}")
    else:
        raw(store, "ALTER TABLE events DISABLE TRIGGER USER")


def forged_search(store: SqlEventStore, session_id: str, position: int, version: int, prev_hash: str) -> list[Any]:
    """A row granting ``session_id`` a token, hashed correctly for ``position`` after ``prev_hash``."""
    fields: dict[str, Any] = dict(
        position=position,
        stream=f"session:{session_id}",
        version=version,
        type=MemorySearched.type_name,
        schema_version=MemorySearched.schema_version,
        data_json=canonical_json(
            {
                "session_id": session_id,
                "query": "forged",
                "limit": 10,
                "result_ids": [],
                "count": 3,
                "token_expires_at": None,
            }
        ),
        meta_json=canonical_json({"agent": "alice", "source": "mcp", "session_id": session_id}),
        recorded_at=format_ts(_clock.now()),
        prev_hash=prev_hash,
    )
    return [*fields.values(), record_hash(**fields)]


def session_with_no_search(ledger: Ledger) -> tuple[str, int]:
    """An open session that has not searched; returns its id and its stream's version."""
    sid = ledger.clock_in(ALICE, "dev").session_id
    return sid, ledger.store.load_stream(f"session:{sid}").version


# --- hole 1: rows off the chain -------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["at_0", "negative", "beyond_head", "at_head_plus_one_wrong_prev"])
def test_the_database_refuses_a_row_that_does_not_extend_the_chain(ledger: Ledger, where: str) -> None:
    sid, version = session_with_no_search(ledger)
    head, head_hash = ledger.store.head()
    position, prev = {
        "at_0": (0, GENESIS_HASH),
        "negative": (-5, GENESIS_HASH),
        "beyond_head": (head + 2, head_hash),
        "at_head_plus_one_wrong_prev": (head + 1, "f" * 64),
    }[where]
    row = forged_search(ledger.store, sid, position, version + 1, prev)
    with pytest.raises(sa.exc.DBAPIError, match="hash chain"):
        raw(ledger.store, INSERT, row)
    assert ledger.store.head() == (head, head_hash)
    assert ledger.assert_compliance(ALICE, sid).status == "FAIL"


def test_a_row_that_extends_the_chain_is_accepted_by_the_database_but_not_by_the_ledger(ledger: Ledger) -> None:
    # The trigger checks the link, not who wrote it; the row has no authenticator, so the ledger refuses it
    # (tests/integration/test_row_authenticators.py covers the gate, projections and appends after it).
    sid, version = session_with_no_search(ledger)
    head, head_hash = ledger.store.head()
    raw(ledger.store, INSERT, forged_search(ledger.store, sid, head + 1, version + 1, head_hash))
    assert ledger.store.head()[0] == head + 1
    report = ledger.verify()
    assert not report.ok and report.first_bad_position == head + 1
    assert report.reason == f"the event at position {head + 1} has no authenticator"


def test_a_row_forced_in_at_position_0_is_never_obeyed_and_verify_reports_it(ledger: Ledger) -> None:
    sid, version = session_with_no_search(ledger)
    disable_chain_triggers(ledger.store)
    raw(ledger.store, INSERT, forged_search(ledger.store, sid, 0, version + 7, GENESIS_HASH))

    result = ledger.assert_compliance(ALICE, sid)
    report = ledger.verify()

    assert result.status == "FAIL" and result.reason == "no_search"
    assert not report.ok
    assert report.reason is not None and "outside 1.." in report.reason
    assert report.first_bad_position == 0
    for after in (-10, -1, 0):  # no read from before the chain's start shows it either
        assert min(r.position for r in ledger.store.iter_records(after)) == 1
        assert min(e.position for e in ledger.store.iter_events(after)) == 1


def test_a_row_forced_in_at_position_0_in_the_streams_next_slot_fails_the_gate_closed(ledger: Ledger) -> None:
    sid, version = session_with_no_search(ledger)
    disable_chain_triggers(ledger.store)
    raw(ledger.store, INSERT, forged_search(ledger.store, sid, 0, version + 1, GENESIS_HASH))
    head = ledger.store.head()

    with pytest.raises(Conflict):  # the forged row holds the version the decision needs: no PASS, no event
        ledger.assert_compliance(ALICE, sid)

    assert ledger.store.head() == head


def test_a_row_forced_in_beyond_the_head_is_reported_as_a_gap(ledger: Ledger) -> None:
    sid, version = session_with_no_search(ledger)
    head, head_hash = ledger.store.head()
    disable_chain_triggers(ledger.store)
    raw(ledger.store, INSERT, forged_search(ledger.store, sid, head + 3, version + 1, head_hash))

    report = ledger.verify()

    assert not report.ok
    assert report.first_bad_position == head + 1
    assert report.reason == f"position {head + 1} is missing"


def test_verify_requires_the_ledger_to_begin_with_its_initialisation(make_ledger: LedgerFactory, db_url: str) -> None:
    ledger = make_ledger(db_url)
    ledger.clock_in(ALICE, "dev")
    assert ledger.verify().ok
    store = ledger.store
    disable_chain_triggers(store)
    # Rebuild the whole log without its first event, re-hashed from the genesis: a self-consistent chain.
    records = list(store.iter_records())
    with store.engine.connect() as conn:  # each position's authenticator, kept for the row that takes its place
        macs = dict(conn.exec_driver_sql("SELECT position, mac FROM events").all())
    raw(store, "DELETE FROM events")
    prev = GENESIS_HASH
    for n, rec in enumerate(records[1:], 1):
        fields: dict[str, Any] = dict(
            position=n,
            stream=rec.stream,
            version=rec.version,
            type=rec.type,
            schema_version=rec.schema_version,
            data_json=rec.data_json,
            meta_json=rec.meta_json,
            recorded_at=rec.recorded_at,
            prev_hash=prev,
        )
        prev = record_hash(**fields)
        raw(store, INSERT_WITH_MAC, [*fields.values(), prev, macs[n]])
    assert verify_chain(SqlEventStore(store.engine, row_key=None).iter_records()).ok  # the chain alone is intact

    report = ledger.verify()

    # None of the re-hashed rows is the one its authenticator was made for; the check that position 1 holds the
    # LedgerInitialised stays behind it.
    assert not report.ok
    assert report.first_bad_position == 1
    assert report.reason == "the event at position 1 has a wrong authenticator"


def test_verify_reports_an_emptied_table(ledger: Ledger) -> None:
    disable_chain_triggers(ledger.store)
    raw(ledger.store, "DELETE FROM events")

    report = ledger.verify()

    assert not report.ok and report.first_bad_position == 1
    assert report.reason is not None and "LedgerInitialised" in report.reason


# --- hole 2: what only a checkpoint kept elsewhere can tell ---------------------------------------------------


def busy_ledger(ledger: Ledger, n: int = 6) -> str:
    sid = ledger.clock_in(ALICE, "dev").session_id
    for i in range(n):
        ledger.remember(ALICE, f"what alice learned, note {i}", ["alice"], sid)  # the tag is stored in the clear
    return sid


def checkpoint_source(ledger: Ledger, where: str = "kept-elsewhere.jsonl:1") -> checkpoints.Source:
    return checkpoints.Source(where, ledger.checkpoint())


def rewrite_from(store: SqlEventStore, position: int, old: str, new: str) -> None:
    """Rewrite the event at ``position`` and re-hash every event after it: a self-consistent forged chain."""
    prev = store.get(position - 1)
    prev_hash = prev.hash if prev else GENESIS_HASH
    for rec in list(store.iter_records(position - 1)):
        data = rec.data_json.replace(old, new) if rec.position == position else rec.data_json
        fields: dict[str, Any] = dict(
            position=rec.position,
            stream=rec.stream,
            version=rec.version,
            type=rec.type,
            schema_version=rec.schema_version,
            data_json=data,
            meta_json=rec.meta_json,
            recorded_at=rec.recorded_at,
            prev_hash=prev_hash,
        )
        prev_hash = record_hash(**fields)
        raw(
            store,
            "UPDATE events SET data = ?, prev_hash = ?, hash = ? WHERE position = ?",
            (data, fields["prev_hash"], prev_hash, rec.position),
        )


def truncate_tail(store: SqlEventStore, keep: int) -> None:
    """Cut the log after ``keep``, its authenticators and its tree (in the rows) with it: a consistent shorter log."""
    raw(store, "DELETE FROM events WHERE position > ?", (keep,))


TAMPERS = ["tail_truncation", "truncate_and_reappend", "rewrite_and_rehash", "emptied_table"]


@pytest.mark.parametrize("tamper", TAMPERS)
def test_a_checkpoint_kept_elsewhere_reveals_what_the_chain_alone_cannot(ledger: Ledger, tamper: str) -> None:
    busy_ledger(ledger)
    signed = checkpoint_source(ledger)
    assert signed.checkpoint is not None
    p = signed.checkpoint.position
    public = ledger.public_key()
    assert ledger.verify().ok and [f.problem for f in ledger.verify_checkpoints([signed], public)] == [None]
    disable_chain_triggers(ledger.store)

    if tamper == "tail_truncation":
        truncate_tail(ledger.store, p - 3)
    elif tamper == "truncate_and_reappend":
        truncate_tail(ledger.store, p - 3)
        busy_ledger(ledger, 4)  # the log grows back past the checkpoint, with other events
    elif tamper == "rewrite_and_rehash":
        rewrite_from(ledger.store, p - 4, '"tags":["alice"]', '"tags":["mallory"]')
    else:
        raw(ledger.store, "DELETE FROM events")

    chain = ledger.verify()
    [finding] = ledger.verify_checkpoints([signed], public)

    if tamper in {"tail_truncation", "truncate_and_reappend"}:
        assert chain.ok, chain  # the shorter log is self-consistent: only the checkpoint can tell
    elif tamper == "rewrite_and_rehash":
        assert not chain.ok and chain.first_bad_position == p - 4  # the rewritten rows' authenticators fail
    assert not finding.ok and finding.where == "kept-elsewhere.jsonl:1"
    assert finding.problem is not None
    expected = "rewritten" if tamper in {"truncate_and_reappend", "rewrite_and_rehash"} else "removed"
    assert expected in finding.problem


def test_a_rollback_to_an_old_copy_of_the_database_is_revealed_by_a_later_checkpoint(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    busy_ledger(ledger, 2)
    database = Path(str(ledger.store.engine.url.database))
    ledger.store.engine.dispose()
    backup = tmp_path / "old-copy.db"
    shutil.copy(database, backup)  # WAL is checkpointed on the last connection's close
    busy_ledger(ledger, 3)
    signed = checkpoint_source(ledger)
    ledger.store.engine.dispose()
    shutil.copy(backup, database)

    [finding] = ledger.verify_checkpoints([signed], ledger.public_key())

    assert ledger.verify().ok
    assert not finding.ok and finding.problem is not None and "removed" in finding.problem


def test_a_checkpoint_not_signed_by_the_ledger_key_fails_whatever_it_says(ledger: Ledger) -> None:
    busy_ledger(ledger, 1)
    genuine = ledger.checkpoint()
    claims = genuine.document()
    claims["checkpoint"]["position"] = genuine.position - 1
    altered = checkpoints.Source("altered", checkpoints.parse(claims))
    other_key = signing.SigningKey.generate()
    foreign = checkpoints.Source(
        "foreign",
        checkpoints.sign(other_key, position=genuine.position, head_hash=genuine.head_hash, now=_clock.now()),
    )

    findings = ledger.verify_checkpoints([altered, foreign], ledger.public_key())

    assert [f.ok for f in findings] == [False, False]
    assert "forged or was altered" in str(findings[0].problem)
    assert "not by the ledger key" in str(findings[1].problem)


# --- the auditor's commands -----------------------------------------------------------------------------------


def cli(tmp_path: Path, url: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", url, *args])
    return result.exit_code, result.stdout, result.stderr


def test_checkpoints_written_by_the_cli_verify_until_the_log_is_truncated(
    make_ledger: LedgerFactory, tmp_path: Path, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    busy_ledger(ledger, 3)
    elsewhere = tmp_path / "elsewhere"
    first = cli(tmp_path, db_url, "checkpoint", "--out", str(elsewhere / "a.jsonl"))
    busy_ledger(ledger, 3)
    second = cli(tmp_path, db_url, "checkpoint", "--out", str(elsewhere / "a.jsonl"))
    printed = cli(tmp_path, db_url, "checkpoint")
    (elsewhere / "latest.json").write_text(json.dumps(json.loads(printed[1]), indent=2))  # a pretty copy
    public = tmp_path / "ledger.pub"
    public.write_text(cli(tmp_path, db_url, "keys", "public")[1])
    good = cli(tmp_path, db_url, "verify", "--checkpoint", str(elsewhere), "--public-key", str(public))
    cli(tmp_path, db_url, "checkpoint", "--out", str(tmp_path / "checkpoints.jsonl"))  # where serve writes them
    healthy = cli(tmp_path, db_url, "doctor")
    middle = checkpoints.parse_text((elsewhere / "a.jsonl").read_text().splitlines()[0]).position

    disable_chain_triggers(ledger.store)
    truncate_tail(ledger.store, middle + 1)
    code, out, err = cli(tmp_path, db_url, "verify", "--checkpoint", str(elsewhere / "a.jsonl"))
    alone = cli(tmp_path, db_url, "verify")
    doctor = cli(tmp_path, db_url, "doctor")

    assert first[0] == second[0] == printed[0] == 0
    assert good[0] == 0 and "chain intact" in good[1] and "3 of 3 held" in good[1]
    assert healthy[0] == 0 and "checkpoints" in healthy[1]
    assert doctor[0] == 1 and "removed" in " ".join(doctor[1].split())
    assert alone[0] == 0  # the chain alone cannot tell
    assert code == 1 and "chain intact" in out and "1 of 2 held" in out
    assert f"checkpoint {elsewhere / 'a.jsonl'}:2 fails" in " ".join(err.split())
    assert "removed" in err


def test_verify_refuses_a_checkpoint_file_that_is_not_one_and_a_key_that_is_not_the_ledgers(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    busy_ledger(ledger, 1)
    url = str(ledger.store.engine.url)
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"alg": "Ed25519", "checkpoint": {"position": 1e999}}\nnot json\n')
    mine = tmp_path / "mine.jsonl"
    checkpoints.CheckpointLog(mine).append(ledger.checkpoint())
    other = tmp_path / "other.pub"
    other.write_text(signing.SigningKey.generate().public.pem)

    code, _, err = cli(tmp_path, url, "verify", "--checkpoint", str(junk))
    code_other, _, err_other = cli(tmp_path, url, "verify", "--checkpoint", str(mine), "--public-key", str(other))

    assert code == 1 and "junk.jsonl:1 fails" in err and "junk.jsonl:2 fails" in err
    assert code_other == 1 and "not by the ledger key" in err_other


def test_keys_public_prints_pem_jwk_and_both(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    url = str(ledger.store.engine.url)
    pem = cli(tmp_path, url, "keys", "public")[1]
    jwk = json.loads(cli(tmp_path, url, "keys", "public", "--format", "jwk")[1])
    both = json.loads(cli(tmp_path, url, "keys", "public", "--format", "json")[1])
    key_id = ledger.public_key().key_id
    assert signing.PublicKey.from_text(pem).key_id == key_id
    assert signing.PublicKey.from_text(json.dumps(jwk)).key_id == key_id == jwk["kid"] == both["key_id"]
    assert cli(tmp_path, url, "keys", "public", "--format", "xml")[0] == 2


def test_a_ledger_from_before_signing_keys_is_bound_to_one_by_init(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    key = receipt_key.create_key(tmp_path / "receipt.key")[0]
    store = SqlEventStore(make_engine(url), row_key=RowKey.derive(key.secret))
    old = Ledger(store=store, index=SearchIndex(store), key=key)
    old.initialise()  # as before this change: no signing key
    assert old.bound_signing_key() is None
    without = cli(tmp_path, url, "checkpoint")
    init = cli(tmp_path, url, "init")
    bound = old.bound_signing_key()
    swapped = tmp_path / "swapped.key"
    swapped.write_bytes(signing.SigningKey.generate().to_pem())
    refused = cli(tmp_path, url, "--signing-key-file", str(swapped), "init")
    store.engine.dispose()

    assert without[0] == 1 and "compliance-ledger init" in " ".join(without[2].split())
    assert init[0] == 0 and "signing key" in init[1] and "already initialised" in init[1]
    assert bound is not None and bound.key_id == signing.load_signing_key(tmp_path / "signing.key").key_id
    assert refused[0] == 1 and "not this ledger's" in refused[2] and "copy receipt.key and signing.key" in refused[2]
