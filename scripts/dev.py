#!/usr/bin/env python3
"""One entry point for a fresh machine that has only ``python3``.

    python3 scripts/dev.py serve   # create .venv, install, serve REST + MCP on http://127.0.0.1:8787 (SQLite)
    python3 scripts/dev.py test    # create .venv, install dev tools, run lint and types, build the wheel and
                                   # sdist into dist/, run the whole test suite (which installs that wheel)

Anything after the command is passed on (``serve --port 9000``, ``test -k gate``); the ledger's own options
(``serve --home DIR``, ``--db URL``, ``--key-file``, ``--signing-key-file``) go where the ledger takes them. The
virtual environment is (re)installed whenever pyproject.toml changes. Uses only the standard library.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("LEDGER_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
DIST = ROOT / "dist"
PG_URL = os.environ.get("LEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def say(text: str) -> None:
    print(f"[dev] {text}", file=sys.stderr, flush=True)


def run(*args: str | Path, env: dict[str, str] | None = None) -> int:
    return subprocess.call([str(a) for a in args], cwd=ROOT, env=env)


def ensure_venv(extras: str) -> None:
    """Create the venv and install the project (editable) with ``extras`` if pyproject changed."""
    stamp = VENV / f".installed-{extras or 'base'}"
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest and PY.exists():
        return
    if not PY.exists():
        say(f"creating virtual environment in {VENV}")
        venv.EnvBuilder(with_pip=True, upgrade_deps=False).create(VENV)
    say("installing dependencies (first run takes a minute)")
    target = f".[{extras}]" if extras else "."
    if run(PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-e", target) != 0:
        sys.exit("[dev] pip install failed; see the messages above")
    stamp.write_text(digest)


def check_postgres_for_ci() -> None:
    """In CI the PostgreSQL suite is mandatory: fail loudly, up front, if the server is unreachable."""
    if not (os.environ.get("CI") or os.environ.get("LEDGER_REQUIRE_POSTGRES")):
        return
    probe = f"import psycopg; psycopg.connect({PG_URL!r}, connect_timeout=5).close()"
    if run(PY, "-c", probe) != 0:
        sys.exit(f"[dev] PostgreSQL at {PG_URL} is unreachable; CI requires it (set LEDGER_TEST_POSTGRES_URL)")
    say(f"PostgreSQL reachable at {PG_URL}")


def build_dist() -> Path:
    """Build the sdist and, from it, the wheel into dist/ (``python -m build``); return the wheel."""
    DIST.mkdir(exist_ok=True)
    for old in [*DIST.glob("compliance_ledger-*.whl"), *DIST.glob("compliance_ledger-*.tar.gz")]:
        old.unlink()  # so the wheel found below is the one just built
    say(f"building the sdist and wheel into {DIST}")
    if run(PY, "-m", "build", "--quiet", "--outdir", DIST, ROOT) != 0:
        sys.exit("[dev] python -m build failed; see the messages above")
    [wheel] = DIST.glob("compliance_ledger-*.whl")
    return wheel


def check_node_for_ci() -> None:
    """In CI the Node tests (official TypeScript MCP clients, the MCP conformance suite, which needs Node >= 22) are
    mandatory: install the packages tests/node pins, Node 22 among them, up front, and fail loudly if that fails."""
    if not os.environ.get("CI"):
        return
    if run(PY, "-m", "tests.node_support") != 0:
        sys.exit("[dev] the Node.js packages pinned in tests/node could not be installed; CI requires them")


def apt_install_command(packages: list[str], euid: int) -> list[str]:
    """The apt-get command that installs ``packages``: through ``sudo -n`` (never a password prompt) when not root."""
    sudo = [] if euid == 0 else ["sudo", "-n"]
    return [*sudo, "apt-get", "install", "-y", "--no-install-recommends", *packages]


def apt_install(packages: list[str], why: str) -> None:
    """Install Debian packages for a CI prerequisite, updating the package list once if the first try fails; exit
    loudly if they cannot be installed."""
    say(f"installing {' '.join(packages)} for {why} (apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = apt_install_command(packages, os.geteuid())
    if run(*command, env=env) != 0:
        run(*command[: command.index("apt-get") + 1], "update", env=env)  # a stale package list is the usual cause
        if run(*command, env=env) != 0:
            sys.exit(f"[dev] apt-get could not install {' '.join(packages)}; CI requires them for {why}")


CHROMIUM = Path("/usr/bin/chromium")


def check_chromium_for_ci() -> None:
    """In CI the dashboard's browser tests (tests/browser/) are mandatory: install Debian's ``chromium`` with apt-get
    when it is missing (through sudo when not root), and fail loudly if that fails. Outside CI they skip, saying
    why, without a browser."""
    if not os.environ.get("CI") or CHROMIUM.exists():
        return
    apt_install(["chromium"], "tests/browser/")
    if not CHROMIUM.exists():
        sys.exit(f"[dev] chromium was installed but {CHROMIUM} is missing; CI requires it for tests/browser/")


NGINX = Path("/usr/sbin/nginx")


def check_nginx_for_ci() -> None:
    """In CI the cluster test behind a real load balancer (tests/e2e/test_cluster_nginx.py: three nodes behind
    docs/nginx-ledger.conf) is mandatory: install Debian's ``nginx`` with apt-get when it is missing (through sudo
    when not root), and fail loudly if that fails. The test runs nginx as its own child process with its own
    configuration; the package's service is not needed. Outside CI the test skips, saying why, without nginx."""
    if not os.environ.get("CI") or NGINX.exists():
        return
    apt_install(["nginx"], "tests/e2e/test_cluster_nginx.py")
    if not NGINX.exists():
        sys.exit(
            f"[dev] nginx was installed but {NGINX} is missing; CI requires it for tests/e2e/test_cluster_nginx.py"
        )


