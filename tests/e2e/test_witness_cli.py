"""``compliance-ledger tlog witness init|serve`` as an operator runs them, in subprocesses with no ledger home and no
database: the key and the verifier key ``init`` prints, cosignatures that verify with it, the state surviving a
restart, and the mistakes an operator can make refused with what to do instead."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ledger.core.tlog import note
from ledger.core.tlog.witness_state import origin_hash
from tests.server_support import HTTP_TIMEOUT, READY_WITHIN
from tests.witness_support import Log, bare_env, cli, witness_subprocess


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "home").mkdir()
    return bare_env(tmp_path / "home")


def test_init_prints_the_cosignature_vkey_that_verifies_what_serve_returns_and_state_survives_a_restart(
    tmp_path: Path, env: dict[str, str]
) -> None:
    key, state = tmp_path / "witness" / "w.key", tmp_path / "state"
    made = cli("tlog", "witness", "init", "--key", str(key), "--name", "witness.example/w1", env=env)
    assert made.returncode == 0, made.stderr
    vkey = made.stdout.strip()
    witness = note.parse_vkey(vkey)
    assert (witness.name, witness.kind) == ("witness.example/w1", note.COSIGNATURE_V1)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and "created the witness key" in made.stderr
    log = Log().grow(5)

    with witness_subprocess(key, state, log.signer.verifier.vkey, env=env) as url:
        with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
            first = http.post("/add-checkpoint", content=log.body(0))
        assert first.status_code == 200, first.text
        opened = note.open_note(log.note() + first.text, [witness])
        assert [v.kind for v, _ in opened.verified] == [note.COSIGNATURE_V1]

    log.grow(4)
    with (
        witness_subprocess(key, state, log.signer.verifier.vkey, env=env) as url,
        httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http,
    ):
        again = http.post("/add-checkpoint", content=log.body(0))  # as if the witness had forgotten
        proved = http.post("/add-checkpoint", content=log.body(5))
        monitor = http.get(f"/{origin_hash(log.origin)}/checkpoint")
    assert (again.status_code, again.text, again.headers["content-type"]) == (409, "5\n", "text/x.tlog.size")
    assert proved.status_code == 200, proved.text
    served = note.open_checkpoint(monitor.text, log.signer.verifier, [witness])
    assert served.checkpoint == log.checkpoint() and len(served.cosignatures) == 1
    # the witness needs no ledger: nothing was made in the (empty) home, no database, no ledger directory
    assert list(Path(env["HOME"]).iterdir()) == []


def test_init_keeps_a_key_of_the_same_name_and_refuses_another(tmp_path: Path, env: dict[str, str]) -> None:
    key = tmp_path / "w.key"
    first = cli("tlog", "witness", "init", "--key", str(key), "--name", "witness.example/w1", env=env)
    before = key.read_bytes()
    same = cli("tlog", "witness", "init", "--key", str(key), "--name", "witness.example/w1", env=env)
    other = cli("tlog", "witness", "init", "--key", str(key), "--name", "witness.example/w2", env=env)
    assert (same.returncode, same.stdout) == (0, first.stdout) and "kept the existing" in same.stderr
    assert other.returncode == 1 and other.stdout == ""
    assert "already holds the witness key of 'witness.example/w1'" in " ".join(other.stderr.split())
    assert key.read_bytes() == before
    bad = cli("tlog", "witness", "init", "--key", str(tmp_path / "x.key"), "--name", "has space", env=env)
    assert bad.returncode == 2 and "no spaces" in bad.stderr and not (tmp_path / "x.key").exists()


def test_serve_refuses_what_it_cannot_use(tmp_path: Path, env: dict[str, str]) -> None:
    key, state = tmp_path / "w.key", tmp_path / "state"
    log = Log()

    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        return cli("tlog", "witness", "serve", "--state", str(state), "--port", "0", *args, env=env)

    missing = serve("--key", str(key), "--log-vkey", log.signer.verifier.vkey)
    assert missing.returncode == 1 and "tlog witness init" in " ".join(missing.stderr.split())
    cli("tlog", "witness", "init", "--key", str(key), "--name", "witness.example/w1", env=env)
    bad = serve("--key", str(key), "--log-vkey", "log.example/x+00000000+AAAA")
    assert bad.returncode == 2 and "is not a verifier key" in " ".join(bad.stderr.split())
    none = serve("--key", str(key))
    assert none.returncode == 2 and "--log-vkey" in none.stderr
    with witness_subprocess(key, state, log.signer.verifier.vkey, env=env):
        second = serve("--key", str(key), "--log-vkey", log.signer.verifier.vkey)
    assert second.returncode == 1 and "another witness process" in " ".join(second.stderr.split())


def test_serve_says_whom_it_cosigns_as_and_what_it_witnesses(tmp_path: Path, env: dict[str, str]) -> None:
    key, state = tmp_path / "w.key", tmp_path / "state"
    vkey = cli("tlog", "witness", "init", "--key", str(key), "--name", "witness.example/w1", env=env).stdout.strip()
    log = Log().grow(1)
    args = ["tlog", "witness", "serve", "--key", str(key), "--state", str(state), "--port", "0"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "api", *args, "--log-vkey", log.signer.verifier.vkey],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    banner = proc.stderr.readline()
    assert banner.startswith("Witness witness.example/w1 on http://127.0.0.1:"), banner
    url = banner.split()[3]
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
        assert http.get(f"/{origin_hash(log.origin)}/checkpoint").status_code == 404
    proc.terminate()  # uvicorn shuts down, then re-raises SIGTERM: the exit status is the signal's
    rest = proc.communicate(timeout=READY_WITHIN)[1]
    assert f"cosigning as {vkey}; state in {state}" in rest
    assert f"witnessing {log.origin}: nothing cosigned yet" in rest
