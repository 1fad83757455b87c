"""The servers: ``compliance-ledger mcp`` (stdio, one agent) and ``serve`` (REST with MCP at /mcp)."""

from __future__ import annotations

import errno
import gc
import ipaddress
import os
import socket
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from api.cli.context import fail, settings_of
from api.cli.output import err, progress
from ledger.core.errors import Conflict, InvalidInput, LedgerError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from fastapi import FastAPI

    from api.heartbeat import Heartbeat
    from api.settings import Settings
    from ledger.service import Ledger

LOG_JSON_HELP = "log one JSON object a line on stderr (default: key=value text; also LEDGER_LOG_JSON=1)"


def mcp(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option(envvar="LEDGER_AGENT", help="the agent this stdio server acts for")],
    role: Annotated[str, typer.Option(help="role of the default session opened at start")] = "agent",
    working_dir: Annotated[
        str | None, typer.Option(help="project directory of the default session (needed to anchor)")
    ] = None,
    log_json: Annotated[bool, typer.Option("--log-json", help=LOG_JSON_HELP)] = False,
) -> None:
    """Run the MCP server on stdio for one agent, with a default session opened at start."""
    # Start-up allocates a great many long-lived objects (models, schemas, then the ledger): no collection until the
    # ledger is open. The ledger opens after the ``initialize`` answer (api/mcp/opening.py): what answers it loads
    # neither SQLAlchemy nor the store.
    gc.disable()
    from api.mcp.opening import LedgerOpening, OpeningLimiter
    from api.mcp.server import build_mcp
    from ledger.workflow.report import configured_workflow

    settings = settings_of(ctx)
    _operate(settings, log_json)  # logs on stderr: stdout carries the protocol
    try:  # the task tools publish its names: a bad table is refused here, before serving
        workflow = configured_workflow(settings.workflow_file)
    except LedgerError as exc:
        raise fail(exc) from exc
    beats: list[Heartbeat] = []

    def open_ledger() -> Ledger:
        from api.bootstrap import open_node

        try:
            ledger, report = open_node(settings, progress=progress, workflow=workflow)
            if working_dir is not None:  # a directory the default session could not name refuses the start
                try:
                    ledger.check_working_dir(working_dir)
                except LedgerError:
                    ledger.store.dispose()
                    raise
            beats.append(_heartbeat(ledger, "mcp", report.settings_digest, settings, background=True))
            return ledger
        finally:
            gc.freeze()  # what start-up built stays: later collections need not walk it
            gc.enable()

    opening = LedgerOpening(open_ledger, workflow)
    server = build_mcp(
        opening,
        agent=agent,
        default_role=role,
        default_working_dir=working_dir,
        open_default_session=True,
        open_in_background=True,
        limiter=OpeningLimiter(opening, settings.rate_limit, settings.rate_limit_window_seconds)
        if settings.rate_limit > 0
        else None,
        transport="stdio",
        checkpoint_file=settings.checkpoint_path,
    )
    if sys.stdin.isatty():  # a person at a terminal, not a client waiting for its answer: a refusal is said at once
        opening.go()
    try:
        server.run()
    finally:
        for beat in beats:
            beat.stop()
    if opening.problem is not None:  # said on stderr when it happened; said again as the command's error
        raise fail(opening.problem)


def _heartbeat(ledger: Ledger, kind: str, digest: str, settings: Settings, *, background: bool = False) -> Heartbeat:
    """This node announced in ``ledger_nodes`` (``doctor`` lists it), then every 30 s while it runs; with
    ``background`` the first announcement too is made by the heartbeat's thread (``mcp``: its start waits for
    nothing it need not)."""
    from api.heartbeat import Heartbeat

    beat = Heartbeat(ledger, kind, digest)
    if settings.node_name:
        beat.name = settings.node_name
    beat.start(background=background)
    return beat


