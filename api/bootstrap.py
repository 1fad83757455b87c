"""The one factory that wires settings, engine, store, index, key and clock into a :class:`Ledger`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from api.settings import Settings
from ledger.audit.handlers import row_binding
from ledger.core import clock as _clock
from ledger.core import receipt_key, signing
from ledger.core.errors import Conflict
from ledger.core.receipt_key import ReceiptKey
from ledger.core.storage import RowKey, SqlEventStore, make_engine, migration
from ledger.enforcement.rules import RULES_FILE
from ledger.kernel import LEDGER_STREAM, bindings
from ledger.service import Actor, CapabilityConfig, Ledger, LedgerConfig, ProgressBars
from ledger.workflow.table import TABLE
from projections import embedder
from projections.search import SearchIndex

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from projections.embedding_index import EmbeddingIndex


@dataclass(frozen=True)
class InitReport:
    """What ``init`` did."""

    database_url: str
    key_path: str
    key_created: bool
    ledger_created: bool
    signing_key_path: str
    signing_key_created: bool


def _build(
    settings: Settings,
    key: ReceiptKey,
    signer: signing.SigningKey | None,
    clock: _clock.Clock,
    engine: Engine | None = None,
) -> Ledger:
    store = SqlEventStore(
        engine or make_engine(settings.db_url, settings.timeouts),
        clock=clock,
        timeouts=settings.timeouts,
        row_key=RowKey.derive(key.secret),
    )
    return Ledger(
        store=store,
        index=search_index(store, settings),
        key=key,
        signer=signer,
        config=LedgerConfig(snapshot_every=settings.snapshot_every_events, secret_scan=settings.secret_scan),
        clock=clock,
        capabilities=CapabilityConfig(
            token_ttl=settings.token_ttl,
            require_anchor=settings.require_anchor,
            project_roots=tuple(settings.project_roots),
            context_paths=tuple(settings.context_paths),
            external_context=tuple(settings.external_context),
            anchor_challenge_ttl=settings.anchor_challenge_ttl,
            anchor_challenge_required=settings.anchor_challenge_required,
            idle_timeout=settings.idle_timeout,
            workflow=TABLE.setting(
                settings.workflow_file, "fix the workflow table, or unset LEDGER_WORKFLOW_FILE to use the default"
            ),
            enforcement_rules=RULES_FILE.setting(
                settings.enforcement_rules_file,
                "fix the rules file, or unset LEDGER_ENFORCEMENT_RULES_FILE to use the default",
            ),
            witnesses=settings.witness_list,
            min_cosignatures=settings.checkpoint_min_cosignatures,
        ),
    )


def search_index(store: SqlEventStore, settings: Settings) -> SearchIndex:
    """The search index, hybrid (with an embedding index whose model loads on first use) when the ``[semantic]``
    extra is installed and ``LEDGER_SEMANTIC`` is not false, with the similarity floor of
    ``LEDGER_SEARCH_MIN_SIMILARITY``; its ``retrieval`` says which and why."""
    available, why = embedder.status()
    if not settings.semantic:
        available, why = False, "BM25 alone: turned off by LEDGER_SEMANTIC=false"
    index = SearchIndex(
        store,
        semantic=partial(_embedding_index, store) if available else None,
        min_similarity=settings.search_min_similarity,
    )
    index.retrieval = why
    return index


def _embedding_index(store: SqlEventStore) -> EmbeddingIndex:
    from projections.embedding_index import EmbeddingIndex  # numpy, on the first search: not when the ledger opens

    return EmbeddingIndex(store)


def open_ledger(settings: Settings, clock: _clock.Clock = _clock.now) -> Ledger:
    """Open an initialised ledger (raises NotInitialised when the receipt key is missing).

    A ledger initialised before signing keys existed opens without one; what needs it (checkpoints, new
    receipts) says to run ``init``, which creates it.
    """
    signer = signing.load_signing_key(settings.signing_key_path) if settings.signing_key_path.exists() else None
    return _build(settings, receipt_key.load_key(settings.key_path), signer, clock)


def initialise(
    settings: Settings,
    clock: _clock.Clock = _clock.now,
    *,
    seed_new: bool = False,
    progress: ProgressBars | None = None,
    waiting: Callable[[], None] | None = None,
) -> tuple[Ledger, InitReport]:
    """Create the keys (outside the events table) and the schema, or migrate an older schema; safe to run again,
    and from several processes at once: it all runs under the migration lock, and a schema already current gets
    no DDL. ``waiting`` is called if another process holds the lock.

    Key files are created only for a new ledger (and a signing key for one from before signing keys): against a
    ledger that already binds its keys, missing or different key files are refused, naming the files to copy,
    and none is written. With ``seed_new`` a ledger created by this call also gets the constitutional memory
    blocks, as ``compliance-ledger init`` would give it (``serve`` and ``mcp`` on a fresh machine start ready). A
    ledger from before row authenticators or the tree is brought up to date here, with a bar from ``progress``
    per step.
    """
    engine = make_engine(settings.db_url, settings.timeouts)
    try:
        with migration.migration_lock(engine, waiting):
            if not migration.schema_state(engine).absent:
                check_node_keys(settings, engine, clock)
            key, key_created = receipt_key.create_key(settings.key_path)
            signer, signer_created = signing.create_signing_key(settings.signing_key_path)
            ledger = _build(settings, key, signer, clock, engine)
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
    settings: Settings, clock: _clock.Clock = _clock.now, *, progress: ProgressBars | None = None
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
            ledger = _build(settings, key, signer, clock, engine)
    except BaseException:
        engine.dispose()
        raise
    if state.absent:
        engine.dispose()
        return initialise(settings, clock, seed_new=True, progress=progress)
    return ledger, InitReport(
        settings.db_url, str(settings.key_path), False, False, str(settings.signing_key_path), False
    )


def check_node_keys(settings: Settings, engine: Engine, clock: _clock.Clock = _clock.now) -> None:
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


def redact(url: str) -> str:
    """Hide a password in a database URL for display."""
    if "://" in url and "@" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}{':***' if ':' in creds else ''}@{host}"
    return url
