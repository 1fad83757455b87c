"""``compliance-ledger init``: the schema, the keys and the constitutional memory, all safe to run again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.context import fail, operator, settings_of
from api.cli.output import out, progress
from ledger.core.errors import InvalidInput, LedgerError, NotInitialised

if TYPE_CHECKING:
    from api.bootstrap import InitReport
    from ledger.core.decision_settings import DecisionSettings
    from ledger.service import Ledger


def init(
    ctx: typer.Context,
    seed: Annotated[
        bool, typer.Option("--seed/--no-seed", help="seed the 10 constitutional memory blocks (if none exist yet)")
    ] = True,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="regenerate the constitution: restore the shipped blocks and archive amendments (recorded as you)",
        ),
    ] = False,
    self_text: Annotated[str | None, typer.Option("--self", help="add a self/context block: who the agent is")] = None,
) -> None:
    """Create the schema and receipt key, and seed the constitutional memory (all safe to run again). A ledger
    that records no decision settings yet gets this node's (`compliance-ledger settings`)."""
    from api.bootstrap import decision_settings, initialise, redact

    if force and not seed:
        raise fail(InvalidInput("--force and --no-seed were both given", "send --force alone to regenerate"))
    settings = settings_of(ctx)
    try:
        local = decision_settings(settings)
        ledger, report = initialise(settings, progress=progress)
    except LedgerError as exc:
        raise fail(exc) from exc
    try:
        regenerated = ledger.regenerate_constitution(operator()) if force else None
        setup = ledger.setup_memory(operator(), identity=self_text, seed=seed)
        said = _settings_line(ledger, report, local)
    except LedgerError as exc:
        raise fail(exc) from exc
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
    out.print(said, markup=False)
    out.print(
        f"memory     {len(setup.created)} block(s) created, {len(setup.already_present)} already present; "
        f"{setup.constitutional_blocks} constitutional"
    )
    if regenerated is not None:
        out.print(
            f"constitution regenerated: {len(regenerated.restored)} restored, {len(regenerated.archived)} "
            f"amendment(s) archived, {len(regenerated.created)} created, {len(regenerated.unchanged)} unchanged; "
            f"{regenerated.constitutional_blocks} live constitutional block(s)"
        )
        for block_id in regenerated.forgotten:
            out.print(f"not restored: {block_id} was forgotten (erased) by an administrator")


def _settings_line(ledger: Ledger, report: InitReport, local: DecisionSettings) -> str:
    """What ``init`` and ``migrate`` say of the decision settings: recorded now, the ledger's, or which differ."""
    from ledger.core.decision_settings import differences
    from ledger.core.events import SettingsApplied

    if report.settings_recorded:
        return f"settings   this node's decision settings recorded for the ledger (digest {report.settings_digest})"
    applied = ledger.applied_settings()
    if applied is None or not isinstance(applied.event, SettingsApplied):
        return "settings   none recorded — run `compliance-ledger settings apply`"
    if applied.event.digest == report.settings_digest:
        return f"settings   this node's are the ledger's (digest {report.settings_digest})"
    names = ", ".join(d.name for d in differences(applied.event.values, local))
    return (
        f"settings   this node's decision settings differ from the ledger's in {names} — serve "
        "and mcp refuse to start here until they match (`compliance-ledger settings show`), or run "
        "`compliance-ledger settings apply` to adopt this node's for every node"
    )


def migrate(ctx: typer.Context) -> None:
    """Bring the ledger's schema up to this program's version, once, before nodes of the new version start (safe
    from several nodes at once: one migrates under a lock, the others wait and change nothing). A ledger that
    records no decision settings yet gets this node's."""
    from api.bootstrap import decision_settings, initialise, redact
    from ledger.core.storage import make_engine, migration

    settings = settings_of(ctx)
    engine = make_engine(settings.db_url, settings.timeouts)
    try:
        before = migration.schema_state(engine)
    except LedgerError as exc:
        raise fail(exc) from exc
    finally:
        engine.dispose()
    if before.absent:
        raise fail(
            NotInitialised(
                f"{redact(settings.db_url)} holds no ledger to migrate",
                "run `compliance-ledger init` once (with the same --db / --home)",
            )
        )
    try:
        local = decision_settings(settings)
        ledger, report = initialise(
            settings, progress=progress, waiting=lambda: out.print("waiting for another migration to finish")
        )
    except LedgerError as exc:
        raise fail(exc) from exc
    try:
        said = _settings_line(ledger, report, local)
    except LedgerError as exc:
        raise fail(exc) from exc
    finally:
        ledger.store.dispose()
    done = "already current" if before.current else f"migrated from version {before.found}"
    out.print(f"database   {redact(settings.db_url)}: schema version {migration.SCHEMA_VERSION} ({done})")
    out.print(said, markup=False)


def register(app: typer.Typer) -> None:
    """Add ``init`` and ``migrate`` to the root command."""
    app.command()(init)
    app.command()(migrate)
