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

from ledger.audit.handlers import row_binding
from ledger.core import clock as _clock
from ledger.core import receipt_key, signing
from ledger.core.errors import Conflict
from ledger.core.limits import Timeouts
from ledger.core.receipt_key import ReceiptKey
from ledger.core.storage import LedgerStore, MemoryStore, RowKey, SqlEventStore, make_engine, migration
from ledger.enforcement.rules import RULES_FILE
from ledger.kernel import LEDGER_STREAM, bindings
from ledger.service import Actor, CapabilityConfig, Ledger, LedgerConfig, ProgressBars
from ledger.workflow.table import TABLE
from projections import embedder as _embedder
from projections.search import SearchIndex
from projections.search.fusion import MIN_SIMILARITY

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

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
        store = _sql_store(settings, key, clock, make_engine(settings.db_url, settings.timeouts))
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
    waiting: Callable[[], None] | None = None,
) -> tuple[Ledger, InitReport]:
    """Create the keys (outside the events table) and the schema, or migrate an older schema; safe to run again,
    and from several processes at once: on a database it all runs under the migration lock
    (:func:`~ledger.core.storage.migration.migration_lock`; ``waiting`` is called if another process holds it),
    and a schema already current gets no DDL.

    Key files are created only for a new ledger (and a signing key for one from before signing keys): against a
    ledger that already binds its keys, missing or different key files are refused, naming the files to copy,
    and none is written (:func:`check_node_keys`). With ``seed_new`` a ledger created by this call also gets the
    constitutional memory blocks, as ``compliance-ledger init`` would give it. A ledger from before row
    authenticators or the tree is brought up to date here, with a bar from ``progress`` per step.
    ``in_memory``: the ledger's log is a :class:`~ledger.core.storage.MemoryStore` and the settings' database is
    not opened (tests, tools); its keys are still the settings' files.
    """
    if in_memory:
        key, key_created = receipt_key.create_key(settings.key_path)
        signer, signer_created = signing.create_signing_key(settings.signing_key_path)
        memory = MemoryStore(clock, row_key=RowKey.derive(key.secret))
        ledger = compose(settings, key, signer=signer, store=memory, clock=clock, embedder=embedder)
        created = ledger.initialise(progress)
    else:
        engine = make_engine(settings.db_url, settings.timeouts)
        try:
            with migration.migration_lock(engine, waiting):
                if not migration.schema_state(engine).absent:
                    check_node_keys(settings, engine, clock)
                key, key_created = receipt_key.create_key(settings.key_path)
                signer, signer_created = signing.create_signing_key(settings.signing_key_path)
                store = _sql_store(settings, key, clock, engine)
                ledger = compose(settings, key, signer=signer, store=store, clock=clock, embedder=embedder)
                created = ledger.initialise(progress)
        except BaseException:
            engine.dispose()  # the caller never gets this ledger: its connections are closed here
            raise
    if created and seed_new:
        ledger.setup_memory(Actor(agent="system", source="cli"))
    return ledger, InitReport(
        settings.db_url, str(settings.key_path), key_created, created, str(settings.signing_key_path), signer_created
    )


def open_node(
    settings: LedgerSettings,
    clock: _clock.Clock = _clock.now,
    *,
    progress: ProgressBars | None = None,
    embedder: EmbedderStatus = _embedder.status,
) -> tuple[Ledger, InitReport]:
    """Open the ledger for ``serve`` and ``mcp``: a start changes nothing. It reads the schema's version and the
    keys the ledger binds, and refuses (saying what to run or which key files to copy) when the schema is behind
    or ahead of this program, or the key files are missing or not this ledger's; it writes no key file and runs
    no DDL, so nodes started at once all come up and no write of another node waits for a start.

    The one exception is a database that holds no ledger at all: it is created as ``init`` would, with the
    constitutional memory, under the migration lock (the quickstart's first ``serve``; a fresh cluster whose
    nodes start together gets one ledger, and the nodes without its keys are refused)."""
    engine = make_engine(settings.db_url, settings.timeouts)
    try:
        state = migration.schema_state(engine)
        if not state.absent:
            migration.require_current(state)
            check_node_keys(settings, engine, clock)
            key = receipt_key.load_key(settings.key_path)
            signer = signing.load_signing_key(settings.signing_key_path) if settings.signing_key_path.exists() else None
            store = _sql_store(settings, key, clock, engine)
            ledger = compose(settings, key, signer=signer, store=store, clock=clock, embedder=embedder)
    except BaseException:
        engine.dispose()
        raise
    if state.absent:
        engine.dispose()
        return initialise(settings, clock, seed_new=True, progress=progress, embedder=embedder)
    return ledger, InitReport(
        settings.db_url, str(settings.key_path), False, False, str(settings.signing_key_path), False
    )


def check_node_keys(settings: LedgerSettings, engine: Engine, clock: _clock.Clock = _clock.now) -> None:
    """Refuse key files that are not the ones this ledger binds (its ``LedgerInitialised``, ``RowKeyBound`` and
    ``SigningKeyBound`` events, read without authenticating them): missing or different, naming each file and
    what to copy. Nothing is written."""
    recorded = SqlEventStore(engine, clock=clock, timeouts=settings.timeouts, row_key=None)
    events = recorded.load_stream(LEDGER_STREAM).events
    receipt_id, signing_bound = bindings(events)
    row_bound = row_binding(events)
    problems: list[str] = []
    if receipt_id is not None or row_bound is not None:
        path = settings.key_path
        if not path.exists():
            problems.append(f"receipt key {path} is missing")
        else:
            key = receipt_key.load_key(path)
            row_id = RowKey.derive(key.secret).key_id
            if (receipt_id is not None and key.key_id != receipt_id) or (
                row_bound is not None and row_id != row_bound.key_id
            ):
                problems.append(f"receipt key {path} is {key.key_id}, not this ledger's {receipt_id}")
    if signing_bound is not None:
        path = settings.signing_key_path
        if not path.exists():
            problems.append(f"signing key {path} is missing")
        elif (found := signing.load_signing_key(path).key_id) != signing_bound.key_id:
            problems.append(f"signing key {path} is {found}, not this ledger's {signing_bound.key_id}")
    if problems:
        raise Conflict(
            f"this node's key files are not the ledger's: {'; '.join(problems)}",
            f"copy receipt.key and signing.key from a node of this ledger (or their backup) to {settings.key_path} "
            f"and {settings.signing_key_path} (LEDGER_KEY_FILE, LEDGER_SIGNING_KEY_FILE); a node never writes key "
            "files for a ledger that exists",
        )


def _sql_store(settings: LedgerSettings, key: ReceiptKey, clock: _clock.Clock, engine: Engine) -> SqlEventStore:
    return SqlEventStore(engine, clock=clock, timeouts=settings.timeouts, row_key=RowKey.derive(key.secret))
