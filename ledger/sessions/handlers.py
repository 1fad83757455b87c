"""Session commands: clock in and out, search (which issues the token), the gate (assert_compliance), stamp
receipts, and the compliance report the gate's events add up to.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Hashable, Sequence
from typing import Any

from ledger.core import access, limits, signing
from ledger.core.errors import Conflict, IntegrityViolation, InvalidInput, NotFound
from ledger.core.events import (
    AnchorLocked,
    ComplianceRefused,
    ComplianceStamped,
    RecordedEvent,
)
from ledger.core.mapper import decode
from ledger.kernel import Actor, Kernel, check_agent
from ledger.sessions import decisions as sessions
from ledger.sessions import gate, locks, receipts, series, stamps
from ledger.sessions import project as project_context
from ledger.sessions.grants import SessionGrants
from ledger.sessions.report import (
    AgentReport,
    AssertResult,
    ComplianceReport,
    SearchHit,
    SearchResult,
    SessionInfo,
    SessionState,
    StampVerification,
)
from projections import sessions as session_proj
from projections.compliance import COUNTED
from projections.live import LiveProjection
from projections.runner import COMPLIANCE, COMPLIANCE_HOURLY, ProjectionRunner


def _compliance_rows(runner: ProjectionRunner) -> tuple[int, dict[Hashable, Any]]:
    """The position a compliance runner stands at and its per-agent counts (copied: the runner folds on)."""
    return runner.position, dict(runner.state(COMPLIANCE.name))


class SessionCommands:
    """Sessions and the gate; owns the live compliance report (restored from a snapshot, caught up from the log).

    ``token_ttl``: how long a search's token stays valid (``None``: until used); ``require_anchor``: the gate
    stamps only a session with a validated anchor; ``project_roots`` / ``context_paths``: where a working directory
    may lie, and the context files whose PHASE clock-in reads."""

    def __init__(
        self,
        kernel: Kernel,
        grants: SessionGrants,
        *,
        token_ttl: _dt.timedelta | None,
        require_anchor: bool,
        project_roots: Sequence[str],
        context_paths: Sequence[str],
    ) -> None:
        self.kernel = kernel
        self.grants = grants
        self.token_ttl = token_ttl
        self.require_anchor = require_anchor
        self.project_roots = tuple(project_roots)
        self.context_paths = tuple(context_paths)
        self._reports = LiveProjection(kernel, [COMPLIANCE], _compliance_rows)
        self._hourly = LiveProjection(  # the compliance series
            kernel,
            [COMPLIANCE_HOURLY],
            lambda runner: dict(runner.state(COMPLIANCE_HOURLY.name)),
            types=[cls.type_name for cls in COUNTED],
        )

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
            root = project_context.check_working_dir(working_dir, self.project_roots)
            ctx = project_context.read_context(root, self.context_paths)
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
        return SessionInfo.of(self.grants.start(actor, session_id, list(events)))

    def _refuse_if_locked_out(self, actor: Actor) -> None:
        """An agent with a locked session opens no other until a person unlocks it: otherwise a new session would
        be a way round the lock (seed 001: "block further action (human intervention required)"). Lock events
        are few and range-scanned by type; each candidate session's own view says whether it is still locked."""
        streams = {
            rec.stream for rec in self.kernel.store.iter_records(types=[AnchorLocked.type_name], agent=actor.agent)
        }
        for stream in sorted(streams):
            session_id = stream.removeprefix(session_proj.STREAM_PREFIX)
            _, _, view = self.grants.view(session_id)
            if view is not None and view.agent == actor.agent and view.anchor_locked:
                raise locks.agent_locked_out(actor.agent, session_id)

    def clock_out(self, actor: Actor, session_id: str) -> SessionInfo:
        def attempt() -> SessionInfo:
            session = self.grants.open(actor, session_id, while_locked=True)  # ending a locked session is allowed
            _, final = self.grants.append(actor, session, list(sessions.decide_clock_out(session.view)))
            return SessionInfo.of(final)

        return self.kernel.retrying(attempt)

    def session_state(
        self,
        session_id: str,
        *,
        as_of: _dt.datetime | None = None,
        position: int | None = None,
        viewer: Actor | None = None,
    ) -> SessionState:
        """The session and its token, now or as of a time or position (an agent key: only its own sessions)."""
        until = self.kernel.until(as_of, position)
        stream = sessions.stream_for(sessions.check_session_id(session_id))
        view = session_proj.fold(self.kernel.store.iter_events(0, until, stream=stream))
        if view is None:
            raise NotFound(f"session {session_id} does not exist (at that point)", "check the session id")
        if viewer is not None:
            access.require_session_reader(viewer, session_id, view.agent)
        moment = as_of or self.kernel.clock()
        return SessionState.at(view, moment, until if until is not None else self.kernel.store.head()[0])

    def search(self, actor: Actor, session_id: str, query: str, limit: int = 10) -> SearchResult:
        """Search memory; the search is recorded and issues the session's compliance token."""
        query = limits.check_query(query)
        limit = limits.check_limit(limit)

        def attempt() -> SearchResult:
            session = self.grants.open(actor, session_id)
            hits = self.kernel.index.search(query, limit)
            events = gate.decide_search(
                session.view,
                query=query,
                limit=limit,
                result_ids=[h.block_id for h in hits],
                now=self.kernel.clock(),
                ttl=self.token_ttl,
            )
            self.grants.append(actor, session, events)
            return SearchResult(
                results=[SearchHit.of(h) for h in hits],
                count=len(hits),
                session_id=session_id,
                token_expires_at=events[0].token_expires_at,
            )

        return self.kernel.retrying(attempt)

    def assert_compliance(self, actor: Actor, session_id: str, request_id: str | None = None) -> AssertResult:
        """PASS (consuming the token) with a stamp and receipt, or a recorded FAIL with guidance.

        With ``request_id`` a retry of a request the ledger already answered for this session (say the reply was
        lost) gets that same answer and receipt, read back from the ledger, and records nothing new.
        """
        request_id = gate.check_request_id(request_id)
        signer = self.kernel.require_signer()  # before deciding: a PASS must never be recorded without its receipt

        def attempt() -> AssertResult:
            session = self.grants.open(actor, session_id, while_locked=True)  # locked: a recorded FAIL
            answered = session.view.answers.get(request_id) if request_id is not None else None
            if answered is not None:
                stored = self.kernel.store.get(answered)
                if stored is None:  # the view says the log holds it; a log that no longer does is not trusted
                    raise Conflict(
                        f"the answer to request {request_id} at position {answered} is missing from the log",
                        "run `compliance-ledger verify`",
                    )
                return self._assert_result(decode(stored, self.kernel.store.cipher), signer, repeated=True)
            decision = gate.decide_assert(
                session.view,
                self.kernel.clock(),
                require_anchor=self.require_anchor,
                request_id=request_id,
            )
            [rec], _ = self.grants.append(actor, session, [decision])
            return self._assert_result(rec, signer)

        return self.kernel.retrying(attempt)

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
        problem = stamps.signature_problem(parsed, public=self.kernel.verifying_key(), hmac_key=self.kernel.key)
        if problem is not None:
            return StampVerification(valid=False, reason=problem, scheme=parsed.claims.scheme)
        try:
            record = self.kernel.store.get(parsed.claims.position)
        except IntegrityViolation as exc:  # the stamp's event was altered, or not written by this ledger
            return StampVerification(
                valid=False,
                reason=f"the log's event behind this stamp was altered or forged: {exc.message}",
                scheme=parsed.claims.scheme,
            )
        return stamps.check_record(record, parsed.claims)

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
        until = self.kernel.until(as_of, position)
        if until is None:
            position, agents = self._reports.current()
        else:
            _, agents = _compliance_rows(self._reports.replay_to(until))
            position = until
        rows = [AgentReport.of(a) for k, a in sorted(agents.items()) if not agent or k == agent]
        return ComplianceReport(position=position, as_of=as_of, agents=rows)

    def compliance_series(
        self,
        start: _dt.datetime,
        end: _dt.datetime,
        bucket: str = "hour",
        agent: str | None = None,
        viewer: Actor | None = None,
    ) -> series.ComplianceSeries:
        """The compliance report per hour or day over a window (see :mod:`ledger.sessions.series`), from the
        per-hour read model caught up with the log now."""
        series.check_window(start, end, bucket)  # bad input is refused before anything is read
        hourly = self._hourly.current()
        return series.compliance_series(self.kernel, hourly, start, end, bucket, agent, viewer)
