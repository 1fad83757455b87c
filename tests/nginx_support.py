"""nginx in front of ``serve`` nodes, as the README's "Running several nodes" runs it: Debian's ``nginx`` started as
a plain child process (``nginx -p DIR -c nginx.conf -e error.log -g 'daemon off;'``: no service, no system
directory; its pid file, logs and temp directories in a test's tmp dir), listening on a free loopback port, with
the shipped configuration docs/nginx-ledger.conf — its node addresses and listen port rewritten, nothing else.

Without nginx the tests skip with the reason on a developer machine and FAIL when ``CI`` is set (``scripts/dev.py
test`` installs Debian's ``nginx`` there, as it installs Chromium and Go)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.server_support import HTTP_TIMEOUT, READY_WITHIN, wait_until

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "docs" / "nginx-ledger.conf"
NGINX = os.environ.get("LEDGER_TEST_NGINX", "/usr/sbin/nginx")
REQUIRED = bool(os.environ.get("CI"))

_SERVER = re.compile(r"^([ \t]*)server[ \t]+\S+:\d+([ \t][^;\n]*)?;[ \t]*$", re.MULTILINE)
_LISTEN = re.compile(r"^([ \t]*)listen[ \t]+\d+;[ \t]*$", re.MULTILINE)


def nginx_binary() -> str:
    """The nginx to run: skip with the reason on a developer machine; fail in CI, where the cluster test must run."""
    found = NGINX if Path(NGINX).exists() else shutil.which(NGINX)
    if found:
        return found
    reason = f"no nginx at {NGINX} (apt-get install nginx; scripts/dev.py does it in CI)"
    if REQUIRED:
        pytest.fail(f"{reason} (CI is set, so the load-balancer test must run)")
    pytest.skip(reason)


def site_config(template: str, nodes: list[str], port: int) -> str:
    """The shipped site file with its upstream servers replaced by ``nodes`` (``host:port``, each keeping the
    template's server parameters) and its listen port by ``port``; refuses a template it cannot rewrite."""
    servers = list(_SERVER.finditer(template))
    listens = list(_LISTEN.finditer(template))
    assert servers and len(listens) == 1, f"{TEMPLATE} no longer has the upstream servers and listen line to rewrite"
    indent, params = servers[0].group(1), servers[0].group(2) or ""
    lines = "".join(f"{indent}server {node}{params};\n" for node in nodes)
    start, end = servers[0].start(), servers[-1].end()
    rewritten = template[:start] + lines.rstrip("\n") + template[end:]
    return _LISTEN.sub(lambda m: f"{m.group(1)}listen 127.0.0.1:{port};", rewritten)


def main_config(site: Path, run: Path) -> str:
    """The process-level frame around the site file, all in ``run``. Response bodies are never spooled to disk
    (when the test runs as root nginx's workers run as nobody, who cannot enter pytest's tmp dirs)."""
    return f"""worker_processes 1;
pid {run / "nginx.pid"};
error_log {run / "error.log"} info;
events {{ worker_connections 256; }}
http {{
    log_format upstream '$request $status upstream=$upstream_addr upstream_status=$upstream_status';
    access_log {run / "access.log"} upstream;
    client_body_temp_path {run / "client_body"};
    proxy_temp_path {run / "proxy"};
    fastcgi_temp_path {run / "fastcgi"};
    uwsgi_temp_path {run / "uwsgi"};
    scgi_temp_path {run / "scgi"};
    proxy_max_temp_file_size 0;
    include {site};
}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answering(base: str) -> bool:
    """Readiness: nginx's port answers and a node answers through it."""
    try:
        return httpx.get(f"{base}/health", timeout=HTTP_TIMEOUT).status_code == 200
    except httpx.TransportError:
        return False


@contextmanager
def nginx_in_front_of(nodes: list[str], run: Path) -> Iterator[str]:
    """nginx balancing ``nodes`` (``http://host:port`` each) with the shipped configuration; yield its URL once a
    node answers through it; stopped afterwards (SIGTERM, then SIGKILL if it lingers), also on failure."""
    binary = nginx_binary()
    run.mkdir(parents=True, exist_ok=True)
    port = free_port()
    site = run / "nginx-ledger.conf"
    site.write_text(site_config(TEMPLATE.read_text(), [n.removeprefix("http://") for n in nodes], port))
    (run / "nginx.conf").write_text(main_config(site, run))
    proc = subprocess.Popen(
        [binary, "-p", str(run), "-c", "nginx.conf", "-e", str(run / "error.log"), "-g", "daemon off;"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: proc.poll() is not None or answering(base), f"nginx on {base}")
        if proc.poll() is not None:
            raise AssertionError(f"nginx exited with {proc.returncode}: {errors(run)}")
        yield base
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # fast shutdown; the workers go with the master
            try:
                proc.wait(timeout=READY_WITHIN)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.wait()


def errors(run: Path) -> str:
    log = run / "error.log"
    return log.read_text()[-4000:] if log.exists() else "(no error log)"
