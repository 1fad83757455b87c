"""``compliance-ledger serve`` as a person starts it: a taken port is said plainly, naming the port and what to
do, before any address is announced; ``--port 0`` announces the port the system chose, and answers there."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from tests.server_support import HTTP_TIMEOUT, READY_WITHIN, compliance_ledger_serve


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
