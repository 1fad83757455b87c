"""``scripts/dev.py serve`` passes the ledger's own options (``--home``, ``--db``, the key files) where the ledger's
command line takes them, before ``serve``, whichever way they are written; everything else stays serve's."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import typer.main
from typer.testing import CliRunner

from api.cli import app

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dev.py"


@pytest.fixture(scope="module")
def dev() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse(argv: list[str]) -> tuple[dict[str, object], dict[str, object]]:
    """The root options and serve's options, as the real ``compliance-ledger`` parses ``argv`` (nothing runs)."""
    root = typer.main.get_command(app)
    ctx = root.make_context("compliance-ledger", list(argv))
    rest = ctx.args  # what follows the command the root options end at
    assert argv[len(argv) - len(rest) - 1] == "serve"
    command = root.get_command(ctx, "serve")  # type: ignore[attr-defined]
    return ctx.params, command.make_context("serve", list(rest), parent=ctx).params


def test_the_dev_script_knows_every_option_of_the_root_command_that_takes_a_value(dev: ModuleType) -> None:
    root = typer.main.get_command(app)
    options = [p for p in root.params if p.param_type_name == "option" and not getattr(p, "is_flag", True)]
    valued = {name for p in options for name in p.opts}
    assert set(dev.GLOBAL_OPTIONS) == valued


@pytest.mark.parametrize(
    "args",
    [
        ["--home", "/srv/ledger", "--port", "9000"],
        ["--port", "9000", "--home=/srv/ledger"],
        ["--port=9000", "--db", "sqlite:////srv/ledger/x.db", "--home", "/srv/ledger"],
    ],
)
def test_serve_home_and_db_go_before_the_command_and_parse_as_the_ledgers_own(dev: ModuleType, args: list[str]) -> None:
    argv = dev.serve_argv(args)

    root, serve = parse(argv)  # serve would refuse a root option after it (the last test)
    assert root["home"] == Path("/srv/ledger") and serve["port"] == 9000
    if "--db" in args:
        assert root["db"] == "sqlite:////srv/ledger/x.db"


def test_serves_own_options_stay_after_the_command_in_their_order(dev: ModuleType) -> None:
    args = ["--host", "127.0.0.1", "--allowed-host", "a.example", "--allowed-host", "b.example", "--log-json"]

    assert dev.serve_argv(args) == ["serve", *args]
    assert parse(dev.serve_argv(args))[1]["allowed_host"] == ["a.example", "b.example"]


def test_an_option_without_its_value_is_said_plainly(dev: ModuleType) -> None:
    with pytest.raises(SystemExit, match="--home needs a value"):
        dev.serve_argv(["--port", "0", "--home"])


def test_without_the_dev_script_serve_refuses_home_after_the_command(tmp_path: Path) -> None:
    """Why the script moves it: the ledger's command line takes --home only before the command."""
    result = CliRunner().invoke(app, ["serve", "--home", str(tmp_path)])
    assert result.exit_code == 2 and "No such option: --home" in result.output
