"""``compliance-ledger doctor``: check the database, schema, keys, chain head, checkpoints and search index."""

from __future__ import annotations

import typer

from api.cli.context import settings_of
from api.cli.output import out, table
from ledger.core.errors import LedgerError


def doctor(ctx: typer.Context) -> None:
    """Check the database, schema, receipt key, hash chain head and search index. Exit 1 on a problem."""
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
    except LedgerError as exc:
        row("database", False, f"{exc.message} — {exc.hint}")
    finally:
        ledger.store.dispose()
    out.print(checks)
    raise typer.Exit(1 if problems else 0)


def register(app: typer.Typer) -> None:
    """Add ``doctor`` to the root command."""
    app.command()(doctor)
