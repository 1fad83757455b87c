"""The one factory that wires settings, engine, store, index, key and clock into a :class:`Ledger`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from api.settings import Settings
from ledger.core import clock as _clock
from ledger.core import receipt_key, signing
from ledger.core.receipt_key import ReceiptKey
from ledger.core.storage import LedgerStore, MemoryStore, RowKey, SqlEventStore, make_engine
from ledger.enforcement.rules import RULES_FILE
from ledger.service import Actor, CapabilityConfig, Ledger, LedgerConfig, ProgressBars
from ledger.workflow.table import TABLE
from projections import embedder
from projections.search_index import SearchIndex

if TYPE_CHECKING:
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
    in_memory: bool = False,
) -> Ledger:
    store: LedgerStore
    if in_memory:  # the settings' database is not opened: the log lives in this process (tests, tools)
        store = MemoryStore(clock, row_key=RowKey.derive(key.secret))
    else:
        store = SqlEventStore(
            make_engine(settings.db_url, settings.timeouts),
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


def search_index(store: LedgerStore, settings: Settings) -> SearchIndex:
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


def _embedding_index(store: LedgerStore) -> EmbeddingIndex:
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
    in_memory: bool = False,
) -> tuple[Ledger, InitReport]:
    """Create the key (outside the events table) and the schema if missing; safe to run again.

    With ``seed_new`` a ledger created by this call also gets the constitutional memory blocks, as
    ``compliance-ledger init`` would give it (``serve`` and ``mcp`` on a fresh machine start ready). A ledger
    from before row authenticators or the tree is brought up to date here, with a bar from ``progress`` per step.
    ``in_memory``: the ledger's log is a :class:`MemoryStore` (its keys are still the settings' files).
    """
    key, key_created = receipt_key.create_key(settings.key_path)
    signer, signer_created = signing.create_signing_key(settings.signing_key_path)
    ledger = _build(settings, key, signer, clock, in_memory)
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


def redact(url: str) -> str:
    """Hide a password in a database URL for display."""
    if "://" in url and "@" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}{':***' if ':' in creds else ''}@{host}"
    return url
