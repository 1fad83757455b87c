"""Servers a benchmark starts in processes of their own: a free loopback port, start, readiness, stop, and what
``/proc`` says about a process (resident memory, CPU time)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def free_port() -> int:
    """A free TCP port on loopback, for a server a benchmark starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[Any], patience_s: float = 300) -> None:
    """Wait until ``url`` answers (readiness on a loaded machine, not a measurement); fail if ``proc`` exits."""
    import httpx

    deadline = time.monotonic() + patience_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server at {url} exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=10)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"the server at {url} did not answer")


@contextmanager
def running(
    command: list[str],
    env: Mapping[str, str],
    ready_url: str,
    *,
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = subprocess.DEVNULL,
    patience_s: float = 300,
    stop_timeout_s: float = 60,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``command``, wait until ``ready_url`` answers, yield the process; terminate it and wait on the way
    out (also when starting failed)."""
    proc = subprocess.Popen(command, env=dict(env), stdout=stdout, stderr=stderr)
    try:
        wait_http(ready_url, proc, patience_s)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=stop_timeout_s)


def status_mb(pid: int, field: str) -> float:
    """A ``/proc/PID/status`` memory field (``VmRSS``, ``VmHWM``) in MB."""
    text = Path(f"/proc/{pid}/status").read_text()
    return int(text.split(f"{field}:")[1].split()[0]) / 1024


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux ``/proc``; ``None`` elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
