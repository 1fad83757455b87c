"""The ``compliance-ledger`` command: set up, serve, and audit the ledger."""

from __future__ import annotations

import datetime as _dt
import ipaddress
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.core

from ledger.errors import InvalidInput, LedgerError, StoreBusy
from ledger.limits import MAX_INT64
from ledger.text import HINT as TEXT_HINT
from ledger.text import bad_char, find_bad_text

if TYPE_CHECKING:  # the ledger loads only when a command needs it: ``--help`` and ``--version`` stay fast
    from rich.console import Console

    from api.settings import Settings
    from ledger.results import BlockOut, TaskInfo
    from ledger.service import Actor, Ledger


def argv_field(args: list[str], index: int) -> str:
    """How to name ``args[index]`` to a person: ``--opt`` for an option's value, else its position."""
    token = args[index]
    if token.startswith("--") and "=" in token:
        return token.split("=", 1)[0]
    if index > 0 and args[index - 1].startswith("-") and not token.startswith("-"):
        return args[index - 1]
    return f"argument {index + 1}"


class _CheckedGroup(typer.core.TyperGroup):
    """The root command refuses an argument or option value holding a NUL or a lone surrogate (undecodable bytes
    reach Python as lone surrogates) before any command runs: exit 2, as for any invalid input."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        for i, token in enumerate(args):
            if bad_char(token) is not None:
                found = find_bad_text({argv_field(args, i): token})
                assert found is not None
                raise _fail(InvalidInput(found.message("command-line value"), TEXT_HINT))
        return list(super().parse_args(ctx, args))


app = typer.Typer(
    cls=_CheckedGroup,
    name="compliance-ledger",
    help="Hash-chained audit ledger of AI coding agents' memory discipline.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
keys_app = typer.Typer(help="Manage HTTP API keys.", no_args_is_help=True)
report_app = typer.Typer(help="Compliance reports.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
app.add_typer(report_app, name="report")

anchor_app = typer.Typer(help="Odyssean Anchor proofs.", no_args_is_help=True)
app.add_typer(anchor_app, name="anchor")
memory_app = typer.Typer(help="Memory blocks: list, inspect, curate.", no_args_is_help=True)
app.add_typer(memory_app, name="memory")
# The person at the console: whoever can run this command can read the database and key anyway.
OPERATOR_NAME = "operator"


def operator() -> Actor:
    """The person at the console, as an admin actor."""
    from ledger.service import Actor

    return Actor(OPERATOR_NAME, "cli", admin=True)


class _Console:
    """A rich console made on first use, so commands that print nothing fancy (and ``--help``) never load rich's
    renderers; stdout is looked up when it prints (test runners swap it)."""

    def __init__(self, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)


out = _Console()
err = _Console(stderr=True)


@app.callback()
def _global(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option("--db", help="database URL (default: LEDGER_DATABASE_URL or an SQLite file under --home)"),
    ] = None,
    home: Annotated[
        Path | None,
        typer.Option(help="data directory (default: LEDGER_HOME or ~/.local/share/compliance-ledger)"),
    ] = None,
    key_file: Annotated[Path | None, typer.Option(help="receipt key file (default: HOME/receipt.key)")] = None,
    signing_key_file: Annotated[
        Path | None, typer.Option(help="Ed25519 signing key file (default: HOME/signing.key)")
    ] = None,
) -> None:
    overrides: dict[str, Any] = {}
    if signing_key_file:
        overrides["signing_key_file"] = signing_key_file
    if db:
        overrides["database_url"] = db
    if home:
        overrides["home"] = home
    if key_file:
        overrides["key_file"] = key_file
    from api.settings import Settings  # pydantic-settings: not on the path of --help

    ctx.obj = Settings(**overrides)


def _settings(ctx: typer.Context) -> Settings:
    from api.settings import Settings

    settings = ctx.obj
    assert isinstance(settings, Settings)
    return settings


EXIT_BUSY = 75  # EX_TEMPFAIL: the write lock was held past LEDGER_LOCK_TIMEOUT_SECONDS; nothing was recorded


def _fail(exc: LedgerError, code: int = 1) -> typer.Exit:
    err.print(f"[red]error:[/red] {exc.message}")
    if exc.hint:
        err.print(f"[dim]hint:[/dim] {exc.hint}")
    if isinstance(exc, StoreBusy):
        return typer.Exit(EXIT_BUSY)
    return typer.Exit(2 if isinstance(exc, InvalidInput) else code)


@contextmanager
def _ledger(ctx: typer.Context) -> Iterator[Ledger]:
    from api.bootstrap import open_ledger

    try:
        ledger = open_ledger(_settings(ctx))
    except LedgerError as exc:
        raise _fail(exc) from exc
    try:
        yield ledger
    except LedgerError as exc:
        raise _fail(exc) from exc
    finally:
        ledger.snapshots.wait()  # a snapshot this command started is worth finishing: the next one starts from it
        ledger.store.dispose()


@contextmanager
def _progress(label: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on stderr (silent when stderr is not a terminal)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err.real(),
        transient=True,
        disable=not err.is_terminal,
    ) as progress:
        task = progress.add_task(label, total=total)
        yield lambda n: progress.update(task, completed=n)


def _when(text: str | None) -> _dt.datetime | None:
    from ledger.canonical import parse_ts

    if text is None:
        return None
    try:
        return parse_ts(text)
    except ValueError as exc:
        raise _fail(
            InvalidInput(f"--as-of {text!r} is not a time", "send ISO 8601 with an offset, e.g. 2026-01-31T12:00:00Z")
        ) from exc


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")


# --- setup ----------------------------------------------------------------------------------------------


@app.command()
def init(
    ctx: typer.Context,
    no_seed: Annotated[bool, typer.Option("--no-seed", help="skip the 10 constitutional memory blocks")] = False,
    self_text: Annotated[str | None, typer.Option("--self", help="add a self/context block: who the agent is")] = None,
) -> None:
    """Create the schema and receipt key, and seed the constitutional memory (all safe to run again)."""
    from api.bootstrap import initialise, redact

    settings = _settings(ctx)
    try:
        ledger, report = initialise(settings)
    except LedgerError as exc:
        raise _fail(exc) from exc
    try:
        setup = ledger.setup_memory(operator(), identity=self_text, seed=not no_seed)
    except LedgerError as exc:
        raise _fail(exc) from exc
    finally:
        ledger.store.dispose()
    out.print(
        f"database   {redact(report.database_url)} "
        f"({'initialised' if report.ledger_created else 'already initialised'})"
    )
    out.print(
        f"receipt key {report.key_path} ({'created' if report.key_created else 'kept'}) — "
        "back it up: without it no receipt can be verified"
    )
    out.print(
        f"signing key {report.signing_key_path} ({'created' if report.signing_key_created else 'kept'}) — "
        "Ed25519: signs checkpoints and receipts; publish its public half (`compliance-ledger keys public`)"
    )
    out.print(
        f"memory     {len(setup.created)} block(s) created, {len(setup.already_present)} already present; "
        f"{setup.constitutional_blocks} constitutional"
    )


@keys_app.command("add")
def keys_add(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option(help="agent this key identifies")],
    admin: Annotated[
        bool, typer.Option("--admin", help="role admin: everything, plus unlock, keys and human roles")
    ] = False,
    auditor: Annotated[bool, typer.Option("--auditor", help="role auditor: reads everything, changes nothing")] = False,
) -> None:
    """Issue an API key for an agent (role agent: acts, and reads only its own). Printed once; only its hash is
    stored."""
    if admin and auditor:
        raise _fail(InvalidInput("--admin and --auditor were both given", "choose one role (or neither: agent)"))
    with _ledger(ctx) as ledger:
        created = ledger.issue_api_key(operator(), agent, role="admin" if admin else "auditor" if auditor else "agent")
    err.print(
        f"API key {created.key_id} for agent {created.agent!r} (role {created.role}) — shown once, store it now:",
        markup=False,
    )
    out.print(created.api_key, highlight=False)


@keys_app.command("list")
def keys_list(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every key ever issued: id, agent, role, issued at, and revoked at / by / why."""
    from rich import box
    from rich.table import Column, Table

    with _ledger(ctx) as ledger:
        listed = ledger.api_key_list(operator())
    if as_json:
        _print_json([k.model_dump(mode="json") for k in listed])
        return
    table = Table(
        Column("key id", no_wrap=True),
        Column("agent", overflow="fold"),
        "role",
        Column("issued at", no_wrap=True),
        Column("revoked", overflow="fold"),
        box=box.SIMPLE_HEAD,
    )
    for k in listed:
        revoked = "-"
        if k.revoked_at is not None:
            revoked = f"{_minute(k.revoked_at)} by {k.revoked_by or '?'}" + (f": {k.reason}" if k.reason else "")
            revoked += f" (replaced by {k.replaced_by})" if k.replaced_by else ""
        table.add_row(k.key_id, k.agent, k.role, _minute(k.issued_at), revoked)
    out.print(table if listed else "no API keys issued")