GO_SUMDB = Path("/usr/share/gocode/src/golang.org/x/mod/sumdb")


def go_packages_missing(go: str | None, sumdb: Path) -> list[str]:
    """The Debian packages the Go cross-check of the transparency log lacks: ``golang-go`` when there is no ``go``
    (``go`` is its path on PATH, or None), ``golang-golang-x-mod-dev`` when golang.org/x/mod/sumdb/{note,tlog} are
    missing. A Go that is already there is used, not replaced."""
    missing = [] if go else ["golang-go"]
    if not all((sumdb / package).is_dir() for package in ("note", "tlog")):
        missing.append("golang-golang-x-mod-dev")
    return missing


def check_go_for_ci() -> None:
    """In CI the Go cross-check of the transparency log (tests/go_support.py: the Go team's sumdb/note and
    sumdb/tlog) is mandatory: install Debian's ``golang-go`` and ``golang-golang-x-mod-dev`` with apt-get when
    missing (through sudo when not root), build the checker up front, and fail loudly if either fails. Outside CI
    the tests skip, saying why, without Go."""
    if not os.environ.get("CI"):
        return
    missing = go_packages_missing(shutil.which("go"), GO_SUMDB)
    if missing:
        apt_install(missing, "the Go cross-check of the transparency log (tests/go_support.py)")
        still = go_packages_missing(shutil.which("go"), GO_SUMDB)
        if still:
            sys.exit(f"[dev] {' '.join(still)} installed, yet go or {GO_SUMDB} is missing; CI requires them")
    if run(PY, "-m", "tests.go_support") != 0:
        sys.exit("[dev] the Go checker tests/go/tlogcheck could not be built; CI requires it")


def cmd_test(args: list[str]) -> int:
    ensure_venv("dev,semantic")  # the suite tests hybrid search with the real model
    check_postgres_for_ci()
    check_node_for_ci()
    check_chromium_for_ci()
    check_nginx_for_ci()
    check_go_for_ci()
    for step in (["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"]):
        say("running " + " ".join(step))
        if run(BIN / step[0], *step[1:]) != 0:
            return 1
    wheel = build_dist()
    say("running pytest")
    # Line coverage slows the suite by about half (1373 s against 888 s, one process): asked for, not by default,
    # so that CI stays well inside its time. LEDGER_TEST_COVERAGE=1 adds the report.
    coverage = (
        ["--cov=ledger", "--cov=projections", "--cov=api", "--cov-report=term:skip-covered"]
        if os.environ.get("LEDGER_TEST_COVERAGE")
        else []
    )
    return run(
        PY,
        "-m",
        "pytest",
        *coverage,
        # one worker per core (pytest-xdist): the suite is a few thousand independent tests, each on its own
        # SQLite file or PostgreSQL schema and its own loopback ports; `-n 0` in ARGS runs it in one process
        "-n",
        "auto",
        *args,
        # tests/e2e/test_install.py installs this wheel instead of building one of its own
        env={**os.environ, "LEDGER_TEST_WHEEL": str(wheel)},
    )


# The ledger's own options (api/cli/root.py), which its command line takes before the command: ``serve --home DIR``
# here becomes ``compliance-ledger --home DIR serve``. Each takes a value. tests/unit/test_dev_serve_args.py checks this
# list against the root command's options.
GLOBAL_OPTIONS = ("--db", "--home", "--key-file", "--signing-key-file")


def serve_argv(args: list[str]) -> list[str]:
    """``compliance-ledger``'s arguments for ``dev.py serve ARGS``: the ledger's own options (``--home DIR`` or
    ``--home=DIR``) moved before ``serve``, everything else after it in the order given."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if arg == "--":  # the end of the options: the rest is serve's, as given
            rest.extend(args[i:])
            break
        if name in GLOBAL_OPTIONS and "=" in arg:
            front.append(arg)
        elif name in GLOBAL_OPTIONS:
            if i + 1 >= len(args):
                raise SystemExit(f"[dev] {arg} needs a value, e.g. {arg} /path")
            front.extend(args[i : i + 2])
            i += 1
        else:
            rest.append(arg)
        i += 1
    return [*front, "serve", *rest]


def cmd_serve(args: list[str]) -> int:
    argv = serve_argv(args)
    ensure_venv("semantic")  # hybrid search in the quickstart service
    # exec, not a child: a signal sent to this process (a supervisor's SIGTERM, `kill PID`) reaches the server
    # itself instead of leaving it running without its parent. In the directory it was started from: a relative
    # --home means what it says, and that directory is one of the default project roots.
    command = BIN / "compliance-ledger"
    os.execv(command, [str(command), *argv])


def main() -> int:
    commands = {"test": cmd_test, "serve": cmd_serve}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    return commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
