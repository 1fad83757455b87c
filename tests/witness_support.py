"""What the witness's tests share: a small log (an RFC 6962 tree kept in merkle's stored-hash layout, signing its
checkpoints with its own key), a witness served by uvicorn on a loopback thread, and ``compliance-ledger tlog witness
serve`` in a subprocess, each waited for by readiness (uvicorn started; the address line printed)."""

from __future__ import annotations

import datetime as _dt
import os
import queue
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import uvicorn
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from freezegun import freeze_time

from api.witness import build_witness_app
from ledger.core.tlog import merkle, note
from ledger.core.tlog.witness import render_request
from ledger.core.tlog.witness_state import Witness
from tests.server_support import READY_WITHIN, wait_until

ANNOUNCED = re.compile(r"Witness \S+ on (http://\S+)")


class Log:
    """A log: leaves appended one by one, checkpoints signed by its Ed25519 key (name = origin)."""

    def __init__(self, origin: str = "log.example/ledger", key: Ed25519PrivateKey | None = None) -> None:
        self.signer = note.Signer(origin, key or Ed25519PrivateKey.generate())
        self.stored: list[bytes] = []
        self.leaves: list[bytes] = []

    @property
    def origin(self) -> str:
        return self.signer.name

    @property
    def size(self) -> int:
        return len(self.leaves)

    def read(self, indexes: object) -> list[bytes]:
        return [self.stored[i] for i in indexes]  # type: ignore[attr-defined]

    def append(self, data: bytes) -> None:
        self.stored.extend(merkle.new_stored_hashes(self.size, merkle.leaf_hash(data), self.read))
        self.leaves.append(data)

    def grow(self, n: int) -> Log:
        for _ in range(n):
            self.append(f"event {self.size}".encode())
        return self

    def rewritten(self, index: int) -> Log:
        """The same log (same key) rebuilt with leaf ``index`` rewritten: what an attacker with the database makes."""
        other = Log(key=self.signer.key, origin=self.origin)
        for i, leaf in enumerate(self.leaves):
            other.append(b"rewritten " + leaf if i == index else leaf)
        return other

    def root(self, size: int | None = None) -> bytes:
        return merkle.tree_hash(self.size if size is None else size, self.read)

    def checkpoint(self, size: int | None = None) -> note.Checkpoint:
        size = self.size if size is None else size
        return note.Checkpoint(self.origin, size, self.root(size))

    def note(self, size: int | None = None) -> str:
        return note.sign(self.checkpoint(size).text, self.signer)

    def prove(self, old: int, size: int | None = None) -> list[bytes]:
        return merkle.prove_consistency(old, self.size if size is None else size, self.read)

    def body(self, old: int, size: int | None = None, proof: list[bytes] | None = None) -> bytes:
        """An add-checkpoint body for the checkpoint at ``size`` with the proof from ``old`` (or ``proof``)."""
        size = self.size if size is None else size
        if proof is None:
            proof = self.prove(old, size) if 0 < old < size else []
        return render_request(old, proof, self.note(size))


def witness_signer(name: str = "witness.example/w1") -> note.Signer:
    return note.Signer(name, Ed25519PrivateKey.generate(), note.COSIGNATURE_V1)


@contextmanager
def witness_serving(witness: Witness, frozen_at: _dt.datetime | None = None) -> Iterator[str]:
    """The witness's app on an ephemeral loopback port; yield its URL. With ``frozen_at`` the server runs its whole
    life under freezegun (started and stopped inside it: an asyncio loop that crosses the freeze's end hangs; the
    app is built before it, as FastAPI imports pydantic.v1 lazily, which fails under a frozen ``date``)."""
    app = build_witness_app(witness)
    with ExitStack() as stack:
        if frozen_at is not None:
            stack.enter_context(freeze_time(frozen_at, real_asyncio=True))
        sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        wait_until(lambda: server.started or not thread.is_alive(), "the witness to start")
        assert thread.is_alive(), "uvicorn stopped while starting (its error is above)"
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True
            thread.join(timeout=READY_WITHIN)
            assert not thread.is_alive(), "the witness did not stop"


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``compliance-ledger ARGS`` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "api", *args], env=env, capture_output=True, text=True, timeout=READY_WITHIN
    )


def bare_env(home: Path) -> dict[str, str]:
    """An environment with no ledger home and no database: HOME is an empty directory, no LEDGER_* variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") and k != "XDG_DATA_HOME"}
    env["HOME"] = str(home)
    return env


@contextmanager
def witness_subprocess(key: Path, state: Path, *log_vkeys: str, env: dict[str, str]) -> Iterator[str]:
    """``compliance-ledger tlog witness serve --port 0`` in a subprocess; yield the address it announced."""
    args = ["tlog", "witness", "serve", "--key", str(key), "--state", str(state), "--port", "0"]
    for vkey in log_vkeys:
        args += ["--log-vkey", vkey]
    proc = subprocess.Popen(
        [sys.executable, "-m", "api", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:  # drains stderr for the server's whole life
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    said: list[str] = []
    try:
        while True:
            try:
                line = lines.get(timeout=READY_WITHIN)
            except queue.Empty:
                raise AssertionError(f"the witness announced no address: {''.join(said)}") from None
            if line is None:
                proc.wait()
                raise AssertionError(f"the witness exited with {proc.returncode} before listening: {''.join(said)}")
            said.append(line)
            if found := ANNOUNCED.search(line):
                break
        yield found.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=READY_WITHIN)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=READY_WITHIN)
        assert proc.stderr is not None
        proc.stderr.close()