def _minute(moment: _dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%MZ")


@keys_app.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(help="the key's id, as `keys list` shows it")],
    reason: Annotated[str | None, typer.Option(help="why (recorded in the ledger)")] = None,
) -> None:
    """Revoke a key. Every server on this database refuses it from its next request on."""
    with _ledger(ctx) as ledger:
        revoked = ledger.revoke_api_key(operator(), key_id, reason)
    out.print(f"revoked {revoked.key_id} (agent {revoked.agent!r}, role {revoked.role})", markup=False)


@keys_app.command("rotate")
def keys_rotate(
    ctx: typer.Context, key_id: Annotated[str, typer.Argument(help="the key to replace, as `keys list` shows it")]
) -> None:
    """Issue a new key for the same agent and role and revoke the old one (one event append). The new key is
    printed once."""
    with _ledger(ctx) as ledger:
        created = ledger.rotate_api_key(operator(), key_id)
    err.print(
        f"revoked {key_id}; new API key {created.key_id} for agent {created.agent!r} (role {created.role}) — "
        "shown once, store it now:",
        markup=False,
    )
    out.print(created.api_key, highlight=False)


@keys_app.command("public")
def keys_public(
    ctx: typer.Context,
    fmt: Annotated[str, typer.Option("--format", help="pem | jwk | json (both, with the key id)")] = "pem",
) -> None:
    """Print the ledger's public signing key: give it to whoever checks receipts and checkpoints."""
    from ledger import signing

    if fmt not in {"pem", "jwk", "json"}:
        raise _fail(InvalidInput(f"--format {fmt!r} is not known", "use pem, jwk or json"))
    with _ledger(ctx) as ledger:
        public = ledger.public_key()
    if fmt == "pem":
        sys.stdout.write(public.pem)
    else:
        _print_json(public.jwk if fmt == "jwk" else signing.public_key_document(public))


