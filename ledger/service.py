"""The façade every adapter (MCP, REST, CLI) calls: one :class:`Ledger` composed of the capabilities' handlers.

Each capability owns its handlers and caches (``ledger.<capability>.handlers``); the façade builds them on one
:class:`~ledger.kernel.Kernel`, hands each the part of :class:`CapabilityConfig` it is configured with, and names
their commands in one place. The caller's identity arrives as an :class:`Actor` built by the adapter from a
credential, never from a tool argument.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass

from ledger.anchor.handlers import AnchorCommands
from ledger.audit.carry import CarryCommands, OldLedger
from ledger.audit.checkpoints import Checkpointer
from ledger.audit.erasure import ErasureCommands
from ledger.audit.handlers import AuditCommands, ProgressBars
from ledger.audit.report import CarryResult, CheckpointFinding, ErasureResult, Replay
from ledger.audit.settings import SettingsCommands
from ledger.audit.transparency import Signed, TransparencyCommands
from ledger.brain.handlers import BrainCommands
from ledger.core import clock as _clock
from ledger.core import signing
from ledger.core.receipt_key import ReceiptKey
from ledger.core.storage import LedgerStore
from ledger.core.tlog.policy import Witness
from ledger.enforcement.handlers import EnforcementCommands
from ledger.enforcement.rules import RULES_FILE, RuleSet
from ledger.hooks import decisions as hook_decisions
from ledger.hooks.handlers import HookCommands
from ledger.kernel import Actor, Kernel, LedgerConfig, Source, check_agent
from ledger.keys import decisions as key_decisions
from ledger.keys.handlers import API_KEYS_STREAM, KeyCommands
from ledger.memory.handlers import MemoryCommands
from ledger.sessions import project, stamps
from ledger.sessions.grants import SessionGrants
from ledger.sessions.handlers import SessionCommands
from ledger.sessions.project import DEFAULT_CONTEXT_PATHS
from ledger.workflow.decisions import Workflow
from ledger.workflow.handlers import WorkflowCommands
from ledger.workflow.table import TABLE
from projections import snapshots as _snapshots
from projections.active_hours import IDLE_TIMEOUT
from projections.search import SearchIndex

__all__ = [
    "API_KEYS_STREAM",
    "Actor",
    "CapabilityConfig",
    "CarryResult",
    "CheckpointFinding",
    "Checkpointer",
    "ErasureResult",
    "Ledger",
    "LedgerConfig",
    "ProgressBars",
    "Replay",
    "Signed",
    "Source",
    "check_agent",
]


@dataclass(frozen=True)
class CapabilityConfig:
    """What the capabilities are configured with (the kernel's own settings are :class:`LedgerConfig`); the
    :class:`Ledger` hands each capability its part. ``workflow`` and ``enforcement_rules`` left ``None`` are the
    shipped files (``ledger.core.resources``: parsed once per process)."""

    token_ttl: _dt.timedelta | None = _dt.timedelta(minutes=30)  # a search's (or recall's) token; None: until used
    require_anchor: bool = False  # the gate stamps only a session with a validated anchor
    project_roots: tuple[str, ...] = ()  # where a working directory may lie
    context_paths: tuple[str, ...] = DEFAULT_CONTEXT_PATHS  # the context files whose PHASE is read
    external_context: tuple[str, ...] = ()  # absolute dirs or documents CTX: citations may also name
    anchor_challenge_ttl: _dt.timedelta = _dt.timedelta(minutes=10)  # how long a proof may answer a challenge
    anchor_challenge_required: bool = False  # refuse proofs that answer no challenge
    idle_timeout: _dt.timedelta = IDLE_TIMEOUT  # an open session stops being active this long after its last event
    workflow: Workflow | None = None  # the workflow table; None: the shipped one
    enforcement_rules: RuleSet | None = None  # the enforcement rules; None: the shipped ones
    witnesses: tuple[Witness, ...] = ()  # asked to cosign every transparency-log checkpoint
    min_cosignatures: int | None = None  # cosignatures a checkpoint needs (None: every witness)


class Ledger:
    """The service: every command of every front end goes through here.

    The capabilities are attributes (``ledger.sessions``, ``ledger.memory``, ``ledger.brain``, …); their commands
    are also named on the façade (``ledger.remember`` is ``ledger.memory.remember``), which is what adapters call.
    """

    def __init__(
        self,
        store: LedgerStore,
        index: SearchIndex,
        key: ReceiptKey,
        config: LedgerConfig | None = None,
        clock: _clock.Clock = _clock.now,
        signer: signing.SigningKey | None = None,
        capabilities: CapabilityConfig | None = None,
    ) -> None:
        cap = capabilities or CapabilityConfig()
        self.kernel = Kernel(store, index, key, config or LedgerConfig(), clock, signer)
        self.grants = SessionGrants(self.kernel)
        self.sessions = SessionCommands(
            self.kernel,
            self.grants,
            token_ttl=cap.token_ttl,
            require_anchor=cap.require_anchor,
            project_roots=cap.project_roots,
            context_paths=cap.context_paths,
        )
        self.anchors = AnchorCommands(
            self.kernel,
            self.grants,
            self.sessions,
            external_context=cap.external_context,
            challenge_ttl=cap.anchor_challenge_ttl,
            challenge_required=cap.anchor_challenge_required,
        )
        self.memory = MemoryCommands(self.kernel, self.grants, token_ttl=cap.token_ttl, idle_timeout=cap.idle_timeout)
        self.tasks = WorkflowCommands(self.kernel, self.grants, cap.workflow or TABLE.load())
        self.enforcement = EnforcementCommands(
            self.kernel, self.grants, self.tasks, cap.enforcement_rules or RULES_FILE.load()
        )
        self.brain = BrainCommands(self.kernel, self.sessions, self.memory)
        self.keys = KeyCommands(self.kernel)
        self.transparency = TransparencyCommands(self.kernel, cap.witnesses, cap.min_cosignatures)
        self.audit = AuditCommands(self.kernel, self.memory, self.transparency, idle_timeout=cap.idle_timeout)
        self.hooks = HookCommands(self.kernel)
        self.erasure = ErasureCommands(self.kernel, self.memory)
        self.settings = SettingsCommands(self.kernel)
        self.carrying = CarryCommands(self.kernel, self.memory, self.transparency)

        # --- the log: identity, chain, checkpoints, replays (ledger.audit) ---------------------------------------
        self.initialise = self.audit.initialise
        self.verify = self.audit.verify
        self.bound_key_id = self.audit.bound_key_id
        self.bound_signing_key = self.audit.bound_signing_key
        self.applied_settings = self.settings.applied
        self.apply_settings = self.settings.apply
        self.public_key = self.audit.public_key
        self.checkpoint = self.audit.checkpoint
        self.verify_checkpoints = self.audit.verify_checkpoints
        self.events_page = self.audit.events_page
        self.replay = self.audit.replay
        self.active_hours = self.audit.active_hours
        self.rebuild_tree = self.audit.rebuild_tree
        self.rebuild_index = self.audit.rebuild_index
        self.rebuild_snapshots = self.audit.rebuild_snapshots
        self.read_checkpoints = self.audit.read_checkpoints
        self.latest_checkpoint_in = self.audit.latest_checkpoint_in
        self.keep_checkpoint = self.audit.keep_checkpoint
        self.checkpointer = self.audit.checkpointer
        self.erase_block = self.erasure.erase_block
        self.erase_session = self.erasure.erase_session
        # carry_from (below): an old ledger's live memory into this new one, anchored by the old key's signed note
        # --- the transparency log: checkpoints, proofs, bundles (ledger.audit.transparency) ---------------------
        self.tlog_vkey = self.transparency.vkey
        self.tlog_origin = lambda: self.transparency.origin
        self.sign_tlog_checkpoint = self.transparency.sign_checkpoint
        self.sign_tlog_checkpoint_if = self.transparency.sign_checkpoint_if
        self.latest_tlog_checkpoint = self.transparency.latest
        self.tlog_inclusion = self.transparency.inclusion
        self.tlog_consistency = self.transparency.consistency
        self.tlog_bundle = self.transparency.bundle
        self.check_checkpoint_notes = self.transparency.check_notes
        self.tlog_verifier = self.transparency.verifier
        # --- sessions and the gate (ledger.sessions) -----------------------------------------------------------
        self.clock_in = self.sessions.clock_in
        self.clock_out = self.sessions.clock_out
        self.session_state = self.sessions.session_state
        self.search = self.sessions.search
        self.assert_compliance = self.sessions.assert_compliance
        self.verify_stamp = self.sessions.verify_stamp
        self.compliance_report = self.sessions.compliance_report
        self.compliance_series = self.sessions.compliance_series
        # --- client hooks: a turn's start and the Stop hook held at the gate (ledger.hooks) ----------------------
        self.turn_started = self.hooks.turn_started
        self.stop_hook = self.hooks.stop
        # --- the Odyssean Anchor (ledger.anchor) ---------------------------------------------------------------
        self.anchor = self.anchors.anchor
        self.anchor_challenge = self.anchors.challenge
        self.unlock_anchor = self.anchors.unlock_anchor
        # --- memory (ledger.memory) ----------------------------------------------------------------------------
        self.remember = self.memory.remember
        self.setup_memory = self.memory.setup_memory
        self.constitutional_block_count = self.memory.constitutional_block_count
        self.warm_memory = self.memory.warm
        self.recall = self.memory.recall
        self.curate = self.memory.curate
        self.outcome = self.memory.outcome
        self.supersede = self.memory.supersede
        self.forget = self.memory.forget
        self.archive_block = self.memory.archive
        self.restore_block = self.memory.restore
        self.regenerate_constitution = self.memory.regenerate_constitution
        self.memory_blocks = self.memory.memory_blocks
        self.memory_block = self.memory.memory_block
        self.memory_lookup = self.memory.memory_lookup
        self.block_texts = self.memory.block_texts
        self.memory_stats = self.memory.memory_stats
        # --- workflow tasks (ledger.workflow) and their enforcement (ledger.enforcement) -----------------------
        self.task_get = self.tasks.task_get
        self.task_list = self.tasks.task_list
        self.task_create = self.tasks.task_create
        self.task_update_dna = self.tasks.task_update_dna
        self.task_transition = self.tasks.task_transition
        self.enforcement_stats = self.enforcement.enforcement_stats
        self.enforcement_report = self.enforcement.report
        self.check_parameters = self.enforcement.check_parameters
        self.manage_task = self.enforcement.manage_task
        self.manage_context = self.enforcement.manage_context
        self.manage_subtask = self.enforcement.manage_subtask
        self.observe_parameter_checks = self.enforcement.check_observers.append  # (tool, action, seconds) per check
        # --- the brain: thinking with memory (ledger.brain) ----------------------------------------------------
        self.ask_brain = self.brain.ask
        self.brain_health = self.brain.health
        # --- API keys (ledger.keys) ----------------------------------------------------------------------------
        self.key_ring = self.keys.key_ring
        self.known_key_ring = self.keys.known_key_ring
        self.identify = self.keys.identify
        self.issue_api_key = self.keys.issue_api_key
        self.api_key_list = self.keys.api_key_list
        self.revoke_api_key = self.keys.revoke_api_key
        self.rotate_api_key = self.keys.rotate_api_key

    # --- pure checks adapters make before they have a ledger, or without one ---------------------------------------

    verify_stamp_offline = staticmethod(stamps.verify_offline)  # a receipt against a public key alone: no database
    read_hook_input = staticmethod(hook_decisions.read_input)  # a client hook's JSON from its stdin, checked
    identify_in = staticmethod(key_decisions.identify)  # the caller in a key ring already in hand (no database read)

    def check_working_dir(self, working_dir: str) -> str:
        """A session's working directory as clock-in would take it (absolute, existing, under the project roots),
        or ``InvalidInput`` saying what to send instead."""
        return str(project.check_working_dir(working_dir, self.project_roots))

    def carry_from(
        self,
        actor: Actor,
        old: Ledger,
        without: Sequence[str] = (),
        progress: ProgressBars | None = None,
        *,
        dry_run: bool = False,
    ) -> CarryResult:
        """Carry ``old``'s live memory blocks into this new ledger, encrypted under its data keys, and record the
        old head's checkpoint note signed by ``old``'s key (:mod:`ledger.audit.carry`); ``old`` is only read.
        ``dry_run``: every check, and what would be carried, with nothing written."""
        source = OldLedger(old.kernel, old.audit, old.transparency)
        return self.carrying.carry(actor, source, without, progress, dry_run=dry_run)

    # --- what the kernel holds --------------------------------------------------------------------------------

    @property
    def store(self) -> LedgerStore:
        return self.kernel.store

    @property
    def index(self) -> SearchIndex:
        return self.kernel.index

    @property
    def key(self) -> ReceiptKey:
        return self.kernel.key

    @property
    def signer(self) -> signing.SigningKey | None:
        return self.kernel.signer

    @property
    def config(self) -> LedgerConfig:
        return self.kernel.config

    @property
    def clock(self) -> _clock.Clock:
        return self.kernel.clock

    @property
    def snapshots(self) -> _snapshots.Snapshots:
        return self.kernel.snapshots

    # --- what the capabilities are configured with ---------------------------------------------------------

    @property
    def workflow(self) -> Workflow:
        """The workflow table the tasks follow."""
        return self.tasks.workflow

    @property
    def enforcement_rules(self) -> RuleSet:
        """The enforcement rules the managed tools are checked against."""
        return self.enforcement.rules

    @property
    def project_roots(self) -> tuple[str, ...]:
        """Where a session's working directory may lie."""
        return self.sessions.project_roots
