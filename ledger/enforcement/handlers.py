"""Managed tools with parameter enforcement (seed 004): every check is an event; levels are a fold of them.

``manage_task``, ``manage_context`` and ``manage_subtask`` first check their parameters against the rules
(``ledger.enforcement``) at the agent's progressive level — folded from the agent's own recorded checks on
its ``enforcement:<agent>`` stream, so levels survive restarts and replays — record the check, and then, if
allowed, do the work on the workflow's task streams. ``complete`` follows the workflow table.
"""

from __future__ import annotations

import datetime as _dt
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ledger.core.errors import InvalidInput, LedgerError
from ledger.core.events import ParameterChecked, TaskWorkRecorded
from ledger.enforcement import decisions as enf
from ledger.enforcement import limits
from ledger.enforcement.report import EnforcementReport, enforcement_report
from ledger.enforcement.trends import TrendUnit
from ledger.kernel import Actor, Kernel
from ledger.sessions.grants import SessionGrant, SessionGrants
from ledger.workflow import decisions as wf
from ledger.workflow.handlers import WorkflowCommands
from ledger.workflow.report import ManagedResult, TaskInfo
from projections import enforcement as enf_proj
from projections import tasks as task_proj

Stats = dict[tuple[str, str], enf_proj.AgentToolStats]
TOOLS = ("manage_task", "manage_context", "manage_subtask")


CheckObserver = Callable[[str, str, float], None]  # tool, action, seconds the check took


@dataclass(frozen=True)
class Check:
    """A recorded check: the decision, the validation behind it and the event's position."""

    decision: enf.Decision
    validation: enf.Validation | None
    base_level: enf.EnforcementLevel
    position: int


