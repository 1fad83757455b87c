"""The adapters' way into the composition root (``ledger/compose.py``): the environment's :class:`Settings` as the
plain :class:`~ledger.compose.LedgerSettings` it is fed, and a database URL with its password hidden for display."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from api.settings import Settings
from ledger import compose
from ledger.compose import InitReport, LedgerSettings
from ledger.core import clock as _clock
from ledger.core.errors import NotInitialised
from ledger.service import CapabilityConfig, Ledger, LedgerConfig, ProgressBars

if TYPE_CHECKING:
    from ledger.core.decision_settings import DecisionSettings
    from ledger.core.storage import LedgerStore
    from ledger.workflow.report import Workflow
    from projections.search import SearchIndex

__all__ = [
    "InitReport",
    "decision_settings",
    "initialise",
    "ledger_settings",
    "open_ledger",
    "open_node",
    "open_to_read",
    "redact",
    "search_index",
]


def ledger_settings(settings: Settings) -> LedgerSettings:
    """What the composition root needs of the environment's settings (each left unset keeps its default)."""
    return LedgerSettings(
        db_url=settings.db_url,
        key_path=settings.key_path,
        signing_key_path=settings.signing_key_path,
        timeouts=settings.timeouts,
        kernel=LedgerConfig(snapshot_every=settings.snapshot_every_events, secret_scan=settings.secret_scan),
        capabilities=CapabilityConfig(
            token_ttl=settings.token_ttl,
            require_anchor=settings.require_anchor,
            project_roots=tuple(settings.project_roots),
            context_paths=tuple(settings.context_paths),
            external_context=tuple(settings.external_context),
            anchor_challenge_ttl=settings.anchor_challenge_ttl,
            anchor_challenge_required=settings.anchor_challenge_required,
            idle_timeout=settings.idle_timeout,
            witnesses=settings.witness_list,
            min_cosignatures=settings.checkpoint_min_cosignatures,
        ),
        workflow_file=settings.workflow_file,
        enforcement_rules_file=settings.enforcement_rules_file,
        semantic=settings.semantic,
        search_min_similarity=settings.search_min_similarity,
        project_roots_default="project_roots" not in settings.model_fields_set,
    )


def open_ledger(settings: Settings, clock: _clock.Clock = _clock.now) -> Ledger:
    """:func:`ledger.compose.open_ledger` with the environment's settings."""
    return compose.open_ledger(ledger_settings(settings), clock)


def open_to_read(settings: Settings, clock: _clock.Clock = _clock.now) -> Ledger:
    """An existing ledger opened to be read (the one ``carry`` carries from): its schema must be this program's and
    its key files the ones it binds (:func:`ledger.compose.check_node_keys`), else it is refused saying what to run
    or copy. No key file, event or DDL is written, and its search index is not loaded."""
    from ledger.core.storage import make_engine, migration

    plain = ledger_settings(settings)
    missing = NotInitialised(
        f"{redact(plain.db_url)} holds no ledger to read",
        "check the database URL and home that name the old ledger (--from-db, --from-home)",
    )
    if (
        plain.db_url.startswith("sqlite:///")
        and not Path(plain.db_url.removeprefix("sqlite:///")).expanduser().exists()
    ):
        raise missing  # not even a file: none is made (nor its directory)
    engine = make_engine(plain.db_url, plain.timeouts)
    try:
        state = migration.schema_state(engine)
        if state.absent:
            raise missing
        migration.require_current(state, command="compliance-ledger --home OLD_HOME [--db OLD_URL] migrate")
        compose.check_node_keys(plain, engine, clock)
    finally:
        engine.dispose()
    return compose.open_ledger(plain, clock, embedder=lambda: (False, "BM25 alone: a ledger opened to be read"))


def initialise(
    settings: Settings,
    clock: _clock.Clock = _clock.now,
    *,
    seed_new: bool = False,
    progress: ProgressBars | None = None,
    in_memory: bool = False,
    waiting: Callable[[], None] | None = None,
) -> tuple[Ledger, InitReport]:
    """:func:`ledger.compose.initialise` with the environment's settings."""
    return compose.initialise(
        ledger_settings(settings), clock, seed_new=seed_new, progress=progress, in_memory=in_memory, waiting=waiting
    )


def open_node(
    settings: Settings,
    clock: _clock.Clock = _clock.now,
    *,
    progress: ProgressBars | None = None,
    workflow: Workflow | None = None,
) -> tuple[Ledger, InitReport]:
    """:func:`ledger.compose.open_node` (``serve`` and ``mcp``: a start changes nothing) with the environment's
    settings; ``workflow``: the table already read from them (``mcp`` reads it first)."""
    plain = ledger_settings(settings)
    if workflow is not None:
        plain = dataclasses.replace(plain, capabilities=dataclasses.replace(plain.capabilities, workflow=workflow))
    return compose.open_node(plain, clock, progress=progress)


def decision_settings(settings: Settings) -> DecisionSettings:
    """:func:`ledger.compose.decision_settings`: this node's settings that change a decision."""
    return compose.decision_settings(ledger_settings(settings))


def search_index(store: LedgerStore, settings: Settings) -> SearchIndex:
    """:func:`ledger.compose.search_index` with the environment's settings."""
    return compose.search_index(store, ledger_settings(settings))


def redact(url: str) -> str:
    """Hide a password in a database URL for display."""
    if "://" in url and "@" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}{':***' if ':' in creds else ''}@{host}"
    return url
