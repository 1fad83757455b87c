"""A ledger and its witnesses (issue 24), on SQLite and PostgreSQL: a real witness (``compliance-ledger tlog witness
serve`` in a subprocess) cosigns every checkpoint the ledger signs; the cosignatures are served on ``GET /checkpoint``
and carried into proof bundles that ``tlog verify-proof --witness-vkey --min-cosignatures`` checks; after an insider
rewrites the database the witness refuses, ``tlog checkpoint`` exits non-zero quoting it, and ``serve`` does not
start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from api.settings import Settings
from ledger.audit.transparency import WitnessQuorumFailed
from ledger.core.tlog import bundle, note
from ledger.service import Ledger
from tests.conftest import LedgerFactory
from tests.integration.test_tlog_ledger import grow, insider_rewrite
from tests.server_support import HTTP_TIMEOUT, READY_WITHIN, compliance_ledger_serve, running
from tests.witness_support import bare_env, cli, witness_subprocess


def make_witness(tmp_path: Path, name: str) -> tuple[Path, str]:
    """A witness key made by the CLI; returns the key file and the vkey it printed."""
    key = tmp_path / f"{name.replace('/', '_')}.key"
    made = cli("tlog", "witness", "init", "--key", str(key), "--name", name, env=bare_env(tmp_path / "wh"))
    assert made.returncode == 0, made.stderr
    return key, made.stdout.strip()


def ledger_env(home: Path, url: str, **extra: str) -> dict[str, str]:
    # the retrieval of the ledgers this test made (conftest's LEDGER_SEMANTIC): a decision setting serve checks
    semantic = {"LEDGER_SEMANTIC": os.environ["LEDGER_SEMANTIC"]} if "LEDGER_SEMANTIC" in os.environ else {}
    return {**bare_env(home), "LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": url, **semantic, **extra}


def test_witnesses_cosign_every_checkpoint_and_bundles_carry_them(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    first = make_ledger(db_url)
    grow(first, 4)
    log_vkey = first.tlog_vkey()
    (tmp_path / "wh").mkdir()
    key1, vkey1 = make_witness(tmp_path, "witness.example/w1")
    key2, vkey2 = make_witness(tmp_path, "witness.example/w2")
    env = bare_env(tmp_path / "wh")
    with (
        witness_subprocess(key1, tmp_path / "state1", log_vkey, env=env) as w1,
        witness_subprocess(key2, tmp_path / "state2", log_vkey, env=env) as w2,
    ):
        ledger = make_ledger(db_url, witnesses=f"{w1}={vkey1} {w2}={vkey2}", checkpoint_min_cosignatures=2)
        signed = ledger.sign_tlog_checkpoint()
        assert set(signed.cosigned_by) == {"witness.example/w1", "witness.example/w2"}
        grow(ledger, 3, "more")
        again = ledger.sign_tlog_checkpoint()  # the witnesses need a consistency proof from the size they hold
        settings = Settings(home=tmp_path, checkpoint_every_events=0, checkpoint_every_minutes=0)
        with running(ledger, settings) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
            served = http.get(f"{base}/checkpoint").text
        position = again.size - 1
        text = ledger.tlog_bundle(position)
        leaf = ledger.store.leaf_data(position)
    witnesses = [note.parse_vkey(vkey1), note.parse_vkey(vkey2)]
    opened = note.open_checkpoint(served, note.parse_vkey(log_vkey), witnesses)
    assert served == again.note and opened.checkpoint.size == again.size and len(opened.cosignatures) == 2
    assert len(bundle.verify(text, leaf, note.parse_vkey(log_vkey), witnesses, 2).witnesses) == 2
    proof_file = tmp_path / "p.tlog-proof"
    proof_file.write_text(text)
    args = ["tlog", "verify-proof", str(proof_file), "--vkey", log_vkey, "--leaf", leaf.hex()]
    ok = cli(*args, "--witness-vkey", vkey1, "--witness-vkey", vkey2, "--min-cosignatures", "2", env=env)
    short = cli(*args, "--witness-vkey", vkey1, "--min-cosignatures", "2", env=env)
    assert ok.returncode == 0, ok.stderr
    assert short.returncode == 1 and "policy asks for 2" in short.stderr


def test_after_an_insider_rewrite_the_witness_refuses_and_the_ledger_fails_loudly(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    first = make_ledger(db_url)
    grow(first, 5)
    log_vkey = first.tlog_vkey()
    (tmp_path / "wh").mkdir()
    key, vkey = make_witness(tmp_path, "witness.example/w1")
    env = bare_env(tmp_path / "wh")
    with witness_subprocess(key, tmp_path / "state", log_vkey, env=env) as url:
        witnesses = f"{url}={vkey}"
        ledger: Ledger = make_ledger(db_url, witnesses=witnesses)
        cosigned = ledger.sign_tlog_checkpoint()
        assert cosigned.cosigned_by == ("witness.example/w1",)
        # The operator (the database and the key files) rewrites history and drops what the ledger kept of its
        # checkpoints: the ledger signs the forged tree, but the witness remembers the size it cosigned.
        insider_rewrite(ledger, '"note-1"', '"note-r"')
        with ledger.store.engine.begin() as conn:
            conn.exec_driver_sql("DELETE FROM tlog_checkpoints")
        grow(ledger, 1, "after")
        with pytest.raises(WitnessQuorumFailed) as caught:
            ledger.sign_tlog_checkpoint()
        assert "422" in caught.value.message and "witness.example/w1" in caught.value.message
        assert ledger.latest_tlog_checkpoint() is None  # nothing kept without the witness

        home = tmp_path
        run = subprocess.run(
            [sys.executable, "-m", "api", "tlog", "checkpoint"],
            env=ledger_env(home, db_url, LEDGER_WITNESSES=witnesses),
            capture_output=True,
            text=True,
            timeout=READY_WITHIN,
        )
        assert run.returncode != 0 and "422" in run.stderr and "witness.example/w1" in run.stderr
        served = subprocess.run(
            [sys.executable, "-m", "api", "serve", "--port", "0"],
            env=ledger_env(home, db_url, LEDGER_WITNESSES=witnesses),
            capture_output=True,
            text=True,
            timeout=READY_WITHIN,
        )
        assert served.returncode != 0 and "422" in served.stderr


def test_a_witness_that_cannot_be_reached_is_said_and_nothing_is_kept(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    grow(make_ledger(), 2)
    vkey = note.Signer("witness.example/w1", Ed25519PrivateKey.generate(), note.COSIGNATURE_V1).verifier.vkey
    cut_off = make_ledger(witnesses=f"http://127.0.0.1:9={vkey}")
    with pytest.raises(WitnessQuorumFailed, match="0 of the 1 witnesses cosigned") as caught:
        cut_off.sign_tlog_checkpoint()
    assert "127.0.0.1:9" in caught.value.message
    assert cut_off.latest_tlog_checkpoint() is None


def test_an_announced_serve_signs_a_cosigned_checkpoint_at_start(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    first = make_ledger(db_url)
    grow(first, 3)
    log_vkey = first.tlog_vkey()
    (tmp_path / "wh").mkdir()
    key, vkey = make_witness(tmp_path, "witness.example/w1")
    with (
        witness_subprocess(key, tmp_path / "state", log_vkey, env=bare_env(tmp_path / "wh")) as url,
        compliance_ledger_serve(tmp_path, db_url, LEDGER_WITNESSES=f"{url}={vkey}") as base,
        httpx.Client(timeout=HTTP_TIMEOUT) as http,
    ):
        served = http.get(f"{base}/checkpoint")
    assert served.status_code == 200
    opened = note.open_checkpoint(served.text, note.parse_vkey(log_vkey), [note.parse_vkey(vkey)])
    assert len(opened.cosignatures) == 1 and opened.checkpoint.size >= first.store.tree_size() - 1