def _operate(settings: Settings, log_json: bool) -> None:
    """Logs on stderr, one line per request and tool call, and OpenTelemetry if ``LEDGER_OTEL_EXPORTER`` asks."""
    from api import logs

    logs.configure(json_lines=log_json or settings.log_json)
    if settings.otel_exporter != "none":
        from api import tracing  # the OpenTelemetry SDK loads only here

        try:
            tracing.install(settings.otel_exporter)
        except LedgerError as exc:
            raise fail(exc) from exc


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (not yet listening), or the error to print: taken, not allowed or no such
    address. ``serve`` binds before it announces anything, so a taken port is said first and plainly."""
    address = host.strip("[]")
    # IPPROTO_TCP named: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say they are TCP; with proto 0
    # every small answer waited for the client's delayed ACK (about 40 ms a request)
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a port in TIME_WAIT is free
    try:
        sock.bind((address, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise Conflict(
                f"port {port} on {host} is already in use by another program",
                f"stop that program, or choose another port: --port {port + 1 if port < 65535 else 8787} "
                "(or LEDGER_PORT), or --port 0 for any free one",
            ) from exc
        if exc.errno == errno.EACCES:
            raise InvalidInput(
                f"not allowed to listen on port {port} of {host}", "choose a port above 1023 with --port"
            ) from exc
        raise InvalidInput(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            "send --host with an address of this machine (default 127.0.0.1)",
        ) from exc
    return sock


def _tune_malloc(arenas: int = 2, mmap_threshold: int = 128 * 1024) -> None:
    """Tune glibc's malloc for a long-running threaded server, before it starts its threads:

    * cap its arenas at two: glibc gives threads that allocate at the same time arenas of their own (up to eight
      per core) and memory freed in one is not reused by another, so under a thread pool the RSS grows with the
      threads, not with the work; two is the usual cap for Python servers;
    * fix the mmap threshold at 128 KiB: by default glibc raises it to the size of the largest block freed (up to
      32 MiB), so after a snapshot restore has parsed megabytes of payload every later large buffer comes from
      the heap and its pages stay resident after it is freed. Fixed, large buffers are mapped and unmapped.

    ``MALLOC_ARENA_MAX`` / ``MALLOC_MMAP_THRESHOLD_`` in the environment, if set, win; elsewhere than glibc
    nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    import contextlib
    import ctypes

    m_arena_max, m_mmap_threshold = -8, -3  # from glibc's malloc.h
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        if not os.environ.get("MALLOC_ARENA_MAX"):
            libc.mallopt(m_arena_max, arenas)
        if not os.environ.get("MALLOC_MMAP_THRESHOLD_"):
            libc.mallopt(m_mmap_threshold, mmap_threshold)


