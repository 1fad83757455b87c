"""The composition root: the one place a :class:`~ledger.service.Ledger` is wired from plain settings — engine,
store, search index, receipt and signing keys, clock, the kernel's and the capabilities' settings.

Adapters build a :class:`LedgerSettings` (``api/bootstrap.py`` from the environment) and call :func:`open_ledger`
or :func:`initialise`; tests call :func:`compose` with a store, clock or embedder of their own. Nothing is created
at import time.
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ledger.audit.handlers import row_binding
from ledger.core import clock as _clock
from ledger.core import receipt_key, signing
from ledger.core.decision_settings import DecisionSettings, Difference, differences, file_value
from ledger.core.errors import Conflict, NotInitialised
from ledger.core.events import SettingsApplied
from ledger.core.limits import Timeouts
from ledger.core.receipt_key import ReceiptKey
from ledger.core.storage import LedgerStore, MemoryStore, RowKey, SqlEventStore, make_engine, migration
from ledger.enforcement.rules import RULES_FILE
from ledger.kernel import LEDGER_STREAM, bindings
from ledger.service import Actor, CapabilityConfig, Ledger, LedgerConfig, ProgressBars
from ledger.workflow.table import TABLE, configured_workflow
from projections import embedder as _embedder
from projections.search import SearchIndex
from projections.search.fusion import MIN_SIMILARITY

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from projections.embedding_index import EmbeddingIndex

EmbedderStatus = Callable[[], tuple[bool, str]]
"""Whether hybrid search can run here and why not (:func:`projections.embedder.status`; fake it in tests)."""

_SYSTEM = Actor(agent="system", source="cli", admin=True)  # what init records, as no one in particular


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
    # The project roots are the default (the home directory and the start directory), not a list an operator set:
    # recorded as that rule, not as the paths, which differ with where a node was started (decision_settings).
    project_roots_default: bool = False


@dataclass(frozen=True)
class InitReport:
    """What ``init`` did."""

    database_url: str
    key_path: str
    key_created: bool
    ledger_created: bool
    signing_key_path: str
    signing_key_created: bool
    settings_recorded: bool = False  # this call recorded the node's decision settings (a ledger with none yet)
    settings_digest: str = ""  # the digest of this node's decision settings (what it announces)


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
    workflow = cap.workflow or configured_workflow(settings.workflow_file)
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


def decision_settings(settings: LedgerSettings, embedder: EmbedderStatus = _embedder.status) -> DecisionSettings:
    """The settings that change a decision — a PASS or a FAIL, a request refused or recorded, what a search
    returns — in their canonical form: the one set every node of a ledger must share, which the ledger records
    (``SettingsApplied``, by ``init`` and ``settings apply``) and ``serve`` and ``mcp`` compare their own with.

    In, each because two nodes that differ in it answer the same request differently:

    * ``require_anchor``: the gate FAILs ``anchor_required`` on one node and PASSes on the other;
    * ``token_ttl_minutes``: a search's token still valid (PASS) or expired (FAIL);
    * ``project_roots``: a session's working directory accepted or refused. Left at its default (the home
      directory and the directory the node started in) it is recorded as that rule, ``"(default)"``, not as the
      paths, which differ with where each node was started: a cluster sets ``LEDGER_PROJECT_ROOTS``;
    * ``context_paths``, ``external_context``: which project context a session reads and which citations an
      anchor's proof may make (an anchor validated or refused);
    * ``anchor_challenge_ttl_minutes``, ``anchor_challenge_required``: a proof accepted or refused;
    * ``idle_timeout_minutes``: when a session stops counting as active: the active hours that time memory decay
      and auto-curation, so which blocks are archived and what a search returns;
    * ``secret_scan``: a text holding a credential refused, redacted or recorded as sent;
    * ``retrieval``: what memory search ranks by, as it runs here: ``hybrid:<model>`` or ``bm25`` (``LEDGER_SEMANTIC``
      and whether the ``[semantic]`` extra is installed), and ``search_min_similarity``, hybrid search's floor;
    * ``workflow_file``, ``enforcement_rules_file``: the workflow table (a transition allowed or refused) and the
      enforcement rules (each tool's level: a call blocked, warned or let through), by their exact text (the
      shipped file's when none is set; a node whose file holds the shipped text agrees with one that sets none).

    Out, because they change how or where a node works, never what it decides: the database URL, home and key
    files (the ledger's identity: ``check_node_keys`` refuses a node with other keys); the lock, statement,
    idle-in-transaction and keepalive timeouts (how long a node waits before it answers 503, which decides
    nothing); ``snapshot_every_events`` (how often a read model is saved); the checkpoint file and schedule, the
    witnesses and the cosignatures they must give (what the transparency log publishes, not what is decided:
    keep them alike, README "Running several nodes"); the rate limit (how often a key may call: a 429, not an
    answer); host, port, allowed hosts, CORS origins, the fallback agent without API keys, log format and
    OpenTelemetry (the node's own transport and logs).
    """
    cap = settings.capabilities
    kernel = settings.kernel
    _with_files(settings)  # a bad file is refused here, as at a start, before its text is recorded
    workflow, workflow_from = TABLE.text(settings.workflow_file)
    rules, rules_from = RULES_FILE.text(settings.enforcement_rules_file)
    available, _ = embedder()
    retrieval = f"hybrid:{_embedder.MODEL_ID}" if available and settings.semantic else "bm25"
    values = {
        "require_anchor": cap.require_anchor,
        "token_ttl_minutes": cap.token_ttl.total_seconds() / 60 if cap.token_ttl else 0.0,
        "project_roots": "(default)" if settings.project_roots_default else sorted(set(cap.project_roots)),
        "context_paths": list(cap.context_paths),
        "external_context": sorted(set(cap.external_context)),
        "anchor_challenge_ttl_minutes": cap.anchor_challenge_ttl.total_seconds() / 60,
        "anchor_challenge_required": cap.anchor_challenge_required,
        "idle_timeout_minutes": cap.idle_timeout.total_seconds() / 60,
        "secret_scan": kernel.secret_scan,
        "retrieval": retrieval,
        "search_min_similarity": settings.search_min_similarity,
        "workflow_file": file_value(workflow),
        "enforcement_rules_file": file_value(rules),
    }
    env = {name: f"LEDGER_{name.upper()}" for name in values}
    env["retrieval"] = "LEDGER_SEMANTIC and the [semantic] extra"
    return DecisionSettings(values, {"workflow_file": workflow_from, "enforcement_rules_file": rules_from}, env)


def node_settings_differ(ledger: Ledger, local: DecisionSettings) -> list[Difference] | None:
    """How ``local`` differs from the decision settings the ledger records (empty: they match; ``None``: the ledger
    records none yet)."""
    applied = ledger.applied_settings()
    if applied is None:
        return None
    assert isinstance(applied.event, SettingsApplied)
    return differences(applied.event.values, local)


def check_node_settings(ledger: Ledger, local: DecisionSettings) -> None:
    """Refuse to serve with decision settings other than the ledger's, naming each that differs (the ledger's
    value and this node's; a file's digests) and what to run; or when the ledger records none yet."""
    found = node_settings_differ(ledger, local)
    if found is None:
        raise NotInitialised(
            "the ledger records no decision settings yet (it was created before they were recorded), so this "
            "node cannot tell whether it decides as the others do",
            "run `compliance-ledger settings apply` once, from a node whose settings are right (or `compliance-ledger "
            "migrate`, which records its node's when the ledger has none), then start",
        )
    if found:
        said = "; ".join(d.said() for d in found)
        raise Conflict(
            f"this node's decision settings differ from the ledger's, so it would decide otherwise than the other "
            f"nodes: {said}",
            "give this node the ledger's settings (`compliance-ledger settings show` prints them), or adopt this "
            "node's for the whole cluster with `compliance-ledger settings apply` (then restart the other nodes "
            "with them)",
        )


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
    constitutional memory blocks, as ``compliance-ledger init`` would give it. A ledger that records no decision
    settings yet (a new one, or one from before they were recorded) gets this node's (:func:`decision_settings`);
    one that records some keeps them (``settings apply`` changes them). A ledger from before row
    authenticators or the tree is brought up to date here, with a bar from ``progress`` per step.
    ``in_memory``: the ledger's log is a :class:`~ledger.core.storage.MemoryStore` and the settings' database is
    not opened (tests, tools); its keys are still the settings' files.
    """
    local = decision_settings(settings, embedder)  # a bad workflow or rules file is refused before anything
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
    try:
        recorded = ledger.apply_settings(_SYSTEM, local, node=socket.gethostname(), unless_recorded=True)
    except BaseException:
        ledger.store.dispose()
        raise
    if created and seed_new:
        ledger.setup_memory(Actor(agent="system", source="cli"))
    return ledger, InitReport(
        settings.db_url,
        str(settings.key_path),
        key_created,
        created,
        str(settings.signing_key_path),
        signer_created,
        recorded is not None,
        local.digest,
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
    or ahead of this program, the key files are missing or not this ledger's, or this node's decision settings
    are not the ones the ledger records (:func:`check_node_settings`, naming each); it writes no key file, no
    event and runs no DDL, so nodes started at once all come up and no write of another node waits for a start.

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
            local = decision_settings(settings, embedder)
            check_node_settings(ledger, local)
    except BaseException:
        engine.dispose()
        raise
    if state.absent:
        engine.dispose()
        return initialise(settings, clock, seed_new=True, progress=progress, embedder=embedder)
    return ledger, InitReport(
        settings.db_url,
        str(settings.key_path),
        False,
        False,
        str(settings.signing_key_path),
        False,
        settings_digest=local.digest,
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
