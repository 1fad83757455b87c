"""The servers: ``compliance-ledger mcp`` (stdio, one agent) and ``serve`` (REST with MCP at /mcp)."""

from __future__ import annotations

import ipaddress
import os
import sys
from typing import Annotated

import typer

from api.cli.context import fail, settings_of
from api.cli.output import err
from ledger.core.errors import InvalidInput, LedgerError


def mcp(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option(envvar="LEDGER_AGENT", help="the agent this stdio server acts for")],
    role: Annotated[str, typer.Option(help="role of the default session opened at start")] = "agent",
    working_dir: Annotated[
        str | None, typer.Option(help="project directory of the default session (needed to anchor)")
    ] = None,
) -> None:
    """Run the MCP server on stdio for one agent, with a default session opened at start."""
    from api.bootstrap import initialise
    from api.mcp.server import build_mcp
    from ledger.anchor import project as project_context

    settings = settings_of(ctx)
    try:
        ledger, _ = initialise(settings, seed_new=True)
    except LedgerError as exc:
        raise fail(exc) from exc
    if working_dir is not None:
        try:  # refuse a bad directory here, with a message, rather than failing inside the server
            working_dir = str(project_context.check_working_dir(working_dir, ledger.config.project_roots))
        except LedgerError as exc:
            raise fail(exc) from exc
    build_mcp(
        ledger,
        agent=agent,
        default_role=role,
        default_working_dir=working_dir,
        open_default_session=True,
        checkpoint_file=settings.checkpoint_path,
    ).run()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _cap_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas before the server starts its threads. glibc gives threads that allocate at the
    same time arenas of their own (up to eight per core) and memory freed in one is not reused by another, so
    under a thread pool the RSS grows with the threads, not with the work; two is the usual cap for Python
    servers. ``MALLOC_ARENA_MAX`` in the environment, if set, wins; elsewhere than glibc nothing changes."""
    if not sys.platform.startswith("linux") or os.environ.get("MALLOC_ARENA_MAX"):
        return
    import contextlib
    import ctypes

    m_arena_max = -8  # from glibc's malloc.h
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(m_arena_max, arenas)


def serve(
    ctx: typer.Context,
    host: Annotated[str | None, typer.Option(help="bind address (default 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="port (default 8787)")] = None,
    agent: Annotated[str | None, typer.Option(help="agent name for callers when no API keys exist")] = None,
    allowed_host: Annotated[list[str] | None, typer.Option(help="extra Host header to accept")] = None,
) -> None:
    """Serve REST and MCP (Streamable HTTP at /mcp)."""
    import uvicorn

    _cap_malloc_arenas()

    from api.bootstrap import initialise, redact
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
        ledger, report = initialise(settings, seed_new=True)
        ring = ledger.key_ring()
    except LedgerError as exc:
        raise fail(exc) from exc
    keys = ring.ever_issued  # once any key was issued every request needs a live one, even if all are revoked
    if not _is_loopback(settings.host) and not keys:
        ledger.store.dispose()
        raise fail(
            InvalidInput(
                f"refusing to listen on {settings.host} without API keys: anyone could act as any agent",
                "create one with `compliance-ledger keys add --agent NAME`, or bind to 127.0.0.1",
            )
        )
    err.print(f"Compliance Ledger on http://{settings.host}:{settings.port}  (REST; MCP at /mcp; docs at /docs)")
    err.print(
        f"database {redact(report.database_url)}; "
        + (
            f"API keys required ({len(ring.active())} live)"
            if keys
            else f"no API keys: callers act as {settings.agent!r}"
        )
    )
    if settings.cors_origins:
        err.print(f"CORS allowed for /mcp and /api/v1/ from {', '.join(settings.cors_origins)}")
        if not keys:
            err.print(
                "[bold]warning:[/bold] CORS without API keys lets any allowed web page in this machine's browser act "
                f"as {settings.agent!r}; create a key with `compliance-ledger keys add --agent NAME`"
            )
    # No access log: at log level warning its lines are never printed, but uvicorn would still format each one.
    uvicorn.run(
        build_app(ledger, settings), host=settings.host, port=settings.port, log_level="warning", access_log=False
    )


def register(app: typer.Typer) -> None:
    """Add ``mcp`` and ``serve`` to the root command."""
    app.command()(mcp)
    app.command()(serve)