@dataclass
class EnforcementCommands:
    """Parameter enforcement on the managed task tools: every check recorded, then the task command it guards."""

    def __init__(self, kernel: Kernel, grants: SessionGrants, tasks: WorkflowCommands, rules: enf.RuleSet) -> None:
        """``rules``: the enforcement rules (``ledger.enforcement.rules``: the shipped file or an operator's)."""
        self.kernel = kernel
        self.grants = grants
        self.tasks = tasks
        self.rules = rules
        self._checks_cache: dict[str, tuple[int, Stats]] = {}
        self._checks_lock = threading.Lock()
        # told (tool, action, seconds) after each recorded check: how the /metrics histogram times them
        self.check_observers: list[CheckObserver] = []

    def report(
        self,
        agent: str | None = None,
        *,
        as_of: _dt.datetime | None = None,
        position: int | None = None,
        trend: TrendUnit = "day",
    ) -> EnforcementReport:
        """The enforcement report now, or replayed to a time or position; ``agent`` limits it to that agent;
        ``trend`` buckets its ``trending`` by hour or day."""
        return enforcement_report(self.kernel, self.rules, agent, as_of=as_of, position=position, trend=trend)

    def enforcement_stats(self, agent: str) -> Stats:
        """The agent's check stats per (tool, action), caught up with its stream."""
        return self._stats(agent)[1]

    def _stats(self, agent: str) -> tuple[int, Stats]:
        stream = enf_proj.STREAM_PREFIX + agent
        with self._checks_lock:
            version, stats = self._checks_cache.get(stream, (0, {}))
        state = self.kernel.store.load_stream(stream, version)
        stats = dict(stats)
        for rec in state.events:
            e = rec.event
            if isinstance(e, ParameterChecked):
                key = (e.tool, e.action)
                stats[key] = enf_proj.evolve(stats.get(key, enf_proj.AgentToolStats()), e.passed)
        with self._checks_lock:
            cached = self._checks_cache.get(stream)
            if cached is None or cached[0] < state.version:
                self._checks_cache[stream] = (state.version, stats)
        return state.version, stats

    def check_parameters(
        self, actor: Actor, tool: str, action: str, params: Mapping[str, Any], session_id: str | None = None
    ) -> Check:
        """Decide on a call's parameters at the agent's current level and record the check.

        The session, when one is sent, must be the caller's own open session (``SessionGrants.open``): a call in
        another agent's, an unknown or a closed session is refused before anything is recorded. A call over the
        hard size limits (``ledger.enforcement_limits``) is refused at every level, and its check records the
        sizes, never the values."""
        start = time.perf_counter()
        too_big = limits.oversized(params)
        rules = self.rules
        stream = enf_proj.STREAM_PREFIX + actor.agent

        def attempt() -> Check:
            began = time.perf_counter()
            session = self.grants.open_if(actor, session_id)
            rule = rules.rule_for(tool, action, actor.agent, self._rule_context(actor, tool, action, params, session))
            version, stats = self._stats(actor.agent)
            base = rule.level if rule is not None else enf.EnforcementLevel.DISABLED
            validation: enf.Validation | None = None
            error: str | None = None
            if too_big:
                current = stats.get((tool, action), enf_proj.AgentToolStats())
                level = (
                    enf.effective_level(rule.level, current.checks, current.passed, rules.progressive)
                    if rule is not None
                    else enf.EnforcementLevel.DISABLED
                )
                decision = enf.decide_oversized(tool, action, level, params, too_big)
            else:
                validation, decision, error = _decide(rule, rules, tool, action, params, stats)
            task_id = params.get("task_id")
            event = ParameterChecked(
                tool=tool,
                action=action,
                base_level=base.value,
                level=decision.level.value,
                outcome=decision.outcome,
                passed=decision.passed,
                allowed=decision.allow,
                missing=list(validation.missing_parameters) if validation else [],
                invalid={
                    k: limits.clip(v) for k, v in (validation.invalid_parameters if validation else too_big).items()
                },
                unknown=list(validation.unknown_parameters) if validation else [],
                task_id=task_id if isinstance(task_id, str) and len(task_id) <= limits.MAX_ID_CHARS else None,
                session_id=session.session_id if session is not None else None,
                error=limits.clip(error) if error else None,
                # validating and deciding, as the seed's record_validation times it (not the append itself)
                duration_ms=round((time.perf_counter() - began) * 1000, 3),
            )
            [rec] = self.kernel.append(actor, stream, version, [event], self.grants.meta(actor, session))
            return Check(decision, validation, base, rec.position)

        check = self.kernel.retrying(attempt)
        for observe in self.check_observers:
            observe(tool, action, time.perf_counter() - start)
        return check

    def _rule_context(
        self, actor: Actor, tool: str, action: str, params: Mapping[str, Any], session: SessionGrant | None
    ) -> dict[str, Any]:
        """What a rule's ``conditions`` may test (``ledger.enforcement.rules.CONTEXT_KEYS``), derived by the server:
        the agent and front end from the credential, the role from the session, the task's type from the ledger
        (for ``create``, the type asked for). Looked up only when some rule tests it."""
        context: dict[str, Any] = {"agent_id": actor.agent, "source": actor.source}
        context["role"] = session.view.role if session is not None else None
        rules = self.rules
        task_id = params.get("task_id")
        if rules.uses("task_type") and isinstance(task_id, str):
            if (tool, action) == ("manage_task", "create"):
                context["task_type"] = params.get("task_type") or "task"
            else:
                try:
                    context["task_type"] = self.tasks.task_view(task_id)[2].task_type
                except LedgerError:
                    context["task_type"] = None  # no such task: the check itself says what is wrong
        return context

    # --- the managed tools ----------------------------------------------------------------------------------------

    def manage_task(
        self, actor: Actor, action: str, params: Mapping[str, Any], session_id: str | None = None
    ) -> ManagedResult:
        """``create`` a task, report an ``update``, or ``complete`` it (a workflow transition to complete)."""
        params = self._screened(params)
        check = self.check_parameters(actor, "manage_task", action, params, session_id)
        if not check.decision.allow:
            return _blocked(check)
        data = _given(check, params)
        task_id = str(data["task_id"])
        if action == "create":
            task = self.tasks.task_create(
                actor,
                task_id,
                str(data.get("title", "")),
                task_type=str(data.get("task_type") or "task"),
                role=str(data.get("role") or "dev"),
                status=str(data.get("status") or "ready"),
                dna=data.get("dna") or {},
            )
            report = {k: v for k, v in data.items() if k in {"description"}}
            if report:
                task = self._record_work(actor, task_id, "manage_task", action, None, report)
            return _allowed(check, task)
        if action == "update":
            return _allowed(check, self._record_work(actor, task_id, "manage_task", action, None, _context(data)))
        if action == "complete":
            if session_id is None:
                raise InvalidInput(
                    "completing a task is a workflow transition and needs your session",
                    "send session_id (your session's role is the acting role)",
                )
            work = TaskWorkRecorded(task_id=task_id, tool="manage_task", action=action, params=_context(data))
            result = self.tasks.task_transition(actor, task_id, "complete", session_id, with_events=[work])
            if result.status == "refused":
                return _allowed(check, result.task, refused=result.reasons)
            return _allowed(check, result.task)
        raise InvalidInput(f"unknown action {action!r}", "send create, update or complete")

    def manage_context(
        self, actor: Actor, action: str, params: Mapping[str, Any], session_id: str | None = None
    ) -> ManagedResult:
        """``update`` the task's context, ``add_insight`` or ``add_progress``: recorded on the task."""
        params = self._screened(params)
        check = self.check_parameters(actor, "manage_context", action, params, session_id)
        if not check.decision.allow:
            return _blocked(check)
        data = _given(check, params)
        task_id = str(data["task_id"])
        if action == "update" and data.get("propagate_changes") is True:
            task, subtasks = self._propagate(actor, task_id, _context(data))
            return _allowed(check, task, propagated_to=subtasks)
        task = self._record_work(actor, task_id, "manage_context", action, None, _context(data))
        return _allowed(check, task)

    def _propagate(self, actor: Actor, task_id: str, params: Mapping[str, Any]) -> tuple[TaskInfo, list[str]]:
        """``manage_context(update, propagate_changes=true)``: the update recorded on the task and, in the same
        append, on each of its open subtasks (the tasks that depend on it; the workflow knows no other
        dependency). Returns the task and the subtasks it reached."""

        def attempt() -> tuple[TaskInfo, list[str]]:
            stream, version, view = self.tasks.task_view(task_id)
            if view.status in wf.TERMINAL:
                raise InvalidInput(f"task {task_id} is {view.status}", "report work on an open task")
            reached = sorted(sub for sub, status in view.subtasks.items() if status != "complete")
            events = [TaskWorkRecorded(task_id=task_id, tool="manage_context", action="update", params=dict(params))]
            events += [
                TaskWorkRecorded(
                    task_id=task_id, tool="manage_context", action="update", subtask_id=sub,
                    params={**params, "propagated_from": task_id},
                )
                for sub in reached
            ]  # fmt: skip
            recorded = self.kernel.append(actor, stream, version, events, self.kernel.meta(actor))
            after = view
            for rec in recorded:
                folded = task_proj.evolve(after, rec)
                assert folded is not None
                after = folded
            return self.tasks.info(after), reached

        return self.kernel.retrying(attempt)

    def manage_subtask(
        self, actor: Actor, action: str, params: Mapping[str, Any], session_id: str | None = None
    ) -> ManagedResult:
        """``create``, ``update`` or ``complete`` a subtask of a task."""
        params = self._screened(params)
        check = self.check_parameters(actor, "manage_subtask", action, params, session_id)
        if not check.decision.allow:
            return _blocked(check)
        data = _given(check, params)
        task_id, subtask_id = str(data["task_id"]), str(data["subtask_id"])
        _, _, view = self.tasks.task_view(task_id)
        exists = subtask_id in view.subtasks
        if action == "create" and exists:
            raise InvalidInput(f"subtask {subtask_id} of {task_id} already exists", "choose another subtask_id")
        if action != "create" and not exists:
            raise InvalidInput(f"task {task_id} has no subtask {subtask_id}", "create it first with action=create")
        if action == "complete" and view.subtasks[subtask_id] == "complete":
            raise InvalidInput(f"subtask {subtask_id} is already complete", "update another subtask")
        params_out = _context(data) | ({"title": data["title"]} if "title" in data else {})
        task = self._record_work(actor, task_id, "manage_subtask", action, subtask_id, params_out)
        return _allowed(check, task)

    def _screened(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """A managed call's arguments with credentials refused (or redacted) before its check is recorded, so a
        refusal appends nothing; an oversized call is refused by the check itself, which records sizes only."""
        return params if limits.oversized(params) else self.kernel.screen(params)

    def _record_work(
        self,
        actor: Actor,
        task_id: str,
        tool: str,
        action: str,
        subtask_id: str | None,
        params: Mapping[str, Any],
    ) -> TaskInfo:
        def attempt() -> TaskInfo:
            stream, version, view = self.tasks.task_view(task_id)
            if view.status in wf.TERMINAL:
                raise InvalidInput(f"task {task_id} is {view.status}", "report work on an open task")
            event = TaskWorkRecorded(
                task_id=task_id, tool=tool, action=action, subtask_id=subtask_id, params=dict(params)
            )
            [rec] = self.kernel.append(actor, stream, version, [event], self.kernel.meta(actor))
            after = task_proj.evolve(view, rec)
            assert after is not None
            return self.tasks.info(after)

        return self.kernel.retrying(attempt)


def _decide(
    rule: enf.Rule | None,
    rules: enf.RuleSet,
    tool: str,
    action: str,
    params: Mapping[str, Any],
    stats: Stats,
) -> tuple[enf.Validation | None, enf.Decision, str | None]:
    """Validate the parameters and decide at the agent's progressive level; an exception inside enforcement fails
    closed unless the rule says ``fail_open``."""
    try:
        validation = enf.validate(tool, action, dict(params), require=rule.required_params if rule else ())
        current = stats.get((tool, action), enf_proj.AgentToolStats())
        level = (
            enf.effective_level(rule.level, current.checks, current.passed, rules.progressive)
            if rule is not None
            else enf.EnforcementLevel.DISABLED
        )
        return validation, enf.decide(rule, level, validation), None
    except Exception as exc:  # enforcement itself failed: closed, unless the rule says fail_open
        error = f"{type(exc).__name__}: {exc}"
        return None, enf.decide_internal_error(rule, tool, action, dict(params), error), error


def _given(check: Check, params: Mapping[str, Any]) -> dict[str, Any]:
    """The cleaned parameters when they validated, else the caller's own (a soft or warning level let it by), less
    any its schema does not declare (only ``disabled`` lets such a call by, and nothing undeclared is recorded)."""
    if check.validation is not None and check.validation.success:
        return dict(check.validation.data)
    declared = enf.SCHEMAS.get(check.validation.tool if check.validation else "", {})
    fields = declared.get(check.validation.action if check.validation else "")
    given = {k: v for k, v in params.items() if k not in enf.ENVELOPE and (fields is None or k in fields.model_fields)}
    if not isinstance(given.get("task_id"), str):
        raise InvalidInput("task_id is missing", "send the id of the task, e.g. 'memory-gate-42'")
    return given


_CALL_FIELDS = frozenset({"task_id", "subtask_id", "title", "task_type", "role", "status", "dna"})


def _context(data: Mapping[str, Any]) -> dict[str, Any]:
    """The reported context parameters (identifying fields dropped), JSON-ready."""
    return {k: v for k, v in data.items() if k not in _CALL_FIELDS and v not in (None, [], {})}


def _blocked(check: Check) -> ManagedResult:
    response = check.decision.response
    assert response is not None
    return ManagedResult(**response.model_dump(), base_level=check.base_level.value, check_position=check.position)


def _allowed(
    check: Check, task: TaskInfo, refused: list[str] | None = None, propagated_to: list[str] | None = None
) -> ManagedResult:
    d = check.decision
    return ManagedResult(
        success=refused is None,
        error=None if refused is None else "the workflow refused the transition: " + "; ".join(refused),
        enforcement_level=d.level.value,
        base_level=check.base_level.value,
        context_warning=d.context_warning,
        warning_level=enf.WARNING_LEVEL if d.context_warning else None,
        suggestions=list(d.suggestions),
        propagated_to=propagated_to,
        task=task,
        check_position=check.position,
    )
