"""Settings from the environment (``LEDGER_*``) and command-line options; no side effects at import."""

from __future__ import annotations

import datetime as _dt
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ledger.core.limits import Timeouts
from projections.search import fusion

if TYPE_CHECKING:
    from ledger.core.tlog.policy import Witness

_ORIGIN = re.compile(r"^https?://[^/\s?#]+$")


def default_home() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "compliance-ledger"


def default_project_roots() -> list[str]:
    """The home directory and the directory this process started from (``serve`` or ``mcp`` started in a project
    in /srv or /tmp accepts that project). Never the filesystem root, from either: a service manager or a container
    starts processes there (and some run with ``HOME=/``), and it would let a working_dir be anywhere; with neither
    left, every working_dir is refused until ``LEDGER_PROJECT_ROOTS`` names the roots."""
    home = Path.home()
    roots = [str(home)] if home.parent != home else []
    try:
        started = Path(os.getcwd())
    except OSError:  # the directory was removed under us: the home directory alone
        return roots
    if started.parent != started and not (roots and started.is_relative_to(roots[0])):
        roots.append(str(started))
    return roots


class Settings(BaseSettings):
    """Where the ledger lives and how it behaves. Every field can be set as ``LEDGER_<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix="LEDGER_", extra="ignore")

    home: Path = Field(default_factory=default_home, description="directory for the default database and key")
    database_url: str | None = Field(None, description="sqlite:///PATH or postgresql://...; default HOME/ledger.db")
    key_file: Path | None = Field(None, description="receipt signing key; default HOME/receipt.key")
    signing_key_file: Path | None = Field(
        None, description="the ledger's Ed25519 key (receipts, checkpoints); default HOME/signing.key"
    )
    checkpoint_file: Path | None = Field(
        None, description="append-only file serve writes signed checkpoints to; default HOME/checkpoints.jsonl"
    )
    checkpoint_every_events: int = Field(
        1000, ge=0, description="serve writes a checkpoint once the head moved this many events (0: not by count)"
    )
    checkpoint_every_minutes: float = Field(
        10.0, ge=0, description="... or this long after the last one, if the head moved (0: not by time)"
    )
    witnesses: str = Field(
        "",
        description="witnesses asked to cosign every transparency-log checkpoint: URL=VKEY entries separated by "
        "commas or spaces (the vkey `compliance-ledger tlog witness init` printed); empty: none",
    )
    checkpoint_min_cosignatures: int | None = Field(
        None, ge=0, description="cosignatures a checkpoint needs before it is kept and served (default: every witness)"
    )
    lock_timeout_seconds: float = Field(
        5.0, gt=0, description="longest wait for the ledger's write lock; past it the call is a 503 (store_busy)"
    )
    statement_timeout_seconds: float = Field(
        30.0, gt=0, description="longest any one database statement may run (PostgreSQL); past it a 503"
    )
    idle_in_transaction_timeout_seconds: float = Field(
        5.0,
        ge=0,
        description="PostgreSQL: a ledger session idle this long inside a transaction is ended by the server, so a "
        "stalled node loses the write lock (0: never)",
    )
    tcp_keepalive_seconds: float = Field(
        5.0,
        ge=0,
        description="PostgreSQL: TCP keepalives of the ledger's connections, both ends: first probe after this many "
        "idle seconds, then every half of it; three unanswered end the connection (0: the system's)",
    )
    snapshot_every_events: int = Field(
        10_000, ge=0, le=10**9, description="write a signed projection snapshot every this many events (0: never)"
    )
    semantic: bool = Field(
        True,
        description="hybrid search (BM25 + local embeddings) and consolidation when the [semantic] extra is "
        "installed; false: BM25 alone",
    )
    search_min_similarity: float = Field(
        fusion.MIN_SIMILARITY,
        ge=-1.0,
        le=1.0,
        description="hybrid search: the cosine a hit needs unless it matches every content word of the query "
        "(higher: fewer, surer hits; -1: every candidate counts)",
    )
    token_ttl_minutes: float = Field(30.0, ge=0, description="compliance token lifetime; 0 = never expires")
    host: str = "127.0.0.1"
    port: int = Field(8787, ge=0, le=65535, description="serve: the port to listen on; 0 picks a free one")
    allowed_hosts: list[str] = Field(default_factory=list, description="extra Host headers accepted over HTTP")
    cors_origins: list[str] = Field(
        default_factory=list,
        description="browser origins allowed to call /mcp and /api/v1/ (JSON list in LEDGER_CORS_ORIGINS, e.g. "
        '["https://claude.ai"]; ["*"] allows any); empty (default): CORS off',
    )
    agent: str = Field("local", description="agent name for HTTP calls when no API keys exist")
    project_roots: list[str] = Field(
        default_factory=default_project_roots,
        description="directories a session's working_dir must lie inside (JSON list in LEDGER_PROJECT_ROOTS); "
        "default: the home directory and the directory the command was started from (unless that is /)",
    )
    context_paths: list[str] = Field(
        default_factory=lambda: ["PROJECT-CONTEXT.oct.md", ".hestai/context/PROJECT-CONTEXT.oct.md"],
        description="where PROJECT-CONTEXT.oct.md is looked for, relative to the working directory",
    )
    external_context: list[str] = Field(
        default_factory=list,
        description="absolute directories or documents outside the working directory that a tension's CTX: may "
        "cite by absolute path (JSON list in LEDGER_EXTERNAL_CONTEXT); default none",
    )
    anchor_challenge_ttl_minutes: float = Field(
        10.0, gt=0, le=24 * 60, description="how long a proof may answer an anchor challenge, in minutes"
    )
    anchor_challenge_required: bool = Field(
        False, description="odyssean_anchor fails a proof that answers no anchor_challenge"
    )
    require_anchor: bool = Field(False, description="assert_compliance also requires a validated anchor")
    secret_scan: Literal["refuse", "redact", "off"] = Field(
        "refuse",
        description="credentials (API keys, tokens, private keys, passwords in URLs, …) in any text a caller sends: "
        "refuse the request (422, nothing recorded), redact (store [REDACTED:<kind>] in their place) or off",
    )
    workflow_file: Path | None = Field(
        None, description="YAML workflow table replacing the default one (see docs/WORKFLOW.md)"
    )
    enforcement_rules_file: Path | None = Field(
        None, description="YAML parameter-enforcement rules replacing the default ones (see docs/ENFORCEMENT.md)"
    )
    idle_timeout_minutes: float = Field(
        30.0, gt=0, description="a session never clocked out stops counting as active this long after its last event"
    )
    # Operations (api/logs.py, api/ratelimit.py, api/tracing.py; README "Operating the server").
    log_json: bool = Field(False, description="serve and mcp log one JSON object a line (default: key=value text)")
    rate_limit: int = Field(
        600, ge=0, description="requests and tool calls per window per API key (or agent, without keys); 0: no limit"
    )
    rate_limit_window_seconds: float = Field(60.0, gt=0, description="the window of rate_limit, in seconds")
    node_name: str | None = Field(
        None,
        max_length=200,
        description="the name serve and mcp announce this node under (doctor lists the nodes); default "
        "<hostname>:<pid>, a new name at every start",
    )
    otel_exporter: Literal["none", "console", "otlp"] = Field(
        "none", description="OpenTelemetry spans (needs the [otel] extra): none, console (stderr) or otlp"
    )

    @field_validator("cors_origins")
    @classmethod
    def _check_origins(cls, origins: list[str]) -> list[str]:
        clean = []
        for origin in origins:
            value = origin.strip().rstrip("/")
            if value != "*" and not _ORIGIN.match(value):
                raise ValueError(f"CORS origin {origin!r} is not '*' or scheme://host[:port], e.g. https://claude.ai")
            clean.append(value)
        return clean

    @field_validator("witnesses")
    @classmethod
    def _check_witnesses(cls, text: str) -> str:
        if not text.strip():  # none: nothing to check (and the note verifier's cryptography need not load)
            return text
        from ledger.core.tlog.policy import parse_witnesses

        parse_witnesses(text)  # a ValueError names the entry and says what to send
        return text

    @property
    def witness_list(self) -> tuple[Witness, ...]:
        from ledger.core.tlog.policy import parse_witnesses

        return parse_witnesses(self.witnesses)

    @field_validator("external_context")
    @classmethod
    def _check_external_context(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            if not isinstance(entry, str) or "\x00" in entry or not os.path.isabs(entry):
                raise ValueError(f"external context {entry!r} is not an absolute path, e.g. /home/me/specs")
        return entries

    @property
    def timeouts(self) -> Timeouts:
        return Timeouts(
            lock=self.lock_timeout_seconds,
            statement=self.statement_timeout_seconds,
            idle_in_transaction=self.idle_in_transaction_timeout_seconds,
            keepalive=self.tcp_keepalive_seconds,
        )

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.home / 'ledger.db').expanduser()}"

    @property
    def key_path(self) -> Path:
        return (self.key_file or self.home / "receipt.key").expanduser()

    @property
    def signing_key_path(self) -> Path:
        return (self.signing_key_file or self.home / "signing.key").expanduser()

    @property
    def checkpoint_path(self) -> Path:
        return (self.checkpoint_file or self.home / "checkpoints.jsonl").expanduser()

    @property
    def checkpoint_every(self) -> _dt.timedelta | None:
        return _dt.timedelta(minutes=self.checkpoint_every_minutes) if self.checkpoint_every_minutes else None

    @property
    def idle_timeout(self) -> _dt.timedelta:
        return _dt.timedelta(minutes=self.idle_timeout_minutes)

    @property
    def anchor_challenge_ttl(self) -> _dt.timedelta:
        return _dt.timedelta(minutes=self.anchor_challenge_ttl_minutes)

    @property
    def token_ttl(self) -> _dt.timedelta | None:
        return _dt.timedelta(minutes=self.token_ttl_minutes) if self.token_ttl_minutes else None