@anchor_app.command("validate")
def anchor_validate(
    ctx: typer.Context,
    proof_file: Annotated[Path, typer.Argument(help="file holding the proof ('-' for standard input)")],
    session: Annotated[str, typer.Option("--session", help="the session to anchor")],
    agent: Annotated[str, typer.Option(envvar="LEDGER_AGENT", help="the agent that owns the session")],
    role: Annotated[str | None, typer.Option(help="role to claim (default: the session's role)")] = None,
    tier: Annotated[str, typer.Option(help="quick | default | deep")] = "default",
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Submit an anchor proof for a session. Exit 0 when validated, 1 when not."""
    from ledger.service import Actor

    try:
        text = sys.stdin.read() if str(proof_file) == "-" else proof_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise _fail(InvalidInput(f"cannot read {proof_file}: {exc.strerror}", "give a readable file")) from exc
    except UnicodeDecodeError as exc:
        raise _fail(InvalidInput(f"{proof_file} is not UTF-8 text", "save the proof as UTF-8")) from exc
    if (found := find_bad_text({str(proof_file): text})) is not None:
        raise _fail(InvalidInput(found.message("file"), TEXT_HINT))
    with _ledger(ctx) as ledger:
        claimed = role or ledger.session_state(session).role
        result = ledger.anchor(Actor(agent, "cli"), session, claimed, text, tier)
    if as_json:
        _print_json(result.model_dump(mode="json"))
    else:
        e = result.enforcement
        out.print(
            ("[green]VALIDATED[/green]" if result.validated else "[red]NOT VALIDATED[/red]")
            + f" (attempt {e.attempt}, retries left {e.retries_left}{', LOCKED' if e.locked else ''})"
        )
        for line in result.warnings:
            out.print(f"[yellow]warning:[/yellow] {line}")
        out.print(result.canonical_proof if result.validated else result.guidance, highlight=False)
        if result.template:
            out.print("\ntemplate:\n" + result.template, highlight=False)
    raise typer.Exit(0 if result.validated else 1)


@anchor_app.command("unlock")
def anchor_unlock(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the locked session")],
    reason: Annotated[str, typer.Option(help="why it may try again (recorded in the ledger)")],
) -> None:
    """Lift a session's anchor lock (recorded as an event naming the operator and the reason)."""
    with _ledger(ctx) as ledger:
        state = ledger.unlock_anchor(operator(), session, reason)
    out.print(f"unlocked {state.session_id}: {state.anchor.total_attempts} attempts so far, retries start again")


# --- servers --------------------------------------------------------------------------------------------


@app.command()
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
    from ledger import project_context

    try:
        ledger, _ = initialise(_settings(ctx), seed_new=True)
    except LedgerError as exc:
        raise _fail(exc) from exc
    if working_dir is not None:
        try:  # refuse a bad directory here, with a message, rather than failing inside the server
            working_dir = str(project_context.check_working_dir(working_dir, ledger.config.project_roots))
        except LedgerError as exc:
            raise _fail(exc) from exc
    build_mcp(ledger, agent=agent, default_role=role, default_working_dir=working_dir, open_default_session=True).run()


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


@app.command()
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

    base = _settings(ctx)
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
        raise _fail(exc) from exc
    keys = ring.ever_issued  # once any key was issued every request needs a live one, even if all are revoked
    if not _is_loopback(settings.host) and not keys:
        ledger.store.dispose()
        raise _fail(
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


# --- audit ----------------------------------------------------------------------------------------------


PublicKeyOption = Annotated[
    Path | None,
    typer.Option("--public-key", help="the ledger's public key (PEM or JWK) from a trusted copy", exists=True),
]


@app.command()
def verify(
    ctx: typer.Context,
    checkpoint: Annotated[
        list[Path] | None,
        typer.Option(
            "--checkpoint",
            help="a checkpoint file (JSON lines) or a directory of them, kept outside the database; repeatable",
            exists=True,
        ),
    ] = None,
    public_key: PublicKeyOption = None,
) -> None:
    """Recompute the hash chain and check signed checkpoints. Exit 0 when all hold; else name what broke, exit 1.

    The chain alone proves the log is self-consistent. With checkpoints kept elsewhere it also proves that no
    event up to each checkpoint was removed or rewritten (truncation, rollback, re-hashing, an emptied table).
    """
    from ledger import checkpoints, signing

    with _ledger(ctx) as ledger:
        sources = list(checkpoints.read_sources(checkpoint or [])) if checkpoint else []
        public = signing.PublicKey.load(public_key) if public_key else (ledger.public_key() if sources else None)
        head, _ = ledger.store.head()
        with _progress("verifying", head) as tick:
            report = ledger.verify(progress=tick)
        findings = ledger.verify_checkpoints(sources, public) if public is not None else []
    failed = [f for f in findings if not f.ok]
    if report.ok:
        out.print(f"chain intact: {report.checked} events, head position {report.head_position}")
    else:
        where = f"at position {report.first_bad_position}" if report.first_bad_position is not None else ""
        err.print(
            f"[red]chain broken {where}[/red]: {report.reason} ({report.checked} events verified before it)",
            markup=True,
        )
    if findings:
        held = len(findings) - len(failed)
        out.print(f"checkpoints: {held} of {len(findings)} held (signed by key {public.key_id if public else '?'})")
    for f in failed:
        err.print(f"[red]checkpoint {f.where} fails[/red]: {f.problem}", soft_wrap=True)
    raise typer.Exit(0 if report.ok and not failed else 1)


@app.command("checkpoint")
def checkpoint_cmd(
    ctx: typer.Context,
    out_file: Annotated[
        Path | None, typer.Option("--out", help="append the checkpoint to this file (JSON lines) instead of printing")
    ] = None,
) -> None:
    """Sign the current head of the log. Keep checkpoints where the database's writers cannot reach them."""
    from ledger import checkpoints

    with _ledger(ctx) as ledger:
        signed = ledger.checkpoint()
    if out_file is None:
        sys.stdout.write(signed.to_line() + "\n")
        return
    try:
        checkpoints.CheckpointLog(out_file).append(signed)
    except OSError as exc:
        raise _fail(InvalidInput(f"cannot write {out_file}: {exc.strerror}", "give a writable file")) from exc
    err.print(f"checkpoint of position {signed.position} appended to {out_file}")


@app.command("verify-stamp")
def verify_stamp(
    ctx: typer.Context,
    receipt: str,
    public_key: Annotated[
        Path | None,
        typer.Option(
            "--public-key",
            help="check offline with this public key (PEM or JWK) alone: no database is opened",
            exists=True,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Check a stamp receipt. Exit 0 when genuine, 1 when not.

    On the ledger host it checks the signature and that the log still holds the stamp event. With --public-key it
    checks only the signature, anywhere, without the database.
    """
    from ledger import signing, stamps

    if public_key is not None:
        try:
            result = stamps.verify_offline(receipt, signing.PublicKey.load(public_key))
        except LedgerError as exc:
            raise _fail(exc) from exc
    else:
        with _ledger(ctx) as ledger:
            result = ledger.verify_stamp(receipt)
    if as_json:
        _print_json(result.model_dump(mode="json"))
    else:
        out.print(("[green]genuine[/green]" if result.valid else "[red]NOT genuine[/red]") + f": {result.reason}")
        if result.valid:
            out.print(
                f"event {result.position} · session {result.session_id} · agent {result.agent} · "
                f"{result.count} memories · {result.recorded_at}"
            )
    raise typer.Exit(0 if result.valid else 1)


@app.command()
def replay(
    ctx: typer.Context,
    as_of: Annotated[str | None, typer.Option("--as-of", help="ISO time: replay what was recorded by then")] = None,
    position: Annotated[int | None, typer.Option(min=0, max=MAX_INT64, help="replay up to this position")] = None,
    session: Annotated[str | None, typer.Option(help="show only this session")] = None,
    block: Annotated[
        list[str] | None, typer.Option("--block", help="also show this memory block's score at that moment")
    ] = None,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="also drop the projection snapshots and write new ones from position 0")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Replay projections from position 0. Without --as-of/--position the search index is rebuilt too."""
    from rich.table import Table

    moment = _when(as_of)
    if rebuild and (moment is not None or position is not None):
        raise _fail(InvalidInput("--rebuild works on the whole log", "drop --as-of/--position, or --rebuild"))
    with _ledger(ctx) as ledger:
        head, _ = ledger.store.head()
        rebuilt = snapshots = None
        if moment is None and position is None:
            with _progress("rebuilding search index", None) as tick:
                rebuilt = ledger.rebuild_index(tick)
        if rebuild:
            with _progress("rebuilding snapshots", head) as tick:
                snapshots = ledger.rebuild_snapshots(tick)
        with _progress("replaying", position if position is not None else head) as tick:
            result = ledger.replay(as_of=moment, position=position, progress=tick)
        skipped = ledger.index.skips()
    states = [s for s in result.sessions() if session is None or s.session_id == session]
    if session is not None and not states:
        raise _fail(InvalidInput(f"session {session} does not exist at that point", "check the id and the time"))
    try:
        blocks = [result.block(b) for b in block or []]
    except LedgerError as exc:
        raise _fail(exc) from exc
    memory_state = result.memory()
    if as_json:
        _print_json(
            {
                "position": result.position,
                "as_of": result.moment.isoformat(),
                "index_rebuilt": rebuilt,
                "index_skipped": [{"position": k.position, "reason": k.reason} for k in skipped],
                "snapshots_written": snapshots,
                "sessions": [s.model_dump(mode="json") for s in states],
                "compliance": [a.model_dump(mode="json") for a in result.compliance()],
                "memory": memory_state.model_dump(mode="json"),
                "blocks": [b.model_dump(mode="json") for b in blocks],
            }
        )
        return
    out.print(
        f"replayed to position {result.position} (as of {result.moment.isoformat()})"
        + (f"; search index rebuilt with {rebuilt} blocks" if rebuilt is not None else "")
        + (f"; {snapshots} projection snapshots written" if snapshots is not None else "")
    )
    for k in skipped:
        err.print(f"[yellow]warning:[/yellow] the search index skipped the event at position {k.position}: {k.reason}")
    table = Table("session", "agent", "role", "open", "token", "searches", "stamps", "refusals")
    for s in states[-50:]:
        table.add_row(
            s.session_id,
            s.agent,
            s.role,
            "no" if s.ended_at else "yes",
            s.token.status,
            str(s.searches),
            str(s.stamps),
            str(s.refusals),
        )
    out.print(table)
    _print_compliance(result.compliance())
    m = memory_state
    out.print(
        f"memory: {m.blocks} blocks ({m.archived} archived, {m.constitutional} constitutional), {m.edges} edges, "
        f"{m.curates} curate runs, {m.active_hours:.2f} active hours",
        soft_wrap=True,
    )
    for b in blocks:
        sc = b.score
        out.print(
            f"{b.block_id} [{b.tier}{', archived' if b.archived_at else ''}] score {sc.total:.4f} = "
            f"similarity {sc.similarity:.3f}, confidence {sc.confidence:.3f}, recency {sc.recency:.4f} "
            f"({sc.active_hours_since_reinforced:.2f} active h since reinforced), centrality {sc.centrality:.3f}, "
            f"reinforcement {sc.reinforcement:.3f}",
            soft_wrap=True,
            markup=False,
        )


@app.command()
def events(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines")] = False,
    stream: Annotated[str | None, typer.Option()] = None,
    type: Annotated[str | None, typer.Option("--type")] = None,
    after: Annotated[int, typer.Option(min=0, max=MAX_INT64)] = 0,
    limit: Annotated[int | None, typer.Option(min=1, max=MAX_INT64)] = None,
) -> None:
    """List events in position order."""
    from rich.table import Table

    from api.render import event_dict

    with _ledger(ctx) as ledger:
        table = Table("pos", "recorded_at", "stream", "type", "agent", "hash")
        for n, rec in enumerate(ledger.store.iter_records(after, stream=stream, types=[type] if type else None), 1):
            row = event_dict(rec)
            if as_json:
                _print_json(row)
            else:
                table.add_row(
                    str(rec.position),
                    rec.recorded_at,
                    rec.stream,
                    rec.type,
                    str(row["meta"].get("agent", "")),
                    rec.hash[:12],
                )
            if limit and n >= limit:
                break
        if not as_json:
            out.print(table)


def _print_compliance(rows: list[Any]) -> None:
    from rich.table import Table

    table = Table("agent", "searches", "stamp requests", "passes", "fails", "pass rate")
    for a in rows:
        rate = "—" if a.pass_rate is None else f"{a.pass_rate:.0%}"
        table.add_row(a.agent, str(a.searches), str(a.stamp_requests), str(a.passes), str(a.fails), rate)
    out.print(table)


@report_app.command("compliance")
def report_compliance(
    ctx: typer.Context,
    agent: Annotated[str | None, typer.Option()] = None,
    as_of: Annotated[str | None, typer.Option("--as-of")] = None,
    position: Annotated[int | None, typer.Option(min=0, max=MAX_INT64)] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Per-agent searches, stamp requests, passes, fails and pass rate."""
    with _ledger(ctx) as ledger:
        report = ledger.compliance_report(agent, as_of=_when(as_of), position=position)
    if as_json:
        _print_json(report.model_dump(mode="json"))
        return
    out.print(f"compliance at position {report.position}")
    _print_compliance(report.agents)


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.0%}"


def _params(counts: list[Any]) -> str:
    return ", ".join(f"{c.parameter} ({c.count})" for c in counts) or "—"


@report_app.command("enforcement")
def report_enforcement(
    ctx: typer.Context,
    agent: Annotated[str | None, typer.Option(help="only this agent's checks")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="ISO time: replay the checks recorded by then")] = None,
    position: Annotated[int | None, typer.Option(min=0, max=MAX_INT64)] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Parameter enforcement: checks and compliance per tool/action and agent, current levels, problem areas."""
    from rich.table import Column, Table

    from ledger.enforcement_report import enforcement_report

    with _ledger(ctx) as ledger:
        report = enforcement_report(ledger, agent, as_of=_when(as_of), position=position)
    if as_json:
        _print_json(report.model_dump(mode="json"))
        return
    t = report.totals
    out.print(f"enforcement at position {report.position}: {t.checks} checks, {_pct(t.compliance_rate)} compliant")
    out.print(f"blocked {t.blocked}, warned {t.warned}, recorded {t.recorded}, bypassed {t.bypassed}")

    def where() -> Column:
        return Column("tool.action", no_wrap=True)

    tools = Table(
        where(),
        "checks",
        "compliant",
        "blocked",
        "warned",
        Column("most missing", overflow="fold"),
        title="by tool/action",
    )
    for r in report.by_tool:
        row = (str(r.checks), _pct(r.compliance_rate), str(r.blocked), str(r.warned), _params(r.most_missing))
        tools.add_row(f"{r.tool}.{r.action}", *row)
    agents = Table("agent", where(), "checks", "compliant", "level now (base)", title="by agent")
    for a in report.by_agent:
        for lv in a.tools:
            level = f"{lv.current_level.value} ({lv.base_level.value})"
            agents.add_row(a.agent, f"{lv.tool}.{lv.action}", str(lv.checks), _pct(lv.compliance_rate), level)
    out.print(tools, agents)
    if not report.problem_areas:
        out.print(f"no problem areas (compliance below {report.problem_threshold:.0%})")
        return
    problems = Table(
        "agent",
        where(),
        "compliant",
        "checks",
        "failed",
        Column("common missing", overflow="fold"),
        title="problem areas",
    )
    for p in report.problem_areas:
        counts = (_pct(p.compliance_rate), str(p.checks), str(p.failed), _params(p.common_missing))
        problems.add_row(p.agent or "(all)", f"{p.tool}.{p.action}", *counts)
    out.print(problems)


# --- memory ---------------------------------------------------------------------------------------------


def _clip(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@memory_app.command("list")
def memory_list(
    ctx: typer.Context,
    tag: Annotated[
        str | None,
        typer.Option(help="only blocks with this tag, or with a tag under a prefix ending in '/' (e.g. project/)"),
    ] = None,
    tier: Annotated[str | None, typer.Option(help="permanent | durable | standard | ephemeral")] = None,
    archived: Annotated[bool, typer.Option("--archived", help="only archived blocks")] = False,
    all_blocks: Annotated[bool, typer.Option("--all", help="live and archived blocks")] = False,
    as_of: Annotated[str | None, typer.Option("--as-of", help="ISO time: the blocks as they were then")] = None,
    position: Annotated[int | None, typer.Option(min=0, max=MAX_INT64, help="the blocks as of this position")] = None,
    limit: Annotated[int, typer.Option(help="at most this many blocks (1..100)")] = 100,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Memory blocks (by default the live ones), best score first, with their decay state."""
    from rich import box
    from rich.table import Table

    if archived and all_blocks:
        raise _fail(InvalidInput("--archived and --all were both given", "send one of them, not both"))
    moment = _when(as_of)
    with _ledger(ctx) as ledger:
        result = ledger.memory_blocks(
            tag=tag,
            tier=tier,
            archived=None if all_blocks else archived,
            as_of=moment,
            position=position,
            limit=limit,
        )
    if as_json:
        _print_json(result.model_dump(mode="json"))
        return
    out.print(
        f"{result.count} block(s) at position {result.position} "
        f"(as of {result.as_of.isoformat()}, {result.active_hours:.2f} active hours)"
        + (f"; showing {len(result.blocks)}" if len(result.blocks) < result.count else "")
    )
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("id", no_wrap=True, min_width=28)  # a whole block id, to copy into `memory show`
    table.add_column("tier", no_wrap=True)
    for name in ("score", "recency", "conf", "reinf", "archived"):
        table.add_column(name, no_wrap=True, justify="right")
    table.add_column("content", ratio=1)
    for b in result.blocks:
        table.add_row(
            b.block_id,
            b.tier,
            f"{b.score.total:.3f}",
            f"{b.score.recency:.3f}",
            f"{b.confidence:.3f}",
            str(b.reinforcements),
            "yes" if b.archived_at else "no",
            _clip(b.content),
        )
    out.print(table)


def _print_block(b: BlockOut) -> None:
    from rich.table import Table

    table = Table("field", "value", show_header=False)
    for name, value in [
        ("id", b.block_id),
        ("tags", ", ".join(b.tags) or "—"),
        ("category", b.category),
        ("tier", f"{b.tier} (decay rate {b.decay_rate:g} per active hour)"),
        ("confidence", f"{b.confidence:.4f} after {b.outcomes} outcome(s)"),
        ("reinforcements", str(b.reinforcements)),
        ("created", b.created_at.isoformat()),
        ("last reinforced", f"{b.last_reinforced_at.isoformat()} ({b.score.active_hours_since_reinforced:.2f} h ago)"),
        ("archived", b.archived_at.isoformat() if b.archived_at else "no"),
    ]:
        table.add_row(name, value)
    out.print(table)
    out.print(b.content, highlight=False)
    s = b.score
    score = Table("component", "value", "weight")
    for part in ("similarity", "confidence", "recency", "centrality", "reinforcement"):
        score.add_row(part, f"{getattr(s, part):.4f}", f"{s.weights.get(part, 0.0):.2f}")
    score.add_row("total", f"{s.total:.4f}", "")
    out.print(score)
    out.print(f"weighted degree {s.weighted_degree:.4f}")


@memory_app.command("show")
def memory_show(
    ctx: typer.Context,
    block_id: Annotated[str, typer.Argument(help="the block id (blk_...)")],
    as_of: Annotated[str | None, typer.Option("--as-of", help="ISO time: the block as it was then")] = None,
    position: Annotated[int | None, typer.Option(min=0, max=MAX_INT64, help="the block as of this position")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """One block: its fields, score breakdown and every event that touched it."""
    from rich.table import Table

    moment = _when(as_of)
    with _ledger(ctx) as ledger:
        detail = ledger.memory_block(block_id, as_of=moment, position=position)
    if as_json:
        _print_json(detail.model_dump(mode="json"))
        return
    out.print(f"block at position {detail.position} (as of {detail.as_of.isoformat()})")
    _print_block(detail.block)
    history = Table("pos", "recorded_at", "type", "agent")
    for e in detail.history:
        history.add_row(str(e.position), e.recorded_at.isoformat(), e.type, e.agent or "")
    out.print(history)


@memory_app.command("curate")
def memory_curate(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Curate now: archive decayed blocks, prune weak edges, reinforce the constitution and the strongest blocks."""
    with _ledger(ctx) as ledger:
        result = ledger.curate(operator())
    if as_json:
        _print_json(result.model_dump(mode="json"))
        return
    out.print(
        f"curated at position {result.position} ({result.active_hours:.2f} active hours): "
        f"{result.archived} archived, {result.edges_pruned} edge(s) pruned, "
        f"{result.constitutional_reinforced} constitutional and {result.reinforced} top block(s) reinforced"
    )
    for block_id in result.archived_ids:
        out.print(f"archived {block_id}")


# --- tasks --------------------------------------------------------------------------------------------------------

task_app = typer.Typer(help="Workflow tasks with DNA gates.", no_args_is_help=True)
app.add_typer(task_app, name="task")
AgentOption = Annotated[str, typer.Option("--agent", envvar="LEDGER_AGENT", help="the agent acting")]
JSON_HINT = 'send a JSON object, e.g. {"blocked_reason": "waiting for the schema"}'


def _json_arg(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(InvalidInput(f"{what} is not JSON: {exc.msg}", JSON_HINT)) from exc
    if not isinstance(value, dict):
        raise _fail(InvalidInput(f"{what} is not a JSON object", JSON_HINT))
    if (found := find_bad_text(value, what)) is not None:
        raise _fail(InvalidInput(found.message(), TEXT_HINT))
    return value


def _print_task(task: TaskInfo) -> None:
    line = f"{task.task_id} [{task.task_type}] {task.status} (role {task.role}) — {task.title}"
    out.print(line, markup=False, soft_wrap=True)
    for name, value in sorted(task.dna.items()):
        out.print(f"  dna.{name} = {json.dumps(value, ensure_ascii=False)}", markup=False, soft_wrap=True)
    out.print(f"  next: {', '.join(task.next) or 'none'}", markup=False, soft_wrap=True)


def _show_task(task: TaskInfo, as_json: bool) -> None:
    if as_json:
        _print_json(task.model_dump(mode="json"))
    else:
        _print_task(task)


@task_app.command("create")
def task_create(
    ctx: typer.Context,
    task_id: Annotated[str, typer.Argument(help="a slug, e.g. memory-gate-42")],
    title: Annotated[str, typer.Argument(help="one line")],
    agent: AgentOption = "operator",
    task_type: Annotated[str, typer.Option("--type", help="task | bug")] = "task",
    role: Annotated[str, typer.Option(help="the role the task is assigned to")] = "dev",
    status: Annotated[str, typer.Option(help="starting status")] = "ready",
    dna: Annotated[str, typer.Option(help="initial DNA as a JSON object")] = "{}",
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Create a task."""
    from ledger.service import Actor

    fields = _json_arg(dna, "--dna")
    with _ledger(ctx) as ledger:
        task = ledger.task_create(
            Actor(agent, "cli"), task_id, title, task_type=task_type, role=role, status=status, dna=fields
        )
    _show_task(task, as_json)


@task_app.command("show")
def task_show(
    ctx: typer.Context,
    task_id: str,
    as_of: Annotated[str | None, typer.Option("--as-of", help="ISO time")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show a task (now or as of a time)."""
    moment = _when(as_of)
    with _ledger(ctx) as ledger:
        task = ledger.task_get(task_id, as_of=moment)
    _show_task(task, as_json)


@task_app.command("list")
def task_list(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(help="only this status")] = None,
    role: Annotated[str | None, typer.Option(help="only tasks assigned to this role")] = None,
    task_type: Annotated[str | None, typer.Option("--type", help="task | bug")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List tasks."""
    from rich.table import Table

    with _ledger(ctx) as ledger:
        tasks = ledger.task_list(status=status, role=role, task_type=task_type)
    if as_json:
        _print_json([t.model_dump(mode="json") for t in tasks])
        return
    table = Table("task", "type", "status", "role", "title")
    for t in tasks:
        table.add_row(t.task_id, t.task_type, t.status, t.role, t.title)
    out.print(table)


@task_app.command("dna")
def task_dna(
    ctx: typer.Context,
    task_id: str,
    fields: Annotated[str, typer.Argument(help="JSON object of fields to set")] = "{}",
    agent: AgentOption = "operator",
    remove: Annotated[list[str] | None, typer.Option("--remove", help="a field to remove")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Set (and/or remove) DNA fields: the seed's `update-dna <slug> '<json>' <actor>`."""
    from ledger.service import Actor

    changes = _json_arg(fields, "FIELDS")
    with _ledger(ctx) as ledger:
        task = ledger.task_update_dna(Actor(agent, "cli"), task_id, changes, remove or [])
    _show_task(task, as_json)


@task_app.command("transition")
def task_transition(
    ctx: typer.Context,
    task_id: str,
    to_status: Annotated[str, typer.Argument(help="target status, or 'restore'")],
    role: Annotated[
        str | None, typer.Argument(help="acting role (the seed's <actor>): a session is opened for it")
    ] = None,
    agent: AgentOption = "operator",
    session: Annotated[str | None, typer.Option(help="act in this existing session (and its role)")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Move a task: the seed's `transition <slug> <to> <actor>`. Exit 1 when refused."""
    from ledger.service import Actor

    if (role is None) == (session is None):
        raise _fail(InvalidInput("give a ROLE or --session (one of them)", "e.g. `task transition t1 active dev`"))
    # The operator at this terminal is a person, which is what acting in the human role requires.
    who = Actor(agent, "cli", admin=agent == OPERATOR_NAME)
    with _ledger(ctx) as ledger:
        sid = session or ledger.clock_in(who, role or "").session_id
        try:
            result = ledger.task_transition(who, task_id, to_status, sid)
        finally:
            if session is None:
                ledger.clock_out(who, sid)
    if as_json:
        _print_json(result.model_dump(mode="json"))
    elif result.status == "transitioned":
        out.print(f"{task_id}: {result.from_status} -> {result.to_status} ({result.rule})", markup=False)
        _print_task(result.task)
    else:
        err.print(f"{task_id}: {result.from_status} -> {result.to_status} refused", markup=False)
        for reason in result.reasons:
            err.print(f"  - {reason}", markup=False, soft_wrap=True)
    raise typer.Exit(0 if result.status == "transitioned" else 1)


@app.command()
def doctor(ctx: typer.Context) -> None:
    """Check the database, schema, receipt key, hash chain head and search index. Exit 1 on a problem."""
    from rich.table import Table

    from api.bootstrap import open_ledger, redact
    from ledger import checkpoints
    from ledger.search_index import CHECKPOINT

    settings = _settings(ctx)
    table = Table("check", "status", "detail")
    problems = 0

    def row(name: str, ok: bool, detail: str) -> None:
        nonlocal problems
        problems += not ok
        table.add_row(name, "[green]ok[/green]" if ok else "[red]FAIL[/red]", detail)

    try:
        ledger = open_ledger(settings)
    except LedgerError as exc:
        row("receipt key", False, f"{exc.message} — {exc.hint}")
        out.print(table)
        raise typer.Exit(1) from exc
    row("receipt key", True, f"{settings.key_path} (id {ledger.key.key_id})")
    try:
        head, head_hash = ledger.store.head()
        row("database", True, f"{redact(settings.db_url)} ({ledger.store.dialect})")
        row("events", True, f"head position {head}, hash {head_hash[:16]}")
        bound = ledger.bound_key_id()
        row("key binding", bound == ledger.key.key_id, f"ledger bound to key {bound or '— (run init)'}")
        signing_bound = ledger.bound_signing_key()
        if ledger.signer is None or signing_bound is None:
            row(
                "signing key", False, f"{settings.signing_key_path} missing or not bound — run `compliance-ledger init`"
            )
        else:
            same = signing_bound.key_id == ledger.signer.key_id
            row(
                "signing key",
                same,
                f"{settings.signing_key_path} (id {ledger.signer.key_id}, bound {signing_bound.key_id})",
            )
            latest = checkpoints.CheckpointLog(settings.checkpoint_path).latest()
            if latest is None:
                row("checkpoints", True, f"none in {settings.checkpoint_path} yet (serve writes them)")
            else:
                [finding] = ledger.verify_checkpoints(
                    [checkpoints.Source(str(settings.checkpoint_path), latest)], ledger.signer.public
                )
                row(
                    "checkpoints",
                    finding.ok,
                    f"latest: position {latest.position} at {latest.recorded_at}"
                    + ("" if finding.ok else f" — {finding.problem}"),
                )
        stats = ledger.memory_stats()
        row(
            "constitution",
            True,
            f"{stats.constitutional} constitutional memory blocks"
            + ("" if stats.constitutional else " (seed them with `compliance-ledger init`)"),
        )
        row(
            "memory",
            True,
            f"{stats.blocks} blocks, {stats.archived} archived blocks, {stats.edges} edges, "
            f"{stats.curates} curate run(s)",
        )
        row(
            "active hours",
            True,
            f"{stats.active_hours:.2f} h in which a session was active; "
            f"next auto-curate at {stats.next_auto_curate_at_active_hours:.2f} h",
        )
        checkpoint = ledger.index.checkpoint()
        row("search index", True, f"checkpoint {checkpoint} of {head} ({CHECKPOINT})")
        # An event the index cannot hold can only have been written to the database directly: a person looks.
        for k in ledger.index.skips():
            row("index skip", False, f"the search index skipped the event at position {k.position}: {k.reason}")
        ring = ledger.key_ring()
        row("API keys", True, f"{len(ring.keys)} issued, {len(ring.keys) - len(ring.active())} revoked")
    except LedgerError as exc:
        row("database", False, f"{exc.message} — {exc.hint}")
    finally:
        ledger.store.dispose()
    out.print(table)
    raise typer.Exit(1 if problems else 0)


def main() -> None:
    app()
