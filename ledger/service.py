"""Thin handlers: load the stream(s) a decision needs, fold, decide, append (retrying on a lost race).

Every adapter (MCP, REST, CLI) calls these and nothing else. The caller's identity arrives as an
:class:`Actor` built by the adapter from a credential, never from a tool argument.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ledger.anchor import decisions as anchoring
from ledger.anchor import project as project_context
from ledger.anchor import proof as anchor
from ledger.audit import checkpoints
from ledger.core import signing
from ledger.core.canonical import require_utf8
from ledger.core.chain import ChainReport, StoredRecord
from ledger.core.errors import ConcurrencyError, Conflict, InvalidInput, NotFound
from ledger.core.events import (
    AnchorLocked,
    ComplianceRefused,
    ComplianceStamped,
    DomainEvent,
    LedgerInitialised,
    RecordedEvent,
    SigningKeyBound,
)
from ledger.core.mapper import decode
from ledger.enforcement.handlers import EnforcementCommands
from ledger.keys import access
from ledger.keys.handlers import API_KEYS_STREAM, KeyCommands
from ledger.memory import decisions as memory
from ledger.memory.handlers import MemoryCommands, score_one, stats_of
from ledger.results import (
    AgentReport,
    AnchorResult,
    AssertResult,
    BlockOut,
    ComplianceReport,
    MemoryStats,
    SearchHit,
    SearchResult,
    SessionInfo,
    SessionState,
    StampVerification,
)
from ledger.service_base import Actor, LedgerConfig, Source, check_agent
from ledger.sessions import decisions as sessions
from ledger.sessions import gate, receipts, stamps
from projections import sessions as session_proj
from projections.active_hours import IDLE_TIMEOUT, ActiveClock, ActiveTime
from projections.active_hours import active_hours as active_hours_of
from projections.memory import BlockView
from projections.runner import ACTIVE_TIME, ALL, COMPLIANCE, MEMORY, SESSIONS, TRAFFIC, ProjectionRunner, run_together

__all__ = ["API_KEYS_STREAM", "Actor", "Ledger", "LedgerConfig", "Replay", "Source", "check_agent"]

LEDGER_STREAM = "ledger"


@dataclass
class Ledger(EnforcementCommands, MemoryCommands, KeyCommands):
    """The service: every command of every front end goes through here."""

    def initialise(self) -> bool:
        """Create the schema and record which keys this ledger is bound to. Idempotent.

        Returns whether this call created the ledger. A ledger made before signing keys existed is bound to its
        signing key the first time it is initialised with one.
        """
        self.store.create_schema()
        self.index.create_schema()
        self.snapshots.create_schema()
        system = {"agent": "system", "source": "cli"}
        for _ in range(self.config.max_conflict_retries):
            state = self.store.load_stream(LEDGER_STREAM)
            receipt_key, signing_key = _bindings(state.events)
            if receipt_key is not None and receipt_key != self.key.key_id:
                raise Conflict(
                    f"this ledger was initialised with receipt key {receipt_key}, but the key file holds "
                    f"{self.key.key_id}; receipts signed now could not be checked against earlier ones",
                    "restore the original key file (LEDGER_KEY_FILE / --key-file)",
                )
            if signing_key is not None and self.signer is not None and signing_key.key_id != self.signer.key_id:
                raise Conflict(
                    f"this ledger is bound to signing key {signing_key.key_id}, but the signing key file holds "
                    f"{self.signer.key_id}; its checkpoints and receipts would not verify against the published key",
                    "restore the original signing key file (LEDGER_SIGNING_KEY_FILE / --signing-key-file)",
                )
            events: list[DomainEvent] = []
            if receipt_key is None:
                events.append(LedgerInitialised(receipt_key_id=self.key.key_id))
            if signing_key is None and self.signer is not None:
                public = self.signer.public
                events.append(SigningKeyBound(key_id=public.key_id, public_key=signing.b64url(public.raw)))
            if not events:
                return False
            try:
                self.store.append(LEDGER_STREAM, state.version, events, system)
            except ConcurrencyError:
                continue  # another process is initialising too: look again
            return receipt_key is None
        raise Conflict("the ledger stream kept changing while initialising", "run the command again")

    def verify(self, progress: Callable[[int], None] | None = None) -> ChainReport:
        """Recompute the chain (see :meth:`SqlEventStore.verify`) of a ledger that must begin with its
        ``LedgerInitialised`` event: a log rebuilt without it, or emptied, is not this ledger's log."""
        first = self.store.get(1)
        if first is None or first.type != LedgerInitialised.type_name:
            found = "nothing (the table is empty)" if first is None else f"a {first.type} event"
            return ChainReport(
                False, 0, 0, 1, f"position 1 holds {found}, not the ledger's LedgerInitialised: the log was replaced"
            )
        return self.store.verify(progress)

    def bound_key_id(self) -> str | None:
        """The fingerprint of the receipt key recorded by ``LedgerInitialised`` (None before ``init``)."""
        return _bindings(self.store.load_stream(LEDGER_STREAM).events)[0]

    def bound_signing_key(self) -> SigningKeyBound | None:
        """The signing key this ledger is bound to (None before ``init`` made one)."""
        return _bindings(self.store.load_stream(LEDGER_STREAM).events)[1]

    # --- checkpoints ----------------------------------------------------------------------------------

    def public_key(self) -> signing.PublicKey:
        """The public half of the ledger's signing key."""
        return self._signer().public

    def checkpoint(self) -> checkpoints.Checkpoint:
        """Sign the current head of the log."""
        position, head_hash = self.store.head()
        return checkpoints.sign(self._signer(), position=position, head_hash=head_hash, now=self.clock())

    def verify_checkpoints(
        self, sources: Sequence[checkpoints.Source], public: signing.PublicKey
    ) -> list[CheckpointFinding]:
        """Check each checkpoint's signature with ``public`` and whether the log still holds its head."""
        head, _ = self.store.head()
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
                problem = checkpoints.held_by(cp, self.store.get(cp.position) if cp.position <= head else None, head)
            findings.append(CheckpointFinding(source.where, cp, problem))
        return findings

    # --- sessions -------------------------------------------------------------------------------------

    def clock_in(
        self, actor: Actor, role: str, working_dir: str | None = None, focus: str | None = None
    ) -> SessionInfo:
        check_agent(actor.agent)
        self._refuse_if_locked_out(actor)
        session_id = sessions.new_session_id()
        events = sessions.decide_clock_in(
            session_id=session_id, agent=actor.agent, role=role, working_dir=working_dir, focus=focus
        )
        if working_dir is not None:
            # The server reads the project's real state itself; the agent only names the directory.
            root = project_context.check_working_dir(working_dir, self.config.project_roots)
            ctx = project_context.read_context(root, self.config.context_paths)
            events = [
                events[0].model_copy(
                    update=dict(
                        working_dir=ctx.working_dir,
                        branch=ctx.branch,
                        files=ctx.files,
                        phase=ctx.phase,
                        context_files=list(ctx.context_files),
                    )
                )
            ]
        return SessionInfo.of(self._start_session(actor, session_id, list(events)))

    def _refuse_if_locked_out(self, actor: Actor) -> None:
        """An agent with a locked session opens no other until a person unlocks it: otherwise a new session would
        be a way round the lock (seed 001: "block further action (human intervention required)"). Lock events
        are few and range-scanned by type; each candidate session's own view says whether it is still locked."""
        streams = {rec.stream for rec in self.store.iter_records(types=[AnchorLocked.type_name], agent=actor.agent)}
        for stream in sorted(streams):
            session_id = stream.removeprefix(session_proj.STREAM_PREFIX)
            _, _, view = self._session(session_id)
            if view is not None and view.agent == actor.agent and view.anchor_locked:
                raise anchoring.agent_locked_out(actor.agent, session_id)

    def clock_out(self, actor: Actor, session_id: str) -> SessionInfo:
        def attempt() -> SessionInfo:
            session = self._open_session(actor, session_id, while_locked=True)  # ending a locked session is allowed
            _, final = self._append_to_session(actor, session, list(sessions.decide_clock_out(session.view)))
            return SessionInfo.of(final)

        return self._retrying(attempt)

    def session_state(
        self,
        session_id: str,
        *,
        as_of: _dt.datetime | None = None,
        position: int | None = None,
        viewer: Actor | None = None,
    ) -> SessionState:
        """The session and its token, now or as of a time or position (an agent key: only its own sessions)."""
        until = self._until(as_of, position)
        stream = sessions.stream_for(sessions.check_session_id(session_id))
        view = session_proj.fold(self.store.iter_events(0, until, stream=stream))
        if view is None:
            raise NotFound(f"session {session_id} does not exist (at that point)", "check the session id")
        if viewer is not None:
            access.require_session_reader(viewer, session_id, view.agent)
        moment = as_of or self.clock()
        return SessionState.at(view, moment, until if until is not None else self.store.head()[0])

    # --- the Odyssean Anchor -------------------------------------------------------------------------------

    def anchor(
        self, actor: Actor, session_id: str, role: str, proof_candidate: str, tier: str = "default"
    ) -> AnchorResult:
        """Validate an anchor proof against the authoritative context; count, lock and record the attempt."""
        if not isinstance(proof_candidate, str) or not proof_candidate.strip():
            raise InvalidInput("proof_candidate is empty", "send the whole ===ODYSSEAN_ANCHOR_PROOF::v5.0=== block")
        if tier not in anchor.TIERS:
            raise InvalidInput(f"tier {tier!r} is not known", f"send one of {', '.join(anchor.TIERS)}")
        if len(proof_candidate) > anchor.MAX_PROOF_CHARS:
            raise InvalidInput(
                f"the proof is {len(proof_candidate)} characters; the limit is {anchor.MAX_PROOF_CHARS}",
                "send only the ===ODYSSEAN_ANCHOR_PROOF::v5.0=== block",
            )
        sessions.check_role(role)
        require_utf8(proof_candidate, "proof")

        def attempt() -> AnchorResult:
            session = self._open_session(actor, session_id, while_locked=True)  # a locked attempt is recorded
            view = session.view
            if view.anchor_locked:
                [rec], after = self._append_to_session(actor, session, anchoring.decide_refusal(view))
                message = anchoring.locked_message(session_id)
                return AnchorResult(
                    validated=False,
                    canonical_proof="",
                    errors=[message],
                    guidance=f"VALIDATION FAILED: [{message}]. RETRY: [none until a person unlocks the session]",
                    enforcement=anchoring.Enforcement.of(after, view.anchor_attempt),
                    session_id=session_id,
                    position=rec.position,
                )
            if not view.working_dir:
                raise InvalidInput(
                    "this session has no working directory to anchor to",
                    "clock in again with working_dir set to your project directory",
                )
            root = Path(view.working_dir)
            ctx = project_context.read_context(root, self.config.context_paths)
            workspace = project_context.Workspace(root)
            validation = anchor.validate_proof(
                proof_candidate,
                role=role,
                session_role=view.role,
                tier=tier,
                context=anchor.AuthoritativeContext(
                    working_dir=ctx.working_dir, branch=ctx.branch, phase=ctx.phase, files=ctx.files
                ),
                check_citation=workspace.check_citation,
                parent_exists=self._session_exists,
            )
            events = anchoring.decide_attempt(
                view,
                role=role,
                tier=tier,
                proof=proof_candidate,
                validation=validation,
                branch=ctx.branch,
                phase=ctx.phase,
                files=ctx.files,
            )
            recorded, after = self._append_to_session(actor, session, events)
            return AnchorResult(
                validated=validation.validated,
                canonical_proof=validation.canonical_proof,
                errors=validation.errors,
                guidance=validation.guidance,
                enforcement=anchoring.Enforcement.of(after, view.anchor_attempt + 1),
                warnings=validation.warnings,
                template="" if validation.validated else validation.template,
                session_id=session_id,
                position=recorded[0].position,
            )

        return self._retrying(attempt)

    def unlock_anchor(self, actor: Actor, session_id: str, reason: str) -> SessionState:
        """A person lifts an anchor lock; the unlock is an event naming who and why."""

        def attempt() -> SessionState:
            session = self._administer_session(actor, session_id, "unlock a session")
            self._append_to_session(actor, session, anchoring.decide_unlock(session.view, reason))
            return self.session_state(session_id)

        return self._retrying(attempt)

    def _session_exists(self, session_id: str) -> bool:
        try:
            return self._session(session_id)[2] is not None
        except InvalidInput:
            return False

    # --- memory ---------------------------------------------------------------------------------------

    def search(self, actor: Actor, session_id: str, query: str, limit: int = 10) -> SearchResult:
        """Search memory; the search is recorded and issues the session's compliance token."""
        query = memory.check_query(query)
        limit = memory.check_limit(limit)

        def attempt() -> SearchResult:
            session = self._open_session(actor, session_id)
            hits = self.index.search(query, limit)
            events = gate.decide_search(
                session.view,
                query=query,
                limit=limit,
                result_ids=[h.block_id for h in hits],
                now=self.clock(),
                ttl=self.config.token_ttl,
            )
            self._append_to_session(actor, session, events)
            return SearchResult(
                results=[SearchHit(block_id=h.block_id, content=h.content, tags=h.tags, score=h.score) for h in hits],
                count=len(hits),
                session_id=session_id,
                token_expires_at=events[0].token_expires_at,
            )

        return self._retrying(attempt)

    # --- the gate -------------------------------------------------------------------------------------

    def assert_compliance(self, actor: Actor, session_id: str, request_id: str | None = None) -> AssertResult:
        """PASS (consuming the token) with a stamp and receipt, or a recorded FAIL with guidance.

        With ``request_id`` a retry of a request the ledger already answered for this session (say the reply was
        lost) gets that same answer and receipt, read back from the ledger, and records nothing new.
        """
        request_id = gate.check_request_id(request_id)
        signer = self._signer()  # before deciding: a PASS must never be recorded without its receipt

        def attempt() -> AssertResult:
            session = self._open_session(actor, session_id, while_locked=True)  # locked: a recorded FAIL
            answered = session.view.answers.get(request_id) if request_id is not None else None
            if answered is not None:
                stored = self.store.get(answered)
                if stored is None:  # the view says the log holds it; a log that no longer does is not trusted
                    raise Conflict(
                        f"the answer to request {request_id} at position {answered} is missing from the log",
                        "run `compliance-ledger verify`",
                    )
                return self._assert_result(decode(stored), signer, repeated=True)
            decision = gate.decide_assert(
                session.view, self.clock(), require_anchor=self.config.require_anchor, request_id=request_id
            )
            [rec], _ = self._append_to_session(actor, session, [decision])
            return self._assert_result(rec, signer)

        return self._retrying(attempt)

    @staticmethod
    def _assert_result(rec: RecordedEvent, signer: signing.SigningKey, *, repeated: bool = False) -> AssertResult:
        """The gate's answer as recorded at ``rec`` (Ed25519 signatures are deterministic: the same receipt)."""
        decision = rec.event
        if isinstance(decision, ComplianceStamped):
            receipt = receipts.sign(
                signer,
                position=rec.position,
                hash=rec.hash,
                session_id=decision.session_id,
                count=decision.count,
                agent=rec.agent or "",
                recorded_at=rec.recorded_at,
            )
            return AssertResult(
                status="PASS",
                session_id=decision.session_id,
                stamp=decision.stamp,
                receipt=receipt,
                position=rec.position,
                request_id=decision.request_id,
                repeated=repeated,
            )
        assert isinstance(decision, ComplianceRefused)
        return AssertResult(
            status="FAIL",
            session_id=decision.session_id,
            message=decision.message,
            reason=decision.reason,
            position=rec.position,
            request_id=decision.request_id,
            repeated=repeated,
        )

    def verify_stamp(self, receipt: str) -> StampVerification:
        """Say whether a receipt is genuine and which ledger event it points at."""
        if not isinstance(receipt, str) or not receipt.strip():
            raise InvalidInput("receipt is empty", "send the receipt string that assert_compliance returned")
        parsed = stamps.read(receipt)
        if isinstance(parsed, StampVerification):
            return parsed
        problem = stamps.signature_problem(parsed, public=self._verifying_key(), hmac_key=self.key)
        if problem is not None:
            return StampVerification(valid=False, reason=problem, scheme=parsed.claims.scheme)
        return stamps.check_record(self.store.get(parsed.claims.position), parsed.claims)

    def _verifying_key(self) -> signing.PublicKey | None:
        """The key that checks Ed25519 receipts: the signing key's public half, else the one the ledger recorded."""
        if self.signer is not None:
            return self.signer.public
        bound = self.bound_signing_key()
        return signing.PublicKey.from_raw(signing.unb64url(bound.public_key)) if bound else None

    # --- reports --------------------------------------------------------------------------------------

    def compliance_report(
        self,
        agent: str | None = None,
        *,
        as_of: _dt.datetime | None = None,
        position: int | None = None,
        viewer: Actor | None = None,
    ) -> ComplianceReport:
        """Per-agent gate counts, live (tailing the log) or replayed to a time or position (an agent key: its own
        row only)."""
        if viewer is not None:
            agent = access.report_agent(viewer, agent)
        until = self._until(as_of, position)
        if until is None:
            with self._reports_lock:  # HTTP requests run on a thread pool; the live runner is shared
                self.snapshots.catch_up(self._reports, lambda after: self.store.iter_events(after))
                position, agents = self._reports.position, dict(self._reports.state(COMPLIANCE.name))
        else:
            runner = self.snapshots.replay_to(ProjectionRunner([COMPLIANCE]), self.store.iter_events, until)
            position, agents = until, dict(runner.state(COMPLIANCE.name))
        rows = [AgentReport.of(a) for k, a in sorted(agents.items()) if not agent or k == agent]
        return ComplianceReport(position=position, as_of=as_of, agents=rows)

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
        for rec in self.store.iter_records(
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
        until = self._until(as_of, position)
        runner = ProjectionRunner(ALL)
        runner.run(self.store.iter_events(0, until), progress)
        if as_of is not None:
            moment = as_of
        else:
            moment = runner.last_recorded_at if until is not None and runner.last_recorded_at else self.clock()
        return Replay(
            runner=runner,
            moment=moment,
            position=runner.position if until is None else until,
            texts=self.block_texts,
            idle_timeout=self.config.idle_timeout,
        )

    def active_hours(self, *, as_of: _dt.datetime | None = None) -> float:
        """Hours in which at least one session was active, up to now or ``as_of`` (replayed to that moment)."""
        replay = self.replay(as_of=as_of)
        spans = tuple(s for s in replay.runner.state(ACTIVE_TIME.name).values() if s is not None)
        return active_hours_of(ActiveTime(spans), replay.moment, self.config.idle_timeout)

    def rebuild_index(self, progress: Callable[[int], None] | None = None) -> int:
        """Drop the derived search index and rebuild it from the log."""
        return self.index.rebuild(progress)

    def rebuild_snapshots(self, progress: Callable[[int], None] | None = None) -> int:
        """Drop every projection snapshot and write new ones folded from position 0 (read models are derived
        data); return how many were written (none without a signing key or with snapshots turned off)."""
        self.snapshots.drop()
        runners = [ProjectionRunner([COMPLIANCE]), ProjectionRunner([MEMORY, ACTIVE_TIME]), ProjectionRunner([TRAFFIC])]
        run_together(runners, self.store.iter_events(0), progress)
        return sum(self.snapshots.save(runner) for runner in runners)


def _bindings(events: Sequence[RecordedEvent]) -> tuple[str | None, SigningKeyBound | None]:
    """The receipt key id and the signing key recorded on the ``ledger`` stream."""
    receipt_key: str | None = None
    signing_key: SigningKeyBound | None = None
    for rec in events:
        if isinstance(rec.event, LedgerInitialised) and receipt_key is None:
            receipt_key = rec.event.receipt_key_id
        elif isinstance(rec.event, SigningKeyBound) and signing_key is None:
            signing_key = rec.event
    return receipt_key, signing_key


@dataclass(frozen=True)
class CheckpointFinding:
    """One checkpoint checked against the log: ``problem`` is None when the log still holds it."""

    where: str
    checkpoint: checkpoints.Checkpoint | None
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class Replay:
    """Projection states as of a moment, and the last position folded."""

    runner: ProjectionRunner
    moment: _dt.datetime
    position: int
    texts: Callable[[Sequence[BlockView]], Mapping[str, str]]  # blocks' texts, read from the log
    idle_timeout: _dt.timedelta = IDLE_TIMEOUT

    def sessions(self) -> list[SessionState]:
        views = self.runner.state(SESSIONS.name).values()
        return [SessionState.at(v, self.moment, self.position) for v in views if v is not None]

    def compliance(self) -> list[AgentReport]:
        return [AgentReport.of(a) for _, a in sorted(self.runner.state(COMPLIANCE.name).items())]

    def active_clock(self) -> ActiveClock:
        return self.runner.active_clock(self.moment, self.idle_timeout)

    def memory(self) -> MemoryStats:
        """Blocks, archive, edges, curates and active hours as of the replayed moment."""
        return stats_of(self.runner.memory(), self.active_clock())

    def block(self, block_id: str) -> BlockOut:
        """One block's state and score breakdown as of the replayed moment."""
        graph = self.runner.memory()
        block = graph.blocks.get(block_id)
        if block is None:
            raise NotFound(f"block {block_id} does not exist at that point", "check the id and the time")
        return BlockOut.of(score_one(graph, self.active_clock(), block), self.texts([block])[block_id])
