"""The outside verifier: the Go team's ``golang.org/x/mod/sumdb/note`` and ``sumdb/tlog`` driving a small checker.

``tests/go/tlogcheck/main.go`` is built with Debian's ``golang-go`` and ``golang-golang-x-mod-dev`` (no module
download: ``GO111MODULE=off GOPATH=/usr/share/gocode go build``) into a cache outside the checkout,
``LEDGER_GO_CACHE`` (default ``~/.cache/compliance-ledger/go``), under a key made of the source's hash and the Go
version, once. It runs as one process per test session, reading JSON lines (one check each) and answering one
JSON line per check.

Use the session fixture ``go_checker`` (tests/conftest.py), a :class:`GoChecker`::

    answer = go_checker.check("note", vkeys=[log_vkey], note=text)
    # {"ok": True, "text": ..., "signers": ["example.com/log"], "unverified": ["witness.example"]}
    go_checker.check("record", size=n, root=b64(root), index=i, data=b64(leaf_data), proof=[b64(h), ...])
    go_checker.check("tree", old_size=m, old_root=b64(r1), size=n, root=b64(r2), proof=[...])
    go_checker.check("bundle", bundle=tlog_proof_text, vkey=log_vkey, data_hex=leaf_data.hex())
    go_checker.check("treehash", leaves=[b64(d), ...], sizes=[1, 7, 300])  # {"roots": {"7": b64, ...}}
    answers = go_checker.check_many([{"kind": "record", ...}, ...])  # one round trip for thousands of checks

A check that fails answers ``{"ok": False, "error": "<Go's message>", "error_type": ...}`` (``error_type`` names the
note package's ``InvalidSignatureError`` / ``UnverifiedNoteError``, or ``"malformed note"``, else ``"error"``). A
request the checker cannot read (unknown kind, a field missing, bad base64) raises :class:`GoRequestError`, so a
malformed request is never mistaken for a rejection. ``b64`` is standard base64 with padding; :func:`b64` does it.

Go's note package verifies Ed25519 (type 0x01) signatures only: a cosignature (type 0x04, c2sp.org/tlog-cosignature)
is an unknown key to it (``note.NewVerifier`` refuses a 0x04 vkey; ``note.Open`` lists cosignature lines under
``unverified``), so cosignatures are checked by this project's own code, not by this cross-check. Go's
``tlog.TreeHash`` of zero leaves is 32 zero bytes where RFC 9162 (and this project) use SHA-256 of nothing.

Without Go or the packages the tests skip with the reason on a developer machine and FAIL when ``CI`` is set
(``scripts/dev.py test`` installs them in CI).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import pytest

from ledger.core.tlog import merkle

SOURCE = Path(__file__).resolve().parent / "go" / "tlogcheck" / "main.go"
GOPATH = Path(os.environ.get("LEDGER_GOPATH", "/usr/share/gocode"))
SUMDB = GOPATH / "src" / "golang.org" / "x" / "mod" / "sumdb"
REQUIRED = bool(os.environ.get("CI"))


class GoUnavailable(Exception):
    """Go, or the x/mod packages, cannot be had on this machine, or the checker does not build; says why."""


class GoRequestError(ValueError):
    """The checker could not read a request (the test's mistake, not a verdict on the data)."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class MemoryTree:
    """Leaves appended through this project's :mod:`ledger.core.tlog.merkle` (its stored-hash layout), in memory."""

    def __init__(self, leaves: list[bytes] | None = None) -> None:
        self.leaves: list[bytes] = []
        self.stored: list[bytes] = []
        for data in leaves or []:
            self.append(data)

    def read(self, indexes: Sequence[int]) -> list[bytes]:
        return [self.stored[i] for i in indexes]

    def append(self, data: bytes) -> None:
        n = len(self.leaves)
        assert len(self.stored) == merkle.stored_hash_index(0, n)
        self.stored.extend(merkle.new_stored_hashes(n, merkle.leaf_hash(data), self.read))
        self.leaves.append(data)

    def root(self, size: int) -> bytes:
        return merkle.tree_hash(size, self.read)

    def inclusion(self, index: int, size: int) -> list[bytes]:
        return merkle.prove_inclusion(index, size, self.read)

    def consistency(self, old_size: int, size: int) -> list[bytes]:
        return merkle.prove_consistency(old_size, size, self.read)


def unavailable(reason: str) -> NoReturn:
    """Skip with the reason on a developer machine; fail in CI, where the Go cross-check must run."""
    if REQUIRED:
        pytest.fail(f"{reason} (CI is set, so the Go cross-check must run; scripts/dev.py test installs Go)")
    pytest.skip(reason)


def _go_env(cache: Path) -> dict[str, str]:
    return {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": str(GOPATH),
        "GOCACHE": str(cache / "gocache"),
        "GOFLAGS": "",
        "CGO_ENABLED": "0",
    }


def build() -> Path:
    """The checker binary, built unless this source's is already in the cache; raise GoUnavailable if it cannot."""
    go = shutil.which("go")
    if go is None:
        raise GoUnavailable(
            "`go` is not on PATH; the outside cross-check of the transparency log needs it: "
            "apt-get install golang-go golang-golang-x-mod-dev"
        )
    for package in ("note", "tlog"):
        if not (SUMDB / package).is_dir():
            raise GoUnavailable(
                f"{SUMDB / package} is missing (golang.org/x/mod/sumdb/{package}): "
                "apt-get install golang-golang-x-mod-dev"
            )
    version = subprocess.run([go, "version"], capture_output=True, text=True, timeout=60).stdout.strip()
    # keyed by the checker's source, the Go version and the x/mod sources it compiles in (an upgrade rebuilds)
    inputs = [SOURCE.read_bytes(), version.encode()]
    inputs += [f.read_bytes() for package in ("note", "tlog") for f in sorted((SUMDB / package).glob("*.go"))]
    digest = hashlib.sha256(b"\0".join(inputs)).hexdigest()[:16]
    default_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "compliance-ledger" / "go"
    cache = Path(os.environ.get("LEDGER_GO_CACHE") or default_cache)
    binary = cache / digest / "tlogcheck"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".build.lock", "w") as lock:  # one builder at a time, across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            work = cache / digest / "src"
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(work)
            work.mkdir(parents=True)
            shutil.copy2(SOURCE, work / "main.go")
            partial = binary.with_suffix(f".{os.getpid()}.tmp")
            done = subprocess.run(
                [go, "build", "-o", str(partial), "."],
                cwd=work,
                env=_go_env(cache),
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0:
                tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-12:])
                raise GoUnavailable(f"`go build` of {SOURCE} failed ({version}):\n{tail}")
            partial.replace(binary)
    return binary


