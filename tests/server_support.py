"""Servers for the tests that need one, each waited for by readiness, never by a fixed deadline: uvicorn on a
loopback thread (ready when uvicorn says it started) and ``compliance-ledger serve`` in a subprocess (ready when
it prints the address it listens on). The bounds here are generous on purpose: they only turn a hang into a
failure, on a machine as loaded as it gets; nothing asserts how long anything took."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn

from api.rest.app import build_app
from api.settings import Settings
from ledger.service import Ledger

READY_WITHIN = 120.0  # seconds a server may take to start, or a worker to reach a barrier, before the test fails
# Every HTTP call a test makes: httpx's default (5 s) is shorter than a loaded machine can take to answer, e.g. the
# first /mcp request, which imports the MCP SDK.
HTTP_TIMEOUT = httpx.Timeout(READY_WITHIN)

ANNOUNCED = re.compile(r"Compliance Ledger on (http://\S+)")


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """A readiness wait: poll ``condition``; the bound only turns a hang into a failure."""
    deadline = time.monotonic() + READY_WITHIN
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@contextmanager
def serving(ledger: Ledger, settings: Settings) -> Iterator[tuple[str, uvicorn.Server]]:
    """Serve the app on an ephemeral loopback port; yield its URL and the server (its event loop is reachable)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(build_app(ledger, settings), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), "uvicorn to start")
    assert thread.is_alive(), "uvicorn stopped while starting (its error is above)"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", server
    finally:
        server.should_exit = True
        thread.join(timeout=READY_WITHIN)
        sock.close()


@contextmanager
def running(ledger: Ledger, settings: Settings) -> Iterator[str]:
    """Serve the app on an ephemeral loopback port; yield its URL; stop it afterwards."""
    with serving(ledger, settings) as (base, _):
        yield base


@contextmanager
def compliance_ledger_serve(
    home: Path,
    url: str,
    *args: str,
    cwd: Path | None = None,
    said: list[str] | None = None,
    started: list[subprocess.Popen[str]] | None = None,
    **env: str,
) -> Iterator[str]:
    """`compliance-ledger serve --port 0` in a subprocess, started in ``cwd`` (default ``home``); yield the address
    it announced (it listens from that line on, so the first request waits for it rather than failing); stopped
    afterwards, also when a test stopped it (SIGSTOP) or killed it. ``said``, when given, collects every line it
    prints on stderr, as it prints them; ``started`` gets the process (for a test that signals it)."""
    environ = {**os.environ, "LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": url, **env}
    proc = subprocess.Popen(
        [sys.executable, "-m", "api", "serve", "--port", "0", *args],
        env=environ,
        cwd=str(cwd or home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if started is not None:
        started.append(proc)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:  # drains stderr for the server's whole life, so it never blocks on a full pipe
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
            if said is not None:
                said.append(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    before: list[str] = []
    try:
        while True:
            try:
                line = lines.get(timeout=READY_WITHIN)
            except queue.Empty:
                raise AssertionError(f"serve announced no address: {''.join(before)}") from None
            if line is None:
                proc.wait()
                raise AssertionError(f"serve exited with {proc.returncode} before listening: {''.join(before)}")
            before.append(line)
            if found := ANNOUNCED.search(line):
                break
        yield found.group(1)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)  # a stopped process would hold its SIGTERM until it is continued
        proc.terminate()
        try:
            proc.wait(timeout=READY_WITHIN)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=READY_WITHIN)  # the pipe ends with the process
        assert proc.stderr is not None
        proc.stderr.close()


def ledger_cli(home: Path, url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``compliance-ledger ARGS`` in a subprocess with ``home`` and ``url``, waited for (bounded by
    :data:`READY_WITHIN` only to turn a hang into a failure)."""
    return subprocess.run(
        [sys.executable, "-m", "api", *args],
        env={**os.environ, "LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": url, **env},
        stdin=subprocess.DEVNULL,  # ``mcp`` serves until its input ends (one whose ledger cannot open, too)
        capture_output=True,
        text=True,
        timeout=READY_WITHIN,
    )


def homes_sharing_keys(tmp_path: Path, url: str, nodes: int, **env: str) -> list[Path]:
    """``init`` once, then a home per node with the ledger's two key files copied into it (what the README says
    nodes share): ``tmp_path/node0`` … ``node{nodes - 1}``."""
    first = tmp_path / "node0"
    done = ledger_cli(first, url, "init", "--no-seed", **env)
    assert done.returncode == 0, done.stderr
    homes = [first]
    for n in range(1, nodes):
        home = tmp_path / f"node{n}"
        home.mkdir()
        for name in ("receipt.key", "signing.key"):
            shutil.copy2(first / name, home / name)
        homes.append(home)
    return homes


@contextmanager
def python_child(script: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``python -c SCRIPT ARGS`` with this repository importable, talking on stdin and stdout (text): a process of
    its own for a test to pause (SIGSTOP), resume (:func:`resume`) or kill; resumed and killed afterwards if it is
    still there, also when the test failed."""
    child = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        yield child
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
        child.wait()
        child.stdin.close()
        child.stdout.close()


def resume(child: subprocess.Popen[str]) -> str:
    """Resume a stopped :func:`python_child`, tell it to go on (a line on its stdin) and return the line it
    answers, once it has exited."""
    assert child.stdin is not None and child.stdout is not None
    os.kill(child.pid, signal.SIGCONT)
    child.stdin.write("go on\n")
    child.stdin.flush()
    said = child.stdout.readline().strip()
    child.wait(timeout=READY_WITHIN)
    return said
