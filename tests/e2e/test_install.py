"""Installed from the wheel into a fresh venv, with nothing else present, ``compliance-ledger`` works: ``--version``,
``mcp`` over stdio (an MCP SDK client's ``initialize``) and ``serve`` (``/health`` on a loopback port).

The wheel is the one ``scripts/dev.py test`` built (``LEDGER_TEST_WHEEL``), else one built here with
``python -m build``. Every command runs from a temporary directory outside the checkout with a clean environment
(no ``PYTHONPATH``, a temporary ``HOME``), so only the venv's copy of the package can be imported. pip reuses the
user's cache (``PIP_CACHE_DIR`` or ``~/.cache/pip``), so the install costs seconds, not minutes, after the first.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DATA = (
    "ledger/enforcement/enforcement_rules.yaml",
    "ledger/workflow/workflow_default.yaml",
    # the dashboard at /ui
    *(f"api/rest/ui/static/{name}" for name in ("index.html", "app.css", "app.js", "lib.js")),
    *(f"api/rest/ui/static/{page}.js" for page in ("overview", "memory", "audit", "tasks")),
)
# Where the venv's python finds ``api`` and whether each package data file is a resource of its package.
PROBE = """
import importlib.resources, json, sys
import api
def held(path):
    package, _, name = path.rpartition("/")
    return importlib.resources.files(package.replace("/", ".")).joinpath(name).is_file()
print(json.dumps({"api": api.__file__, "data": {p: held(p) for p in sys.argv[1:]}}))
"""
HANG_GUARD_SECONDS = 600  # only so a server that never answers fails the run instead of hanging it


@dataclass(frozen=True)
class Installed:
    venv: Path
    work: Path  # the directory every command runs in: empty, outside the checkout
    env: dict[str, str]  # the whole environment the commands get
    version: str  # the wheel's version

    @property
    def exe(self) -> Path:
        return self.venv / "bin" / "compliance-ledger"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``scripts/dev.py test`` built, else a fresh one (``python -m build --wheel``)."""
    given = os.environ.get("LEDGER_TEST_WHEEL")
    if given:
        path = Path(given)
        if not path.is_file():
            pytest.fail(f"LEDGER_TEST_WHEEL={given} is not a file: unset it, or build one with `python -m build`")
        return path
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)], capture_output=True, text=True
    )
    assert built.returncode == 0, f"python -m build failed (is `build` installed? pip install -e '.[dev]'):\n{built}"
    [path] = out.glob("compliance_ledger-*.whl")
    return path


def clean_env(home: Path) -> dict[str, str]:
    """Nothing of the test process's environment but system paths and a locale: the checkout is not importable."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LEDGER_HOME": str(home / "l"),
    }


def pip_env(env: dict[str, str]) -> dict[str, str]:
    """The clean environment plus how this machine reaches an index (pip settings, proxies, certificates) and the
    user's pip cache."""
    reach = {
        k: v
        for k, v in os.environ.items()
        if k.startswith("PIP_") or k.lower() in ("http_proxy", "https_proxy", "no_proxy", "ssl_cert_file")
    }
    cache = os.environ.get("PIP_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pip"
    )
    return {**env, **reach, "PIP_CACHE_DIR": cache, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A fresh venv (``python -m venv``) holding the wheel and its dependencies from the index, nothing else."""
    base = tmp_path_factory.mktemp("install")
    venv, work, home = base / "venv", base / "work", base / "home"
    work.mkdir()
    home.mkdir()
    env = clean_env(home)
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], cwd=work, env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)]
    done = subprocess.run(pip, cwd=work, env=pip_env(env), capture_output=True, text=True)
    assert done.returncode == 0, f"pip install {wheel.name} failed:\n{done.stdout}\n{done.stderr}"
    return Installed(venv=venv, work=work, env=env, version=wheel.name.split("-")[1])


def test_the_wheel_holds_the_package_data_and_only_the_three_packages(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert set(PACKAGE_DATA) <= set(names)
    tops = {n.split("/")[0] for n in names}
    assert tops == {"api", "ledger", "projections", f"compliance_ledger-{wheel.name.split('-')[1]}.dist-info"}


@pytest.mark.slow
def test_the_venv_imports_its_own_copy_with_its_package_data(installed: Installed) -> None:
    run = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", PROBE, *PACKAGE_DATA],
        cwd=installed.work,
        env=installed.env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert Path(seen["api"]).is_relative_to(installed.venv), seen["api"]
    assert not Path(seen["api"]).is_relative_to(ROOT)
    assert seen["data"] == dict.fromkeys(PACKAGE_DATA, True)


@pytest.mark.slow
def test_the_installed_command_reports_the_wheel_version(installed: Installed) -> None:
    run = subprocess.run(
        [str(installed.exe), "--version"], cwd=installed.work, env=installed.env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"compliance-ledger {installed.version}"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_installed_mcp_answers_initialize_over_stdio(installed: Installed) -> None:
    server = StdioServerParameters(
        command=str(installed.exe), args=["mcp", "--agent", "installed"], env=installed.env, cwd=installed.work
    )
    async with Client(server, mode="legacy") as client:  # legacy: the initialize handshake itself
        info = client.server_info
        tools = (await client.list_tools()).tools
        found = await client.call_tool("memory_search", {"query": "memory discipline"})
    assert info is not None and info.name == "compliance-ledger" and info.version == installed.version
    assert "memory_search" in {t.name for t in tools}
    assert found.is_error is False and found.structured_content is not None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(installed: Installed) -> Iterator[str]:
    """``compliance-ledger serve`` from the venv on a free loopback port, once ``/health`` answers."""
    port = free_port()
    log = installed.work / f"serve-{port}.log"
    with log.open("w") as errors:
        proc = subprocess.Popen(
            [str(installed.exe), "serve", "--port", str(port)], cwd=installed.work, env=installed.env, stderr=errors
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(proc, base, log)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=HANG_GUARD_SECONDS)
    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again to exit by it
    assert proc.returncode in (0, -signal.SIGTERM) and "Traceback" not in log.read_text(), log.read_text()


def wait_for_health(proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    """Until ``/health`` answers or the server exits; between tries, wait on the process itself."""
    guard = time.monotonic() + HANG_GUARD_SECONDS
    while time.monotonic() < guard:
        try:
            if httpx.get(f"{base}/health", timeout=30).status_code == 200:
                return
        except httpx.TransportError:
            pass  # not listening yet
        try:
            proc.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            continue
        pytest.fail(f"serve exited with {proc.returncode} before answering /health:\n{log.read_text()}")
    pytest.fail(f"serve did not answer /health in {HANG_GUARD_SECONDS} s:\n{log.read_text()}")


@pytest.mark.slow
def test_the_installed_serve_answers_health_with_its_version(installed: Installed, served: str) -> None:
    with httpx.Client(base_url=served) as http:
        health = http.get("/health").json()
        openapi = http.get("/openapi.json").json()
        page = http.get("/ui")
        script = http.get("/ui/static/app.js")
    assert page.status_code == 200 and "/ui/static/app.js" in page.text
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert health["status"] == "ok" and health["database"] == "sqlite"
    assert health["version"] == installed.version
    assert openapi["info"]["version"] == installed.version