class GoChecker:
    """One running checker process; :meth:`check` and :meth:`check_many` send it checks (see the module doc)."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self._proc = subprocess.Popen(
            [str(binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1 << 16,
        )
        self._lock = threading.Lock()

    def check(self, kind: str, **fields: Any) -> dict[str, Any]:
        """One check; its answer (``ok`` True, or False with Go's ``error``)."""
        [answer] = self.check_many([{"kind": kind, **fields}])
        return answer

    def check_many(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Many checks in one round trip, answers in the same order (requests are written from a second thread
        while answers are read, so neither pipe fills up)."""
        lines = [json.dumps(r, ensure_ascii=False) + "\n" for r in requests]
        if any("\n" in line[:-1] for line in lines):
            raise AssertionError("json.dumps made a line with a newline in it")
        assert self._proc.stdin is not None and self._proc.stdout is not None
        stdin, stdout = self._proc.stdin, self._proc.stdout
        with self._lock:
            failure: list[BaseException] = []

            def write() -> None:
                try:
                    stdin.writelines(lines)
                    stdin.flush()
                except BaseException as exc:  # reported below, with the checker's stderr
                    failure.append(exc)

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            answers: list[dict[str, Any]] = []
            for request in requests:
                line = stdout.readline()
                if not line:
                    writer.join(timeout=5)
                    raise RuntimeError(f"the Go checker stopped ({failure or 'no answer'}): {self._stderr()}")
                answer = json.loads(line)
                if "request_error" in answer:
                    writer.join()
                    self._drain(len(requests) - len(answers) - 1)
                    raise GoRequestError(f"{answer['request_error']} (request: {str(request)[:300]})")
                answers.append(answer)
            writer.join()
        return answers

    def _drain(self, count: int) -> None:
        assert self._proc.stdout is not None
        for _ in range(count):
            self._proc.stdout.readline()

    def _stderr(self) -> str:
        self._proc.kill()
        assert self._proc.stderr is not None
        return self._proc.stderr.read()[-2000:]

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()


def start() -> GoChecker:
    """Build (or find) the checker and start it; skips, or fails in CI, when Go is missing."""
    try:
        return GoChecker(build())
    except GoUnavailable as exc:
        unavailable(str(exc))


if __name__ == "__main__":  # `python -m tests.go_support`: build now and say where (a quick check of the setup)
    try:
        path = build()
    except GoUnavailable as exc:
        raise SystemExit(f"[go] {exc}") from None
    print(f"[go] the tlog checker is built at {path}")
