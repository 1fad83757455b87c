"""``compliance-ledger doctor``: check the database, schema, keys, chain head, checkpoints and search index."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from api.cli.context import settings_of
from api.cli.output import out, table
from ledger.core.errors import LedgerError

if TYPE_CHECKING:
    from api.settings import Settings
    from ledger.service import Ledger


def doctor(ctx: typer.Context) -> None:
    """Check the database, schema, receipt key, hash chain head and search index, the decision settings against the
    ledger's, and list the nodes that served in the last 24 hours. Exit 1 on a problem."""
    from rich.table import Column

    from api.bootstrap import open_ledger, redact
    from ledger.audit.report import Source
    from ledger.core.storage import migration
    from projections.search import CHECKPOINT

    settings = settings_of(ctx)
    checks = table(Column("check", no_wrap=True), Column("status", no_wrap=True), "detail")
    problems = 0

    def row(name: str, ok: bool, detail: str) -> None:
        nonlocal problems
        problems += not ok
        checks.add_row(name, "[green]ok[/green]" if ok else "[red]FAIL[/red]", detail)

    try:
        ledger = open_ledger(settings)
    except LedgerError as exc:
        row("receipt key", False, f"{exc.message} — {exc.hint}")
        out.print(checks)
        raise typer.Exit(1) from exc
    row("receipt key", True, f"{settings.key_path} (id {ledger.key.key_id})")
    try:
        head, head_hash = ledger.store.head()
        row("database", True, f"{redact(settings.db_url)} ({ledger.store.dialect})")
        row("events", True, f"head position {head}, hash {head_hash[:16]}")
        schema = migration.schema_state(ledger.store.engine)
        row(
            "schema",
            schema.current,
            f"version {schema.found} (this program's: {migration.SCHEMA_VERSION})"
            + ("" if schema.current else " — run `compliance-ledger migrate`; serve and mcp refuse to start"),
        )
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
            latest = ledger.latest_checkpoint_in(settings.checkpoint_path)
            if latest is None:
                row("checkpoints", True, f"none in {settings.checkpoint_path} yet (serve writes them)")
            else:
                [finding] = ledger.verify_checkpoints(
                    [Source(str(settings.checkpoint_path), latest)], ledger.signer.public
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
        row("retrieval", True, ledger.index.retrieval)
        if ledger.index.semantic is not None:
            row("embedding index", True, f"checkpoint {ledger.index.semantic.checkpoint()} of {head}")
        # An event the index cannot hold can only have been written to the database directly: a person looks.
        for k in ledger.index.skips():
            row("index skip", False, f"the search index skipped the event at position {k.position}: {k.reason}")
        ring = ledger.key_ring()
        row("API keys", True, f"{len(ring.keys)} issued, {len(ring.keys) - len(ring.active())} revoked")
        _settings_rows(ledger, settings, row)
    except LedgerError as exc:
        row("database", False, f"{exc.message} — {exc.hint}")
    finally:
        ledger.store.dispose()
    out.print(checks)
    raise typer.Exit(1 if problems else 0)


def _settings_rows(ledger: Ledger, settings: Settings, row: Callable[[str, bool, str], None]) -> None:
    """The decision settings the ledger records against this node's, and each node seen in the last 24 hours with
    its version and settings digest: a running one (seen within 90 s) whose digest is not the ledger's fails."""
    from api.bootstrap import decision_settings
    from ledger.core.decision_settings import differences
    from ledger.core.events import SettingsApplied
    from ledger.core.storage import nodes

    try:
        local = decision_settings(settings)
    except LedgerError as exc:  # a workflow or rules file this node cannot read
        row("settings", False, f"{exc.message} — {exc.hint}")
        return
    applied = ledger.applied_settings()
    recorded = applied.event if applied is not None and isinstance(applied.event, SettingsApplied) else None
    if recorded is None:
        row("settings", False, "the ledger records no decision settings — run `compliance-ledger settings apply`")
    else:
        found = differences(recorded.values, local)
        row(
            "settings",
            not found,
            f"ledger digest {recorded.digest[:16]}; this node's "
            + ("the same" if not found else f"{local.digest[:16]}, differs in {', '.join(d.name for d in found)}"),
        )
    now = ledger.clock()
    try:
        seen = nodes.recent(ledger.store.engine, now)
    except LedgerError as exc:
        row("nodes", False, f"{exc.message} — {exc.hint}")
        return
    if not seen:
        row("nodes", True, "none announced in the last 24 hours (serve and mcp announce themselves)")
    for node in seen:
        live = node.stopped_at is None and now - node.seen_at <= nodes.LIVE_WITHIN
        agrees = recorded is not None and node.settings_digest == recorded.digest
        state = "stopped" if node.stopped_at is not None else "running, seen" if live else "last seen"
        row(
            f"node {node.node}",
            agrees or not live,
            f"{node.kind} {node.version}, settings {node.settings_digest[:16]}"
            + ("" if agrees else " (not the ledger's)")
            + f"; started {node.started_at:%Y-%m-%d %H:%M:%SZ}, {state} {node.seen_at:%Y-%m-%d %H:%M:%SZ}",
        )


def register(app: typer.Typer) -> None:
    """Add ``doctor`` to the root command."""
    app.command()(doctor)
