"""The composition root: the one place a :class:`~ledger.service.Ledger` is wired from plain settings — engine,
store, search index, receipt and signing keys, clock, the kernel's and the capabilities' settings.

Adapters build a :class:`LedgerSettings` (``api/bootstrap.py`` from the environment) and call :func:`open_ledger`
or :func:`initialise`; tests call :func:`compose` with a store, clock or embedder of their own. Nothing is created
at import time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ledger.core import clock as _clock
from ledger.core import receipt_key, signing
from ledger.core.limits import Timeouts
from ledger.core.receipt_key import ReceiptKey
from ledger.core.storage import LedgerStore, MemoryStore, RowKey, SqlEventStore, make_engine
from ledger.enforcement.rules import RULES_FILE
from ledger.service import Actor, CapabilityConfig, Ledger, LedgerConfig, ProgressBars
from ledger.workflow.table import TABLE
from projections import embedder as _embedder
from projections.search import SearchIndex
from projections.search.fusion import MIN_SIMILARITY

if TYPE_CHECKING:
    from projections.embedding_index import EmbeddingIndex

EmbedderStatus = Callable[[], tuple[bool, str]]
"""Whether hybrid search can run here and why not (:func:`projections.embedder.status`; fake it in tests)."""


@dataclass(frozen=True)
class LedgerSettings:
    """What the composition root is fed. The kernel's and the capabilities' settings come whole, with their own
    defaults (:class:`LedgerConfig`, :class:`CapabilityConfig`); the workflow table and the enforcement rules
    may come as files, which :func:`compose` reads and checks (``None``: the shipped ones)."""

    db_url: str
    key_path: Path
    signing_key_path: Path
    timeouts: Timeouts = field(default_factory=Timeouts)
    kernel: LedgerConfig = field(default_factory=LedgerConfig)
    capabilities: CapabilityConfig = field(default_factory=CapabilityConfig)
    workflow_file: Path | None = None
    enforcement_rules_file: Path | None = None
    semantic: bool = True  # hybrid search when the [semantic] extra is installed; False: BM25 alone
    search_min_similarity: float = MIN_SIMILARITY


@dataclass(frozen=True)
class InitReport:
    """What ``init`` did."""

    database_url: str
    key_path: str
    key_created: bool
    ledger_created: bool
    signing_key_path: str
    signing_key_created: bool


def compose(
    settings: LedgerSettings,
    key: ReceiptKey,
    *,
    signer: signing.SigningKey | None = None,
    store: LedgerStore | None = None,
    clock: _clock.Clock = _clock.now,
    embedder: EmbedderStatus = _embedder.status,
) -> Ledger:
    """The ledger on ``store`` (default: one on ``settings.db_url``, its rows authenticated with a key derived
    from ``key``), its search index hybrid when ``embedder`` says it can be."""
    capabilities = _with_files(settings)  # a bad file is refused before any connection is made
    if store is None:
        store = SqlEventStore(
            make_engine(settings.db_url, settings.timeouts),
            clock=clock,
            timeouts=settings.timeouts,
            row_key=RowKey.derive(key.secret),
        )
    return Ledger(
        store=store,
        index=search_index(store, settings, embedder),
        key=key,
        signer=signer,
        config=settings.kernel,
        clock=clock,
        capabilities=capabilities,
    )


def _with_files(settings: LedgerSettings) -> CapabilityConfig:
    """The capabilities' settings with the workflow table and the enforcement rules read from their files."""
    cap = settings.capabilities
    workflow = cap.workflow or TABLE.setting(
        settings.workflow_file, "fix the workflow table, or unset LEDGER_WORKFLOW_FILE to use the default"
    )
    rules = cap.enforcement_rules or RULES_FILE.setting(
        settings.enforcement_rules_file,
        "fix the rules file, or unset LEDGER_ENFORCEMENT_RULES_FILE to use the default",
    )
    return dataclasses.replace(cap, workflow=workflow, enforcement_rules=rules)


def search_index(
    store: LedgerStore, settings: LedgerSettings, embedder: EmbedderStatus = _embedder.status
) -> SearchIndex:
    """The search index, hybrid (with an embedding index whose model loads on first use) when the ``[semantic]``
    extra is installed and ``settings.semantic`` is true, with the similarity floor of
    ``settings.search_min_similarity``; its ``retrieval`` says which and why."""
    available, why = embedder()
    if not settings.semantic:
        available, why = False, "BM25 alone: turned off by LEDGER_SEMANTIC=false"
    index = SearchIndex(
        store,
        semantic=partial(_embedding_index, store) if available else None,
        min_similarity=settings.search_min_similarity,
    )
    index.retrieval = why
    return index


def _embedding_index(store: LedgerStore) -> EmbeddingIndex:
    from projections.embedding_index import EmbeddingIndex  # numpy, on the first search: not when the ledger opens

    return EmbeddingIndex(store)


def open_ledger(
    settings: LedgerSettings, clock: _clock.Clock = _clock.now, *, embedder: EmbedderStatus = _embedder.status
) -> Ledger:
    """Open an initialised ledger (raises NotInitialised when the receipt key is missing).

    A ledger initialised before signing keys existed opens without one; what needs it (checkpoints, new
    receipts) says to run ``init``, which creates it.
    """
    signer = signing.load_signing_key(settings.signing_key_path) if settings.signing_key_path.exists() else None
    return compose(settings, receipt_key.load_key(settings.key_path), signer=signer, clock=clock, embedder=embedder)


def initialise(
    settings: LedgerSettings,
    clock: _clock.Clock = _clock.now,
    *,
    seed_new: bool = False,
    progress: ProgressBars | None = None,
    embedder: EmbedderStatus = _embedder.status,
    in_memory: bool = False,
) -> tuple[Ledger, InitReport]:
    """Create the key (outside the events table) and the schema if missing; safe to run again.

    With ``seed_new`` a ledger created by this call also gets the constitutional memory blocks, as
    ``compliance-ledger init`` would give it (``serve`` and ``mcp`` on a fresh machine start ready). A ledger
    from before row authenticators or the tree is brought up to date here, with a bar from ``progress`` per step.
    ``in_memory``: the ledger's log is a :class:`~ledger.core.storage.MemoryStore` and the settings' database is
    not opened (tests, tools); its keys are still the settings' files.
    """
    key, key_created = receipt_key.create_key(settings.key_path)
    signer, signer_created = signing.create_signing_key(settings.signing_key_path)
    store = MemoryStore(clock, row_key=RowKey.derive(key.secret)) if in_memory else None
    ledger = compose(settings, key, signer=signer, store=store, clock=clock, embedder=embedder)
    try:
        created = ledger.initialise(progress)
    except BaseException:
        ledger.store.dispose()  # the caller never gets this ledger: its connections are closed here
        raise
    if created and seed_new:
        ledger.setup_memory(Actor(agent="system", source="cli"))
    return ledger, InitReport(
        settings.db_url, str(settings.key_path), key_created, created, str(settings.signing_key_path), signer_created
    )
