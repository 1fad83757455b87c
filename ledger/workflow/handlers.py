"""Workflow handlers: create tasks, update their DNA, move them through the gated table (seed 003, Layer A).

A DNA field is never taken at its word. ``memory_query_session`` must name a session of the acting agent with a
memory query recorded after the task entered its current status; ``memory_contribution_id`` must name a block
the acting agent contributed after the task last became active, and one the brain would store (a declarative
statement of more than 50 characters, ``ledger.brain.classify``) — "ok done" is not a contribution. The
handler reads those facts from the session and block streams, then decides with the pure table in
``ledger.workflow``; the decision — transition or refusal with its reasons — is appended to the task stream
with ``expected_version``, so of two actors racing the same transition exactly one wins. If the store cannot be
read the command fails: no transition.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.brain import decisions as brain
from ledger.core import access
from ledger.core.errors import ConcurrencyError, Conflict, InvalidInput, NotFound
from ledger.core.events import (
    DomainEvent,
    MemoryRecalled,
    MemoryRemembered,
    MemorySearched,
    SessionStarted,
    TaskCreated,
    TaskDnaUpdated,
    TaskTransitioned,
)
from ledger.kernel import Actor, Kernel
from ledger.memory import decisions as memory
from ledger.sessions import decisions as sessions
from ledger.sessions.grants import SessionGrants
from ledger.workflow import decisions as wf
from ledger.workflow.report import TaskInfo, TransitionResult, WorkReport
from projections import tasks as task_proj
from projections.tasks import TaskView

TASK_EVENT_TYPES = ("TaskCreated", "TaskDnaUpdated", "TaskTransitioned", "TaskTransitionRefused", "TaskWorkRecorded")


def stream_for(task_id: str) -> str:
    return f"{task_proj.STREAM_PREFIX}{task_id}"


@dataclass
class WorkflowCommands:
    """Gated workflow tasks: create, read, update DNA and transition, each transition proven from the log."""

    def __init__(self, kernel: Kernel, grants: SessionGrants, workflow: wf.Workflow) -> None:
        """``workflow``: the transition table (``ledger.workflow.table``: the shipped one or an operator's)."""
        self.kernel = kernel
        self.grants = grants
        self.workflow = workflow

    # --- reads ------------------------------------------------------------------------------------------------

    def task_view(self, task_id: str) -> tuple[str, int, TaskView]:
        stream = stream_for(wf.check_task_id(task_id))
        state = self.kernel.store.load_stream(stream)
        view = task_proj.fold(state.events)
        if view is None:
            raise NotFound(f"task {task_id} does not exist", "create it with task_create, or list tasks")
        return stream, state.version, view

    def info(self, view: TaskView) -> TaskInfo:
        return TaskInfo(
            task_id=view.task_id,
            task_type=view.task_type,
            title=view.title,
            status=view.status,
            role=view.role,
            dna=dict(view.dna),
            created_at=view.created_at,
            created_by=view.created_by,
            updated_at=view.updated_at,
            blocked_from=view.blocked_from,
            transitions=view.transitions,
            refusals=view.refusals,
            position=view.position,
            next=wf.allowed_from(self.workflow, view),
            work=[WorkReport.model_validate(w, from_attributes=True) for w in view.work],
            subtasks=dict(view.subtasks),
        )

    def task_get(
        self,
        task_id: str,
        *,
        as_of: _dt.datetime | None = None,
        position: int | None = None,
        viewer: Actor | None = None,
    ) -> TaskInfo:
        """A task now, or as of a moment or position (an agent key: see :func:`.decisions.task_visible`)."""
        until = self.kernel.until(as_of, position)
        stream = stream_for(wf.check_task_id(task_id))
        view = task_proj.fold(self.kernel.store.iter_events(0, until, stream=stream))
        if view is None:
            raise NotFound(f"task {task_id} does not exist (at that point)", "check the task id")
        if viewer is not None:
            wf.require_task_reader(viewer, view)
        return self.info(view)

    def task_list(
        self,
        *,
        status: str | None = None,
        role: str | None = None,
        task_type: str | None = None,
        viewer: Actor | None = None,
    ) -> list[TaskInfo]:
        """Every task (filtered), oldest first; an agent key sees open tasks and those it created or acted on."""
        scope = access.read_scope(viewer) if viewer is not None else None
        views: dict[str, TaskView | None] = {}
        for rec in self.kernel.store.iter_events(types=list(TASK_EVENT_TYPES)):
            key = task_proj.task_key(rec)
            if key is not None:
                views[key] = task_proj.evolve(views.get(key), rec)
        return [
            self.info(v)
            for v in views.values()
            if v is not None
            and (status is None or v.status == status)
            and (role is None or v.role == role)
            and (task_type is None or v.task_type == task_type)
            and wf.task_visible(scope, v)
        ]

    # --- commands ---------------------------------------------------------------------------------------------

    def task_create(
        self,
        actor: Actor,
        task_id: str,
        title: str,
        *,
        task_type: str = "task",
        role: str = "dev",
        status: str = "ready",
        dna: Mapping[str, Any] | None = None,
    ) -> TaskInfo:
        """Create a task in a status (default ``ready``), assigned to a role."""
        flow = self.workflow
        task_id = wf.check_task_id(task_id)
        title = wf.check_title(title)
        if task_type not in flow.types:
            raise InvalidInput(
                f"task type {task_type!r} is not in the workflow", f"send one of {', '.join(flow.types)}"
            )
        if role not in flow.roles:
            raise InvalidInput(f"role {role!r} is not in the workflow", f"send one of {', '.join(flow.roles)}")
        if status not in flow.statuses or status in wf.TERMINAL or status == "blocked":
            open_statuses = [s for s in flow.statuses if s not in wf.TERMINAL and s != "blocked"]
            raise InvalidInput(f"a task cannot start as {status!r}", f"send one of {', '.join(open_statuses)}")
        clean = wf.check_dna(dict(dna or {}))
        event = TaskCreated(task_id=task_id, task_type=task_type, title=title, status=status, role=role, dna=clean)
        stream = stream_for(task_id)
        if self.kernel.store.load_stream(stream).version:
            raise Conflict(f"task {task_id} already exists", "choose another id, or use task_get")
        try:
            [rec] = self.kernel.append(actor, stream, 0, [event], self.kernel.meta(actor))
        except ConcurrencyError as exc:  # created by someone else at the same moment
            raise Conflict(f"task {task_id} already exists", "choose another id, or use task_get") from exc
        view = task_proj.evolve(None, rec)
        assert view is not None
        return self.info(view)

    def task_update_dna(
        self,
        actor: Actor,
        task_id: str,
        set_fields: Mapping[str, Any] | None = None,
        remove: Sequence[str] = (),
    ) -> TaskInfo:
        """Set and/or remove DNA fields (recorded; verified only when a transition needs them)."""
        changes = wf.check_dna(dict(set_fields or {}))
        if not isinstance(remove, list | tuple) or not all(isinstance(r, str) for r in remove):
            raise InvalidInput("remove is not a list of field names", 'send e.g. ["blocked_reason"]')
        if not changes and not remove:
            raise InvalidInput("nothing to change", 'send fields to set, e.g. {"memory_query_session": "ses_…"}')

        def attempt() -> TaskInfo:
            stream, version, view = self.task_view(task_id)
            event = TaskDnaUpdated(task_id=view.task_id, set=changes, removed=[r for r in remove if r in view.dna])
            [rec] = self.kernel.append(actor, stream, version, [event], self.kernel.meta(actor))
            after = task_proj.evolve(view, rec)
            assert after is not None
            return self.info(after)

        return self.kernel.retrying(attempt)

    def task_transition(
        self,
        actor: Actor,
        task_id: str,
        to_status: str,
        session_id: str,
        *,
        with_events: Sequence[DomainEvent] = (),
    ) -> TransitionResult:
        """Move a task under the table, acting in the role of the caller's session; a refusal is recorded too.

        ``with_events`` are appended with the transition, atomically, only when it is made (e.g. the completion
        report of ``manage_task(action="complete")``)."""
        flow = self.workflow
        if not isinstance(to_status, str) or (to_status not in flow.statuses and to_status != wf.RESTORE):
            raise InvalidInput(
                f"status {to_status!r} is not in the workflow",
                f"send one of {', '.join((*flow.statuses, wf.RESTORE))}",
            )

        def attempt() -> TransitionResult:
            session = self.grants.open(actor, session_id)
            role = session.view.role
            stream, version, task = self.task_view(task_id)
            target = wf.target_status(task, to_status)
            rule = flow.rule_for(task.task_type, task.status, target, task.role)
            proofs = {
                name: self._prove(name, task.dna[name], task, actor.agent)
                for name in (rule.requires_dna if rule else ())
                if task.dna.get(name) not in (None, "")
            }
            event = wf.decide_transition(flow, task, to_status, role, admin=actor.admin, proofs=proofs)
            events = [event, *with_events] if isinstance(event, TaskTransitioned) else [event]
            recorded = self.kernel.append(actor, stream, version, events, self.grants.meta(actor, session))
            rec = recorded[0]
            after: TaskView | None = task
            for r in recorded:
                after = task_proj.evolve(after, r)
            assert after is not None
            if isinstance(event, TaskTransitioned):
                return TransitionResult(
                    status="transitioned",
                    task=self.info(after),
                    from_status=event.from_status,
                    to_status=event.to_status,
                    acting_role=event.acting_role,
                    rule=event.rule,
                    evidence=event.evidence,
                    cleared_dna=event.cleared_dna,
                    position=rec.position,
                )
            return TransitionResult(
                status="refused",
                task=self.info(after),
                from_status=event.from_status,
                to_status=event.to_status,
                acting_role=event.acting_role,
                codes=event.codes,
                reasons=event.reasons,
                position=rec.position,
            )

        return self.kernel.retrying(attempt)

    # --- DNA evidence -------------------------------------------------------------------------------------------

    def _prove(self, name: str, value: Any, task: TaskView, agent: str) -> wf.Proof:
        if name == wf.MEMORY_QUERY_SESSION:
            return self._prove_query(value, agent, task.entered_position(task.status), task.status)
        if name == wf.MEMORY_CONTRIBUTION_ID:
            return self._prove_contribution(value, agent, task.entered_position("active"))
        if name == wf.PDSA_REF and not wf.is_url(value):
            return wf.Proof(name, reason=f"{value!r} is not a URL; send the http(s) address of the PDSA document")
        return wf.Proof(name)

    def _prove_query(self, value: Any, agent: str, since: int, status: str) -> wf.Proof:
        name = wf.MEMORY_QUERY_SESSION
        try:
            session_id = sessions.check_session_id(value)
        except InvalidInput:
            return wf.Proof(name, reason=f"{value!r} is not a session id: send the session_id of your memory query")
        events = self.kernel.store.load_stream(sessions.stream_for(session_id)).events
        if not events or not isinstance(events[0].event, SessionStarted):
            return wf.Proof(name, reason=f"{session_id} names no session in this ledger")
        if events[0].event.agent != agent:
            return wf.Proof(name, reason=f"{session_id} is another agent's session: query memory in your own")
        for rec in events:
            e = rec.event
            queried = isinstance(e, MemorySearched) or (isinstance(e, MemoryRecalled) and e.query is not None)
            if queried and rec.position > since:
                return wf.Proof(name, position=rec.position)
        return wf.Proof(
            name,
            reason=f"session {session_id} has no memory query since the task entered {status} (position {since}): "
            "query memory again (memory_search, memory_recall with a query, or query_brain) and send that session",
        )

    def _prove_contribution(self, value: Any, agent: str, since: int) -> wf.Proof:
        name = wf.MEMORY_CONTRIBUTION_ID
        if not isinstance(value, str) or not value.startswith("blk_"):
            return wf.Proof(name, reason=f"{value!r} is not a block id: send the id your contribution returned")
        events = self.kernel.store.load_stream(memory.stream_for(value)).events
        first = events[0] if events else None
        if first is None or not isinstance(first.event, MemoryRemembered):
            return wf.Proof(name, reason=f"{value} names no memory block in this ledger")
        if first.agent != agent:
            return wf.Proof(name, reason=f"{value} was contributed by another agent: contribute what you learned")
        if first.position <= since:
            return wf.Proof(
                name,
                reason=f"{value} was contributed before the task became active (position {first.position} ≤ "
                f"{since}): contribute what you learned in this task",
            )
        kind = brain.classify(first.event.content)
        if not kind.is_contribution:
            return wf.Proof(
                name,
                reason=f"{value} is not a contribution the brain would store ({kind.reason}): contribute what you "
                f"learned as one declarative statement of more than {brain.MIN_CONTRIBUTION_CHARS} characters "
                "(contribute_to_brain, or memory_remember) and set memory_contribution_id to its block id",
            )
        return wf.Proof(name, position=first.position)
