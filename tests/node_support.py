"""Node.js for the tests that drive official MCP clients and the MCP conformance suite.

The npm packages are pinned by ``tests/node/package.json`` and its committed ``package-lock.json``, and installed
with ``npm ci`` into a cache directory outside the checkout (``LEDGER_NODE_CACHE``, default
``~/.cache/compliance-ledger/node``), once per lockfile. The conformance suite needs Node >= 22: the machine's
``node`` if it is new enough, else the one the pinned ``node`` npm package brings. Without ``npm`` (or when the
install fails) the tests are skipped with the reason on a developer machine, and FAIL when ``CI`` is set.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

PACKAGE = Path(__file__).resolve().parent / "node"
REQUIRED = bool(os.environ.get("CI"))
_outcome: dict[str, NodeKit | str] = {}


@dataclass(frozen=True)
class NodeKit:
    """The installed packages (``root/node_modules``), a ``node`` >= 20 for the client scripts and one >= 22."""

    root: Path
    node: str
    node22: str

    def package(self, name: str) -> Path:
        return self.root / "node_modules" / name

    def version(self, name: str) -> str:
        return str(json.loads((self.package(name) / "package.json").read_text())["version"])

    def script(self, name: str) -> Path:
        """A script of ``tests/node``, placed beside the installed ``node_modules`` so that its imports resolve."""
        target = self.root / name
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(PACKAGE / name, partial)
        partial.replace(target)  # atomic: another test process may be running the same script
        return target


def unavailable(reason: str) -> NoReturn:
    """Skip with the reason on a developer machine; fail in CI, where the Node tests must run."""
    if REQUIRED:
        pytest.fail(f"{reason} (CI is set, so the Node tests must run)")
    pytest.skip(reason)


def node_kit() -> NodeKit:
    """The pinned packages, installed on first use; skips (or fails in CI) with the reason when that cannot be."""
    if "kit" not in _outcome:
        try:
            _outcome["kit"] = install()
        except NodeUnavailable as exc:
            _outcome["kit"] = str(exc)
    kit = _outcome["kit"]
    if isinstance(kit, str):
        unavailable(kit)
    return kit


class NodeUnavailable(Exception):
    """Node.js, npm or the pinned packages cannot be had on this machine; the message says why."""


def _major(node: str) -> int:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        return 0
    found = re.match(r"v(\d+)\.", out.strip())
    return int(found.group(1)) if found else 0


def install() -> NodeKit:
    """Install the pinned packages unless this lockfile's are already in the cache; raise NodeUnavailable if not."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        raise NodeUnavailable(
            "Node.js and npm are not on PATH; the official MCP TypeScript client and conformance tests need them: "
            "install Node.js >= 20 (npm fetches the Node 22 the conformance suite needs)"
        )
    if _major(node) < 20:
        raise NodeUnavailable(f"{node} is older than Node 20, which the official MCP TypeScript client v2 needs")
    files = [PACKAGE / "package.json", PACKAGE / "package-lock.json"]
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]
    default_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "compliance-ledger" / "node"
    cache = Path(os.environ.get("LEDGER_NODE_CACHE") or default_cache)
    root = cache / digest
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".install.lock", "w") as lock:  # one installer at a time, across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / ".installed").exists():
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(root)
            root.mkdir()
            for f in files:
                shutil.copy2(f, root / f.name)
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=1800,
            )
            if done.returncode != 0:
                tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
                raise NodeUnavailable(f"`npm ci` of tests/node/package-lock.json failed in {root}:\n{tail}")
            (root / ".installed").write_text(digest)
    bundled = root / "node_modules" / "node" / "bin" / "node"
    node22 = node if _major(node) >= 22 else str(bundled)
    if _major(node22) < 22:
        raise NodeUnavailable(
            f"the conformance suite needs Node >= 22; {node} is older and the pinned `node` npm package gave none "
            f"at {bundled} (its preinstall script downloads the binary from the npm registry)"
        )
    return NodeKit(root=root, node=node, node22=node22)


if __name__ == "__main__":  # `python -m tests.node_support`: install now and say what is pinned (CI runs it first)
    try:
        kit = install()
    except NodeUnavailable as exc:
        raise SystemExit(f"[node] {exc}") from None
    pinned = json.loads((PACKAGE / "package.json").read_text())["dependencies"]
    print(f"[node] {kit.root}: clients on {kit.node}, the conformance suite on {kit.node22}")
    for name in pinned:
        print(f"[node]   {name} {kit.version(name)}")
