"""One version, from the package's metadata, everywhere the ledger names it: ``--version``, MCP ``serverInfo``,
``GET /health`` and the OpenAPI document; a checkout that was never installed reads its ``pyproject.toml``."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from mcp import Client
from starlette.testclient import TestClient
from typer.testing import CliRunner

from api.cli import app as cli
from api.mcp.server import build_mcp
from api.rest.app import build_app
from api.settings import Settings
from api.version import UNKNOWN, checkout_version, package_version
from tests.conftest import LedgerFactory

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_the_installed_distributions() -> None:
    assert package_version() == metadata.version("compliance-ledger")


def test_a_checkout_without_metadata_reads_its_pyproject(tmp_path: Path) -> None:
    assert checkout_version(ROOT / "pyproject.toml") == package_version()
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "something-else"\nversion = "9.9"\n')
    assert checkout_version(other) == UNKNOWN
    other.write_text("[project\n")
    assert checkout_version(other) == UNKNOWN
    assert checkout_version(tmp_path / "missing.toml") == UNKNOWN


def test_cli_version_prints_it_and_help_does_not_load_the_metadata_reader() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"compliance-ledger {package_version()}\n"
    probe = "import sys; from api.cli import main; sys.argv[1:] = ['--help']\ntry: main()\nexcept SystemExit: pass\n"
    probe += "print('importlib.metadata' in sys.modules, 'api.version' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "--version" in run.stdout
    assert run.stdout.strip().splitlines()[-1] == "False False"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_server_info_carries_it(make_ledger: LedgerFactory) -> None:
    async with Client(build_mcp(make_ledger(), agent="v"), mode="legacy") as client:
        info = client.server_info
    assert info is not None and info.name == "compliance-ledger"
    assert info.version == package_version() != ""


def test_health_and_openapi_carry_it(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    with TestClient(build_app(ledger, Settings(home=tmp_path)), base_url="http://127.0.0.1") as http:
        health = http.get("/health").json()
        openapi = http.get("/openapi.json").json()
    assert health["version"] == package_version()
    assert openapi["info"]["version"] == package_version()
