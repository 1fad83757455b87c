"""Audit commands: initialise and bind the ledger's keys, verify the chain, sign and check checkpoints, page the
log, and replay every projection to any moment.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from ledger.audit import checkpoints
from ledger.audit.report import CheckpointFinding, Replay
from ledger.audit.transparency import TransparencyCommands
from ledger.core import access, signing
from ledger.core.canonical import format_ts
from ledger.core.chain import ChainReport, StoredRecord
from ledger.core.errors import ConcurrencyError, Conflict, IntegrityViolation, NotInitialised
from ledger.core.events import (
    DomainEvent,
    LedgerInitialised,
    RecordedEvent,
    RowKeyBound,
    SigningKeyBound,
)
from ledger.core.storage import CHECKPOINT_LEASE, StreamState, migration
from ledger.kernel import LEDGER_STREAM, Actor, Kernel, bindings
from ledger.memory.handlers import MemoryCommands
from projections.active_hours import ActiveTime
from projections.active_hours import active_hours as active_hours_of
from projections.runner import (
    ACTIVE_TIME,
    ALL,
    COMPLIANCE,
    COMPLIANCE_HOURLY,
    MEMORY,
    TRAFFIC,
    ProjectionRunner,
    run_together,
)

ProgressBars = Callable[[str, int], AbstractContextManager[Callable[[int], None]]]
"""Makes a progress bar for a long step: its label and total in, a context giving the callback to tick with."""

_SYSTEM = {"agent": "system", "source": "cli"}


def _bar(progress: ProgressBars | None, label: str, total: int) -> AbstractContextManager[Callable[[int], None] | None]:
    return progress(label, total) if progress is not None else contextlib.nullcontext(None)


def row_binding(events: Sequence[RecordedEvent]) -> RowKeyBound | None:
    """The row key the ``ledger`` stream binds (``None`` before it does)."""
    return next((rec.event for rec in events if isinstance(rec.event, RowKeyBound)), None)


class AuditCommands:
    """The log itself: its identity, its chain, its checkpoints and its replays."""

    def __init__(
        self,
        kernel: Kernel,
        memory: MemoryCommands,
        transparency: TransparencyCommands,
        *,
        idle_timeout: _dt.timedelta,
    ) -> None:
        """``idle_timeout``: an open session stops being active this long after its last event (active hours)."""
        self.kernel = kernel
        self.memory = memory
        self.transparency = transparency
        self.idle_timeout = idle_timeout

    def initialise(self, progress: ProgressBars | None = None) -> bool:
        """Create the schema, bring an older ledger up to date and record which keys this ledger is bound to.
        Idempotent.

        Returns whether this call created the ledger. A schema already at ``SCHEMA_VERSION`` is not touched (no
        DDL: nothing waits for it); an older one is migrated and its new version recorded last. Callers that may
        race run this under ``migration_lock`` (:mod:`ledger.core.storage.migration`). A ledger made before
        signing keys existed is bound to its signing key the first time it is initialised with one. A ledger made
        before row authenticators gets its events authenticated (:meth:`_vouch`) and a ledger whose tree is behind
        its log gets the missing part, each with a bar from ``progress``.
        """
        store = self.kernel.store
        if store.row_key is None:
            raise NotInitialised("the ledger's store was opened without its row key", "open it with its key file")
        schema = migration.schema_state(store.engine)
        if schema.ahead:
            migration.require_current(schema)
        if not schema.current:
            self._migrate(progress)
        else:  # a tree wiped behind the ledger's back (its rows' hashes) is derived: built again, checked as it goes
            self._build_tree(progress, store.pending_upgrade()[1])
        # The search index is derived: one built another way (another tokenizer, before provenance) is rebuilt
        # here, by init or migrate, never by a start (its build version is part of the schema's version).
        self.kernel.index.create_schema()
        created = self._bind_keys()
        if not schema.current:
            migration.record_version(store.engine, format_ts(self.kernel.clock()))
        return created

    def _migrate(self, progress: ProgressBars | None) -> None:
        """Create the schema, or bring an older one up to date (DDL: it waits for every running write)."""
        store = self.kernel.store
        store.create_schema()
        unauthenticated, missing = store.pending_upgrade()
        if unauthenticated:
            with _bar(progress, "authenticating events", unauthenticated) as tick:
                store.authenticate_existing(LEDGER_STREAM, self._vouch, _SYSTEM, tick)
            _, missing = store.pending_upgrade()
        self._build_tree(progress, missing)
        self.kernel.snapshots.create_schema()
        self.transparency.create_schema()

    def _build_tree(self, progress: ProgressBars | None, missing: int) -> None:
        """Add the ``missing`` leaves the tree lacks (none: nothing), with a bar from ``progress``."""
        if missing:
            with _bar(progress, "building the tree", missing) as tick:
                self.kernel.store.build_tree(tick)

    def _bind_keys(self) -> bool:
        """Check the key files against the keys the ``ledger`` stream binds, and bind those it does not yet."""
        store = self.kernel.store
        assert store.row_key is not None
        for _ in range(self.kernel.config.max_conflict_retries):
            try:
                state = store.load_stream(LEDGER_STREAM)
            except IntegrityViolation as exc:
                raise Conflict(
                    f"{exc.message}: the ledger's own events do not authenticate with the key file's row key "
                    f"{store.row_key.key_id}, so the key file (receipt key {self.kernel.key.key_id}) is not this "
                    "ledger's, or its database was altered",
                    "restore the original key file (LEDGER_KEY_FILE / --key-file); `compliance-ledger verify` "
                    "names an altered event",
                ) from exc
            receipt_key, signing_key = bindings(state.events)
            self._check_receipt_key(receipt_key)
            row_key = row_binding(state.events)
            if row_key is not None and row_key.key_id != store.row_key.key_id:
                raise Conflict(
                    f"this ledger's events are authenticated by row key {row_key.key_id}, not {store.row_key.key_id}",
                    "restore the original key file (LEDGER_KEY_FILE / --key-file)",
                )
            if (
                signing_key is not None
                and self.kernel.signer is not None
                and signing_key.key_id != self.kernel.signer.key_id
            ):
                raise Conflict(
                    f"this ledger is bound to signing key {signing_key.key_id}, but the signing key file holds "
                    f"{self.kernel.signer.key_id}; its checkpoints and receipts would not verify against the "
                    "published key",
                    "restore the original signing key file (LEDGER_SIGNING_KEY_FILE / --signing-key-file)",
                )
            events: list[DomainEvent] = []
            if receipt_key is None:
                events.append(LedgerInitialised(receipt_key_id=self.kernel.key.key_id))
            if signing_key is None and self.kernel.signer is not None:
                public = self.kernel.signer.public
                events.append(SigningKeyBound(key_id=public.key_id, public_key=signing.b64url(public.raw)))
            if row_key is None:
                events.append(RowKeyBound(key_id=store.row_key.key_id, vouched_through=0))
            if not events:
                return False
            try:
                store.append(LEDGER_STREAM, state.version, events, _SYSTEM)
            except ConcurrencyError:
                continue  # another process is initialising too: look again
            return receipt_key is None
        raise Conflict("the ledger stream kept changing while initialising", "run the command again")

    def _check_receipt_key(self, receipt_key: str | None) -> None:
        if receipt_key is not None and receipt_key != self.kernel.key.key_id:
            raise Conflict(
                f"this ledger was initialised with receipt key {receipt_key}, but the key file holds "
                f"{self.kernel.key.key_id}; receipts signed now could not be checked against earlier ones",
                "restore the original key file (LEDGER_KEY_FILE / --key-file)",
            )

    def _vouch(self, state: StreamState, head: int) -> list[DomainEvent]:
        """Before the events of a ledger from before row authenticators are authenticated (their chain verified):
        refuse unless the key file is the ledger's and the ledger never had authenticators (a ledger that did and
        lost their table had it dropped behind its back); record what is vouched for."""
        self._check_receipt_key(bindings(state.events)[0])
        bound = row_binding(state.events)
        if bound is not None:
            raise IntegrityViolation(
                f"this ledger's events carry authenticators (row key {bound.key_id} is bound on its ledger stream), "
                "but they are gone (their column, or before schema 3 their table): it was dropped behind the "
                "ledger's back",
                "restore the database from a backup: the ledger vouches for unauthenticated events only once, when a "
                "ledger from before authenticators is upgraded",
            )
        assert self.kernel.store.row_key is not None
        return [RowKeyBound(key_id=self.kernel.store.row_key.key_id, vouched_through=head)]

    def verify(self, progress: Callable[[int], None] | None = None) -> ChainReport:
        """Recompute the chain (see :meth:`SqlEventStore.verify`) of a ledger that must begin with its
        ``LedgerInitialised`` event: a log rebuilt without it, or emptied, is not this ledger's log."""
        try:
            first = self.kernel.store.get(1)
        except IntegrityViolation as exc:
            return ChainReport(False, 0, 0, exc.position, exc.message)
        if first is None or first.type != LedgerInitialised.type_name:
            found = "nothing (the table is empty)" if first is None else f"a {first.type} event"
            return ChainReport(
                False,
                0,
                0,
                1,
                f"position 1 holds {found}, not the ledger's LedgerInitialised: the log was replaced",
            )
        return self.kernel.store.verify(progress)

    def bound_key_id(self) -> str | None:
        """The fingerprint of the receipt key recorded by ``LedgerInitialised`` (None before ``init``)."""
        return self.kernel.bindings()[0]

    def bound_signing_key(self) -> SigningKeyBound | None:
        """The signing key this ledger is bound to (None before ``init`` made one)."""
        return self.kernel.bindings()[1]

    def public_key(self) -> signing.PublicKey:
        """The public half of the ledger's signing key."""
        return self.kernel.require_signer().public

    def checkpoint(self) -> checkpoints.Checkpoint:
        """Sign the current head of the log."""
        position, head_hash = self.kernel.store.head()
        if position:
            self.kernel.store.get(position)  # a head the ledger did not write is never signed (IntegrityViolation)
        return checkpoints.sign(
            self.kernel.require_signer(), position=position, head_hash=head_hash, now=self.kernel.clock()
        )

    # --- checkpoints kept outside the database, in files the adapters name ---------------------------------------

    def read_checkpoints(self, paths: Iterable[Path]) -> list[checkpoints.Source]:
        """The checkpoints in these files (JSON lines or one document each), each named by the file it came from;
        raises ``InvalidInput`` naming a file that holds no checkpoint."""
        return list(checkpoints.read_sources(paths))

    def latest_checkpoint_in(self, path: Path) -> checkpoints.Checkpoint | None:
        """The newest checkpoint of a checkpoint log file (``None``: none written yet)."""
        return checkpoints.CheckpointLog(path).latest()

    def keep_checkpoint(self, checkpoint: checkpoints.Checkpoint, path: Path) -> None:
        """Append a signed checkpoint to a checkpoint log file (raises ``OSError`` when it cannot be written)."""
        checkpoints.CheckpointLog(path).append(checkpoint)

    def checkpointer(self, path: Path, *, every_events: int, every: _dt.timedelta | None) -> checkpoints.Checkpointer:
        """A writer that signs the head into the log file at ``path`` whenever a checkpoint is due."""
        return checkpoints.Checkpointer(
            make=self.checkpoint,
            head=lambda: self.kernel.store.head()[0],
            log=checkpoints.CheckpointLog(path),
            every_events=every_events,
            every=every,
            clock=self.kernel.clock,
            lease=lambda: self.kernel.store.lease(CHECKPOINT_LEASE),
        )

    def verify_checkpoints(
        self, sources: Sequence[checkpoints.Source], public: signing.PublicKey
    ) -> list[CheckpointFinding]:
        """Check each checkpoint's signature with ``public`` and whether the log still holds its head."""
        head, _ = self.kernel.store.head()
        findings = []
        for source in sources:
            cp = source.checkpoint
            if cp is None:
                problem = source.problem
            elif cp.key_id != public.key_id:
                problem = f"signed by key {cp.key_id}, not by the ledger key {public.key_id}"
            elif not cp.signed_by(public):
                problem = "the signature does not match: the checkpoint is forged or was altered"
            else:
                try:
                    record = self.kernel.store.get(cp.position) if cp.position <= head else None
                    problem = checkpoints.held_by(cp, record, head)
                except IntegrityViolation as exc:
                    problem = (
                        f"{exc.message}, where the checkpoint signed position {cp.position}: the log was rewritten"
                    )
            findings.append(CheckpointFinding(source.where, cp, problem))
        return findings

    def events_page(
        self,
        viewer: Actor | None = None,
        *,
        after: int = 0,
        limit: int = 100,
        stream: str | None = None,
        event_type: str | None = None,
    ) -> tuple[list[StoredRecord], int | None]:
        """One page of the log after ``after`` and the position to continue from (``None`` on the last page).

        An agent key sees only the events recorded for it; the filter runs in the store, so ``next_after`` is
        the last position it returned and a page never skips or shows another agent's event.
        """
        rows: list[StoredRecord] = []
        for rec in self.kernel.store.iter_records(
            after,
            stream=stream,
            types=[event_type] if event_type else None,
            agent=access.read_scope(viewer) if viewer is not None else None,
            batch_size=limit + 1,
        ):
            rows.append(rec)
            if len(rows) > limit:
                break
        more = len(rows) > limit
        rows = rows[:limit]
        return rows, rows[-1].position if more and rows else None

    def replay(
        self,
        *,
        as_of: _dt.datetime | None = None,
        position: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> Replay:
        """Fold every projection from position 0 up to a time or position (default: the whole log)."""
        until = self.kernel.until(as_of, position)
        runner = ProjectionRunner(ALL)
        erased = [0]

        def counted(events: Iterable[RecordedEvent]) -> Iterator[RecordedEvent]:
            for rec in events:
                if rec.meta.get("erased"):
                    erased[0] += 1
                yield rec

        runner.run(counted(self.kernel.store.iter_events(0, until)), progress)
        if as_of is not None:
            moment = as_of
        else:
            moment = runner.last_recorded_at if until is not None and runner.last_recorded_at else self.kernel.clock()
        return Replay(
            runner=runner,
            moment=moment,
            position=runner.position if until is None else until,
            sources=self.memory.block_sources,
            idle_timeout=self.idle_timeout,
            unreadable=erased[0],
        )

    def active_hours(self, *, as_of: _dt.datetime | None = None) -> float:
        """Hours in which at least one session was active, up to now or ``as_of`` (replayed to that moment)."""
        replay = self.replay(as_of=as_of)
        spans = tuple(s for s in replay.runner.state(ACTIVE_TIME.name).values() if s is not None)
        return active_hours_of(ActiveTime(spans), replay.moment, self.idle_timeout)

    def rebuild_tree(self, progress: Callable[[int], None] | None = None) -> int:
        """Check the chain and every authenticator, then drop the transparency-log tree and build it again from
        the log (see :meth:`SqlEventStore.rebuild_tree`); return its leaves."""
        return self.kernel.store.rebuild_tree(progress)

    def rebuild_index(self, progress: Callable[[int], None] | None = None, embeddings: bool = True) -> int:
        """Drop the derived search index (and, with ``embeddings``, the embedding index) and rebuild it from the
        log."""
        return self.kernel.index.rebuild(progress, embeddings)

    def rebuild_snapshots(self, progress: Callable[[int], None] | None = None) -> int:
        """Drop every projection snapshot and write new ones folded from position 0 (read models are derived
        data); return how many were written (none without a signing key or with snapshots turned off)."""
        self.kernel.snapshots.drop()
        runners = [
            ProjectionRunner([COMPLIANCE]),
            ProjectionRunner([COMPLIANCE_HOURLY]),
            ProjectionRunner([MEMORY, ACTIVE_TIME]),
            ProjectionRunner([TRAFFIC]),
        ]
        run_together(runners, self.kernel.store.iter_events(0), progress)
        return sum(self.kernel.snapshots.save(runner) for runner in runners)