def serve(
    ctx: typer.Context,
    host: Annotated[str | None, typer.Option(help="bind address (default 127.0.0.1)")] = None,
    port: Annotated[
        int | None, typer.Option(min=0, max=65535, help="port (default 8787; 0: any free port, named when it starts)")
    ] = None,
    agent: Annotated[str | None, typer.Option(help="agent name for callers when no API keys exist")] = None,
    allowed_host: Annotated[list[str] | None, typer.Option(help="extra Host header to accept")] = None,
    log_json: Annotated[bool, typer.Option("--log-json", help=LOG_JSON_HELP)] = False,
) -> None:
    """Serve REST and MCP (Streamable HTTP at /mcp)."""
    import uvicorn

    _tune_malloc()

    from api.bootstrap import open_node, redact
    from api.rest.app import build_app

    base = settings_of(ctx)
    settings = base.model_copy(
        update={
            k: v
            for k, v in {
                "host": host,
                "port": port,
                "agent": agent,
                "allowed_hosts": [*base.allowed_hosts, *(allowed_host or [])],
            }.items()
            if v is not None
        }
    )
    try:
        sock = _bind(settings.host, settings.port)
    except LedgerError as exc:
        raise fail(exc) from exc
    try:
        ledger, report = open_node(settings, progress=progress)
        ring = ledger.key_ring()
        if ledger.signer is not None:
            # A checkpoint of the tree before the first request, cosigned by the witnesses: a ledger whose witnesses
            # refuse (its database was rewritten, or they cannot be reached) does not start.
            ledger.sign_tlog_checkpoint()
    except LedgerError as exc:
        sock.close()
        raise fail(exc) from exc
    # The memory graph restored before the first request rather than by it: on a 1M-event ledger that is a 9 MB
    # snapshot decoded while nothing else allocates (peak RSS under scripts/bench_rss.py's load 120 -> 108 MB),
    # and the first recall does not wait for it. If it cannot be, the memory requests say why, as before.
    try:
        ledger.warm_memory()
    except LedgerError as exc:
        err.print(f"[bold]warning:[/bold] memory not restored at start: {exc}")
    keys = ring.ever_issued  # once any key was issued every request needs a live one, even if all are revoked
    if not _is_loopback(settings.host) and not keys:
        sock.close()
        ledger.store.dispose()
        raise fail(
            InvalidInput(
                f"refusing to listen on {settings.host} without API keys: anyone could act as any agent",
                "create one with `compliance-ledger keys add --agent NAME`, or bind to 127.0.0.1",
            )
        )
    # Listening from here on: a client that connects after the line below waits in the backlog until uvicorn
    # accepts, so the printed address is a readiness signal. With --port 0 it names the port the system chose.
    sock.listen(2048)
    port = sock.getsockname()[1]
    shown = f"[{settings.host.strip('[]')}]" if ":" in settings.host else settings.host  # an IPv6 address in a URL
    # One line, never wrapped: scripts (and the tests) read the address from it.
    err.print(f"Compliance Ledger on http://{shown}:{port}  (REST; MCP at /mcp; docs at /docs)", soft_wrap=True)
    err.print(
        f"database {redact(report.database_url)}; "
        + (
            f"API keys required ({len(ring.active())} live)"
            if keys
            else f"no API keys: callers act as {settings.agent!r}"
        )
    )
    err.print(f"sessions may work in: {', '.join(settings.project_roots) or 'no directory'} (LEDGER_PROJECT_ROOTS)")
    if settings.cors_origins:
        err.print(f"CORS allowed for /mcp and /api/v1/ from {', '.join(settings.cors_origins)}")
        if not keys:
            err.print(
                "[bold]warning:[/bold] CORS without API keys lets any allowed web page in this machine's browser act "
                f"as {settings.agent!r}; create a key with `compliance-ledger keys add --agent NAME`"
            )
    _operate(settings, log_json)
    # No uvicorn access log: api/rest/observe.py logs each request; uvicorn's own records go through api/logs.py.
    app = build_app(ledger, settings)
    beat = _heartbeat(ledger, "serve", report.settings_digest, settings)
    _stop_with(app, beat)
    config = uvicorn.Config(app, log_level="warning", access_log=False, log_config=None)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        beat.stop()  # if the app never started; a second stop writes nothing
        sock.close()
    if not server.started:  # the app's startup failed; uvicorn said why
        raise typer.Exit(3)


def _stop_with(app: FastAPI, beat: Heartbeat) -> None:
    """Stop ``beat`` (the node says it stopped) when the app shuts down: on SIGTERM uvicorn ends by raising the
    signal again, so nothing after ``server.run`` would run."""
    import contextlib

    import anyio.to_thread

    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(running: Any) -> AsyncIterator[Any]:
        async with inner(running) as state:
            try:
                yield state
            finally:
                await anyio.to_thread.run_sync(beat.stop)

    app.router.lifespan_context = lifespan


def register(app: typer.Typer) -> None:
    """Add ``mcp`` and ``serve`` to the root command."""
    app.command()(mcp)
    app.command()(serve)
