"""``compliance-ledger serve`` as a person starts it: a taken port is said plainly, naming the port and what to
do, before any address is announced; ``--port 0`` announces the port the system chose, and answers there; a
project under the directory it was started from is accepted, outside /tmp's home too (the quickstart in /srv or
/tmp), while a directory outside every root is still refused; and its banner is never folded when piped."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.server_support import HTTP_TIMEOUT, READY_WITHIN, compliance_ledger_serve, wait_until


def test_serve_refuses_a_taken_port_before_announcing_an_address_and_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run(
            [sys.executable, "-m", "api", "--home", str(home), "serve", "--port", str(port)],
            env={**os.environ, "COLUMNS": "200"},
            capture_output=True,
            text=True,
            timeout=READY_WITHIN,
        )
    assert run.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in run.stderr
    assert "--port 0" in run.stderr and f"--port {port + 1}" in run.stderr  # what to do instead
    assert "Compliance Ledger on" not in run.stderr
    assert not home.exists()  # refused before the ledger was opened or initialised


def test_serve_on_port_0_announces_the_port_it_listens_on(tmp_path: Path) -> None:
    with compliance_ledger_serve(tmp_path, f"sqlite:///{tmp_path / 'ledger.db'}") as base:
        health = httpx.get(f"{base}/health", timeout=HTTP_TIMEOUT)
    assert base.startswith("http://127.0.0.1:") and not base.endswith(":0")
    assert health.status_code == 200 and health.json()["status"] == "ok"


def roots_line(said: list[str]) -> str:
    """The banner's line naming the project roots, once serve printed it."""
    wait_until(lambda: any("sessions may work in" in line for line in said), "serve to name its project roots")
    return next(line for line in said if "sessions may work in" in line)


def test_serve_accepts_a_project_under_the_directory_it_started_in_and_refuses_one_outside_every_root(
    tmp_path: Path, db_url: str, project: Path
) -> None:
    home = tmp_path / "home"  # HOME of the server: neither directory below is inside it
    home.mkdir()
    started_in = project.parent
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    said: list[str] = []
    with (
        compliance_ledger_serve(tmp_path / "ledger", db_url, cwd=started_in, said=said, HOME=str(home)) as base,
        httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http,
    ):
        accepted = http.post("/sessions", json={"role": "dev", "working_dir": str(project)})
        refused = http.post("/sessions", json={"role": "dev", "working_dir": str(elsewhere)})
        roots = roots_line(said)
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["working_dir"] == str(project) and accepted.json()["phase"] == "B1"
    assert refused.status_code == 403, refused.text
    error = refused.json()["error"]
    assert "outside the allowed project roots" in error["message"]
    assert "LEDGER_PROJECT_ROOTS" in error["hint"] and str(started_in) in error["hint"]
    assert f"sessions may work in: {home}, {started_in} (LEDGER_PROJECT_ROOTS)" in roots


def test_serve_started_in_the_filesystem_root_does_not_make_it_a_project_root(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    said: list[str] = []
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with (
        compliance_ledger_serve(tmp_path, url, cwd=Path("/"), said=said, HOME=str(home)) as base,
        httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http,
    ):
        refused = http.post("/sessions", json={"role": "dev", "working_dir": str(tmp_path)})
        roots = roots_line(said)
    assert refused.status_code == 403 and f"sessions may work in: {home} (LEDGER_PROJECT_ROOTS)" in roots


def test_the_serve_banner_keeps_each_line_whole_when_stderr_is_piped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # no width asked for: rich used to fold at 80 columns
    home = tmp_path / "home"
    deep = tmp_path / ("a-ledger-home-with-a-long-name-" * 4)
    deep.mkdir()
    said: list[str] = []
    url = f"sqlite:///{deep / 'ledger.db'}"
    with compliance_ledger_serve(deep, url, said=said, HOME=str(home)):
        roots = roots_line(said)
    database = next(line for line in said if line.startswith("database "))
    assert database.rstrip("\n") == f"database {url}; no API keys: callers act as 'local'"
    assert roots.rstrip("\n") == f"sessions may work in: {home}, {deep} (LEDGER_PROJECT_ROOTS)"
    assert len(database) > 80 and len(roots) > 80
