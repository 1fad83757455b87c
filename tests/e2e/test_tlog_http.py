"""The transparency log from the outside (issue 24), on SQLite and PostgreSQL: a real server on loopback serves the
C2SP checkpoint, the vkey and RFC 9162 proofs; the CLI writes a bundle that `tlog verify-proof` checks with no
database and no home; `tlog follow` keeps client-side state and exits 1 naming the fork after a rewrite; `verify
--checkpoint` takes a note file and fails naming it."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

from api.cli import app
from api.settings import Settings
from ledger.core.tlog import merkle, note
from ledger.service import Actor
from tests.conftest import LedgerFactory
from tests.integration.test_tamper import disable_chain_triggers, rewrite_from
from tests.integration.test_tlog_ledger import grow, holding, insider_rewrite
from tests.server_support import HTTP_TIMEOUT, READY_WITHIN, running

ALICE = Actor("alice", "rest")


def settings_for(tmp_path: Path, **extra: object) -> Settings:
    fields: dict[str, object] = {"checkpoint_every_events": 1, "checkpoint_every_minutes": 0, **extra}
    return Settings(home=tmp_path, **fields)  # type: ignore[arg-type]


def cli(tmp_path: Path, url: str | None, *args: str) -> tuple[int, str, str]:
    prefix = ["--home", str(tmp_path), "--db", url] if url else []
    result = CliRunner().invoke(app, [*prefix, *args])
    return result.exit_code, result.stdout, result.stderr


def test_checkpoint_vkey_and_proofs_over_http(make_ledger: LedgerFactory, db_url: str, tmp_path: Path) -> None:
    ledger = make_ledger(db_url)
    grow(ledger, 5)
    signed = ledger.sign_tlog_checkpoint()
    with running(ledger, settings_for(tmp_path)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        served = http.get(f"{base}/checkpoint")
        vkey = http.get(f"{base}/tlog/vkey")
        size = signed.size
        inclusion = http.get(f"{base}/tlog/inclusion", params={"index": 2, "size": size})
        consistency = http.get(f"{base}/tlog/consistency", params={"old": 2, "size": size})
        bad = {
            "index ≥ size": http.get(f"{base}/tlog/inclusion", params={"index": size, "size": size}),
            "size past the head": http.get(f"{base}/tlog/inclusion", params={"index": 0, "size": size + 100}),
            "negative": http.get(f"{base}/tlog/inclusion", params={"index": -1, "size": size}),
            "not a number": http.get(f"{base}/tlog/consistency", params={"old": "two", "size": size}),
            "old > size": http.get(f"{base}/tlog/consistency", params={"old": size, "size": 1}),
        }
    assert served.status_code == 200 and served.headers["content-type"].startswith("text/plain")
    assert vkey.status_code == 200 and vkey.text == ledger.tlog_vkey() + "\n"
    log = note.parse_vkey(vkey.text)
    cp = note.open_checkpoint(served.text, log).checkpoint
    assert cp.size >= size
    body = inclusion.json()
    leaf = base64.b64decode(body["leaf"])
    record = ledger.store.get(3)
    assert record is not None and leaf == bytes.fromhex(record.hash) and body["index"] == 2 and body["size"] == size
    root = note.open_checkpoint(signed.note, log).checkpoint.root
    merkle.verify_inclusion(2, size, merkle.leaf_hash(leaf), [base64.b64decode(h) for h in body["proof"]], root)
    proof = [base64.b64decode(h) for h in consistency.json()["proof"]]
    merkle.verify_consistency(2, size, proof, ledger.store.tree_root(2), root)
    for what, answer in bad.items():
        assert 400 <= answer.status_code < 500, what
        error = answer.json()["error"]
        assert error["message"] and (error["hint"] or answer.status_code == 422), what


def test_an_agent_key_cannot_read_inclusion_proofs(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    grow(ledger, 2)
    root = Actor("root", "cli", admin=True)
    admin = ledger.issue_api_key(root, "root", role="admin").api_key
    agent_key = ledger.issue_api_key(root, "alice").api_key
    auditor = ledger.issue_api_key(root, "audit", role="auditor").api_key
    size = ledger.store.tree_size()
    with running(ledger, settings_for(tmp_path)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        asked = {
            key: http.get(
                f"{base}/tlog/inclusion",
                params={"index": 0, "size": size},
                headers={"Authorization": f"Bearer {key}"},
            ).status_code
            for key in (admin, agent_key, auditor)
        }
        checkpoint = http.get(f"{base}/checkpoint", headers={"Authorization": f"Bearer {agent_key}"})
    assert asked == {admin: 200, agent_key: 403, auditor: 200}
    assert checkpoint.status_code == 200


def test_prove_then_verify_proof_with_no_database(make_ledger: LedgerFactory, db_url: str, tmp_path: Path) -> None:
    ledger = make_ledger(db_url)
    grow(ledger, 6)
    code, printed, said = cli(tmp_path, db_url, "tlog", "checkpoint")
    assert code == 0, said
    assert note.open_checkpoint(printed, note.parse_vkey(ledger.tlog_vkey())).checkpoint.size == ledger.store.head()[0]
    vkey_file = tmp_path / "ledger.vkey"
    code, printed, _ = cli(tmp_path, db_url, "tlog", "vkey")
    vkey_file.write_text(printed)
    proof_file = tmp_path / "event4.tlog-proof"
    code, _, said = cli(tmp_path, db_url, "tlog", "prove", "4", "--out", str(proof_file))
    assert code == 0, said
    record = ledger.store.get(4)
    other = ledger.store.get(5)
    assert record is not None and other is not None

    elsewhere = tmp_path / "elsewhere"  # no ledger home, no database: only the bundle, the vkey and the leaf
    elsewhere.mkdir()
    env = {"LEDGER_HOME": str(elsewhere / "nothing-here"), "LEDGER_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/x"}
    runner = CliRunner()
    ok = runner.invoke(
        app, ["tlog", "verify-proof", str(proof_file), "--vkey", str(vkey_file), "--leaf", record.hash], env=env
    )
    wrong = runner.invoke(
        app, ["tlog", "verify-proof", str(proof_file), "--vkey", str(vkey_file), "--leaf", other.hash], env=env
    )
    policy = runner.invoke(
        app,
        [
            "tlog",
            "verify-proof",
            str(proof_file),
            "--vkey",
            str(vkey_file),
            "--leaf",
            record.hash,
            "--min-cosignatures",
            "1",
        ],
        env=env,
    )
    garbled = runner.invoke(
        app, ["tlog", "verify-proof", str(proof_file), "--vkey", "nonsense", "--leaf", record.hash], env=env
    )
    assert ok.exit_code == 0 and "proof holds" in ok.stdout and "position 4" in ok.stdout
    assert wrong.exit_code == 1 and "does not hold" in wrong.stderr
    assert policy.exit_code == 1 and "policy asks for 1" in policy.stderr
    assert garbled.exit_code == 2 and "vkey" in garbled.stderr
    assert not (elsewhere / "nothing-here").exists()  # nothing was created: no home was needed


def test_follow_keeps_state_and_names_a_fork_after_a_rewrite(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    grow(ledger, 4)
    state = tmp_path / "auditor" / "ledger.checkpoint"
    vkey = ledger.tlog_vkey()
    runner = CliRunner()

    def follow(base: str) -> tuple[int, str]:
        result = runner.invoke(app, ["tlog", "follow", base, "--state", str(state), "--vkey", vkey])
        return result.exit_code, result.stdout + result.stderr

    with running(ledger, settings_for(tmp_path)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        first = follow(base)
        kept_first = state.read_text()
        sid = http.post(f"{base}/sessions", json={"role": "dev"}).json()["session_id"]
        http.post(f"{base}/memory/blocks", json={"content": "something new to keep", "session_id": sid})
        ledger.sign_tlog_checkpoint()
        second = follow(base)
        kept_second = state.read_text()
    assert first[0] == 0 and "first checkpoint kept" in first[1]
    assert second[0] == 0 and "consistent" in second[1] and kept_second != kept_first

    # An insider with the database and the key files rewrites history, reseals it, drops the kept checkpoints and
    # signs the forged tree: the ledger now serves a validly signed checkpoint of another log.
    insider_rewrite(ledger, '"note-0"', '"note-z"')
    with ledger.store.engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM tlog_checkpoints")
    size = ledger.store.tree_size()
    forged = note.Checkpoint(ledger.tlog_origin(), size, ledger.store.tree_root(size))
    resigned = note.sign(forged.text, note.Signer(ledger.tlog_origin(), ledger.kernel.require_signer().key))
    ledger.transparency._keep(size, resigned)
    with running(ledger, settings_for(tmp_path, checkpoint_every_events=0)) as base:
        third = follow(base)
    assert third[0] == 1 and "FORK" in third[1] and str(state) in third[1]
    assert state.read_text() == kept_second  # the kept checkpoint stays: evidence of the fork


def test_verify_takes_a_note_file_and_names_it_when_the_log_no_longer_holds_it(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    grow(ledger, 5)
    kept = tmp_path / "kept" / "size.note"
    kept.parent.mkdir()
    kept.write_text(ledger.sign_tlog_checkpoint().note)
    code, printed, said = cli(tmp_path, db_url, "verify", "--checkpoint", str(kept))
    assert code == 0 and "tree checkpoints: 1 of 1 held" in printed, said
    disable_chain_triggers(ledger.store)
    rewrite_from(ledger.store, holding(ledger, '"note-1"'), '"note-1"', '"note-q"')
    code, printed, said = cli(tmp_path, db_url, "verify", "--checkpoint", str(kept))
    assert code == 1 and str(kept) in said and "rewritten" in said


def test_serve_signs_a_new_checkpoint_as_the_log_grows(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    grow(ledger, 2)
    log = note.parse_vkey(ledger.tlog_vkey())
    settings = settings_for(tmp_path, checkpoint_every_events=3)

    def served_size(http: httpx.Client, base: str, at_least: int) -> int:
        """Poll GET /checkpoint until it covers ``at_least`` leaves (readiness, not timing)."""
        deadline = time.monotonic() + READY_WITHIN
        while True:
            answer = http.get(f"{base}/checkpoint")
            if answer.status_code == 200:
                size = note.open_checkpoint(answer.text, log).checkpoint.size
                if size >= at_least:
                    return size
            assert time.monotonic() < deadline, f"no checkpoint of {at_least} leaves: {answer.text}"
            time.sleep(0.05)

    with running(ledger, settings) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        sid = http.post(f"{base}/sessions", json={"role": "dev"}).json()["session_id"]
        first = served_size(http, base, 1)
        for i in range(4):
            http.post(f"{base}/memory/blocks", json={"content": f"a fact worth keeping {i}", "session_id": sid})
        grown = served_size(http, base, first + 3)
    assert grown >= first + 3
