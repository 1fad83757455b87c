"""The workflow table (checked from its parsed YAML), the pure transition decision (seed 003, Layer A) and which
tasks an agent key may read.

The decision never trusts a DNA value: the service verifies each required field against the ledger and hands
the verdicts in as :class:`Proof` objects; :func:`decide_transition` only combines table, task and proofs. The
file itself is read by :data:`ledger.workflow.table.TABLE` (``ledger.core.resources``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final
from urllib.parse import urlparse

from ledger.core.access import Caller, read_scope
from ledger.core.errors import Forbidden, InvalidInput
from ledger.core.events import TaskTransitioned, TaskTransitionRefused
from projections.tasks import TaskView

TERMINAL: Final = frozenset({"complete", "cancelled"})
RESTORE: Final = "restore"
MEMORY_QUERY_SESSION: Final = "memory_query_session"
MEMORY_CONTRIBUTION_ID: Final = "memory_contribution_id"
PDSA_REF: Final = "pdsa_ref"
MAX_TITLE_CHARS: Final = 200
MAX_DNA_BYTES: Final = 20_000
MAX_TASK_ID_CHARS: Final = 64
TASK_ID_PATTERN: Final = r"^[a-z0-9][a-z0-9._-]{0,63}$"  # also published in the MCP and REST schemas
_TASK_ID = re.compile(TASK_ID_PATTERN)
_RULE_FIELDS: Final = {"allowedActors", "requireRole", "newRole", "requiresDna", "clearsDna"}


class WorkflowError(ValueError):
    """The workflow table file is not valid."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the transition table."""

    key: str
    allowed_actors: tuple[str, ...]
    require_role: str | None = None
    new_role: str | None = None
    requires_dna: tuple[str, ...] = ()
    clears_dna: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workflow:
    """Statuses, roles and the transition table of each task type."""

    statuses: tuple[str, ...]
    claimable: tuple[str, ...]
    roles: tuple[str, ...]
    human_roles: tuple[str, ...]
    types: Mapping[str, Mapping[str, Rule]]
    source: str

    def rule_for(self, task_type: str, from_status: str, to_status: str, task_role: str) -> Rule | None:
        """The row for a task in ``task_role`` (the role the task is assigned to, never the caller's: seed 003's
        ``:role`` keys carry ``requireRole``), in the order ``from->to:role``, ``from->to``, ``any->to:role``,
        ``any->to``; ``blocked->restore`` for a restore. Who may act on the row is its ``allowedActors``."""
        table = self.types.get(task_type, {})
        target = RESTORE if from_status == "blocked" and to_status != "blocked" else to_status
        for key in (
            f"{from_status}->{target}:{task_role}",
            f"{from_status}->{target}",
            f"any->{target}:{task_role}",
            f"any->{target}",
        ):
            rule = table.get(key)
            if rule is not None:
                return rule
        return None


def parse_workflow(data: Any, source: str = "(inline)") -> Workflow:
    """Check a parsed workflow table (statuses, roles, types); errors name ``source`` and what is wrong."""

    def fail(message: str) -> WorkflowError:
        return WorkflowError(f"{source}: {message}")

    if not isinstance(data, dict):
        raise fail("the table must be a mapping with statuses, roles and types")
    statuses = _names(data.get("statuses"), "statuses", fail)
    roles = _names(data.get("roles"), "roles", fail)
    claimable = _names(data.get("claimable", []), "claimable", fail, allow_empty=True)
    human_roles = _names(data.get("human_roles", []), "human_roles", fail, allow_empty=True)
    for name in (*claimable,):
        if name not in statuses:
            raise fail(f"claimable status {name!r} is not among the statuses")
    for name in human_roles:
        if name not in roles:
            raise fail(f"human role {name!r} is not among the roles")
    types_raw = data.get("types")
    if not isinstance(types_raw, dict) or not types_raw:
        raise fail("types must map each task type to its transition table")
    types: dict[str, Mapping[str, Rule]] = {}
    for type_name, table in types_raw.items():
        if not isinstance(table, dict) or not table:
            raise fail(f"type {type_name!r} has no transitions")
        rules: dict[str, Rule] = {}
        for key, spec in table.items():
            rules[str(key)] = _rule(str(key), spec, statuses, roles, fail)
        types[str(type_name)] = MappingProxyType(rules)
    # read-only: the shipped table is parsed once and shared by every ledger of the process
    return Workflow(statuses, claimable, roles, human_roles, MappingProxyType(types), source)


def _names(value: Any, what: str, fail: Any, *, allow_empty: bool = False) -> tuple[str, ...]:
    if not isinstance(value, list) or (not value and not allow_empty) or not all(isinstance(v, str) for v in value):
        raise fail(f"{what} must be a list of names")
    return tuple(value)


def _rule(key: str, spec: Any, statuses: Sequence[str], roles: Sequence[str], fail: Any) -> Rule:
    match = re.fullmatch(r"([a-z_]+)->([a-z_]+)(?::([a-z_]+))?", key)
    if match is None:
        raise fail(f"transition key {key!r} is not 'from->to' or 'from->to:role'")
    source, target, role = match.groups()
    if source != "any" and source not in statuses:
        raise fail(f"{key}: {source!r} is not a status")
    if target != RESTORE and target not in statuses:
        raise fail(f"{key}: {target!r} is not a status")
    if target == RESTORE and source != "blocked":
        raise fail(f"{key}: only blocked->{RESTORE} restores")
    if not isinstance(spec, dict) or set(spec) - _RULE_FIELDS:
        raise fail(f"{key}: a rule is a mapping of {', '.join(sorted(_RULE_FIELDS))}")
    actors = tuple(spec.get("allowedActors") or ())
    if not actors:
        raise fail(f"{key}: allowedActors is empty")
    for name in (*actors, role, spec.get("requireRole"), spec.get("newRole")):
        if name is not None and name not in roles:
            raise fail(f"{key}: {name!r} is not a role")
    return Rule(
        key=key,
        allowed_actors=actors,
        require_role=spec.get("requireRole"),
        new_role=spec.get("newRole"),
        requires_dna=tuple(spec.get("requiresDna") or ()),
        clears_dna=tuple(spec.get("clearsDna") or ()),
    )


# --- input checks ---------------------------------------------------------------------------------------------


def check_task_id(task_id: str) -> str:
    if not isinstance(task_id, str) or not _TASK_ID.fullmatch(task_id):
        raise InvalidInput(
            f"task id {task_id!r} is not valid",
            "use a slug of lower-case letters, digits, '.', '_' or '-' (at most 64), e.g. 'memory-gate-42'",
        )
    return task_id


def check_title(title: str) -> str:
    if not isinstance(title, str) or not title.strip() or len(title) > MAX_TITLE_CHARS:
        raise InvalidInput(
            "title is empty or too long", f"send a one-line title of at most {MAX_TITLE_CHARS} characters"
        )
    return title.strip()


def check_dna(dna: Any) -> dict[str, Any]:
    """DNA is a JSON object with string keys; ``pdsa_ref`` must be a URL."""
    if not isinstance(dna, dict) or not all(isinstance(k, str) and k.strip() for k in dna):
        raise InvalidInput("dna is not a JSON object", 'send an object such as {"memory_query_session": "ses_…"}')

    try:
        size = len(json.dumps(dna, allow_nan=False))
    except ValueError as exc:
        raise InvalidInput(f"dna is not plain JSON: {exc}", "send strings, numbers, lists and objects only") from exc
    if size > MAX_DNA_BYTES:
        raise InvalidInput(f"dna is {size} bytes; the limit is {MAX_DNA_BYTES}", "store large documents elsewhere")
    if PDSA_REF in dna and dna[PDSA_REF] is not None and not is_url(dna[PDSA_REF]):
        raise InvalidInput(f"pdsa_ref {dna[PDSA_REF]!r} is not a URL", "send the http(s) address of the PDSA document")
    return dna


def is_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parsed = urlparse(value)
    return parsed.scheme in {"http", "https"} and bool(parsed.netloc) and " " not in value


# --- the decision ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Proof:
    """The ledger's verdict on one required DNA field: the proving event's position, or why it fails."""

    field: str
    position: int | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None


def target_status(task: TaskView, to_status: str) -> str:
    """``restore`` (or the status it was blocked from) resolves to the status a blocked task returns to."""
    if to_status == RESTORE:
        if task.status != "blocked" or task.blocked_from is None:
            return RESTORE
        return task.blocked_from
    return to_status


def decide_transition(
    workflow: Workflow,
    task: TaskView,
    to_status: str,
    acting_role: str,
    *,
    admin: bool,
    proofs: Mapping[str, Proof],
) -> TaskTransitioned | TaskTransitionRefused:
    """Apply the table: who may move the task where, with which DNA proven; refusals say what to do."""
    codes: list[str] = []
    reasons: list[str] = []
    target = target_status(task, to_status)

    def refuse(code: str, reason: str) -> None:
        codes.append(code)
        reasons.append(reason)

    rule = workflow.rule_for(task.task_type, task.status, target, task.role)
    if task.status in TERMINAL:
        refuse("terminal", f"the task is {task.status}; nothing leaves that status")
    elif target == RESTORE:
        refuse("not_blocked", "only a blocked task can be restored")
    elif target == task.status:
        refuse("same_status", f"the task is already {target}")
    elif task.status == "blocked" and target != task.blocked_from:
        refuse("restore_only", f"a blocked task returns to {task.blocked_from!r}: transition to 'restore'")
    elif rule is None:
        refuse(
            "not_in_table",
            f"{task.task_type} has no transition {task.status}->{target} for a task assigned to {task.role}; "
            f"allowed from {task.status}: {', '.join(allowed_from(workflow, task)) or 'none'}",
        )
    else:
        if acting_role not in rule.allowed_actors:
            refuse("actor_not_allowed", f"{rule.key} is for {', '.join(rule.allowed_actors)}, not {acting_role}")
        if acting_role in workflow.human_roles and not admin:
            refuse("human_only", f"the {acting_role} role is a person's: it needs an administrator's credential")
        if rule.require_role is not None and task.role != rule.require_role:
            refuse("role_mismatch", f"{rule.key} needs the task assigned to {rule.require_role}, not {task.role}")
        for name in rule.requires_dna:
            proof = proofs.get(name)
            if name not in task.dna or task.dna[name] in (None, ""):
                refuse("dna_missing", f"DNA field {name} is required: set it with task_update_dna first")
            elif proof is None or not proof.ok:
                refuse("dna_unverified", f"DNA {name}: {proof.reason if proof else 'could not be verified'}")
    if codes or rule is None:
        return TaskTransitionRefused(
            task_id=task.task_id,
            from_status=task.status,
            to_status=target,
            acting_role=acting_role,
            codes=codes,
            reasons=reasons,
        )
    return TaskTransitioned(
        task_id=task.task_id,
        from_status=task.status,
        to_status=target,
        acting_role=acting_role,
        rule=rule.key,
        role_before=task.role,
        role_after=rule.new_role or task.role,
        cleared_dna=[f for f in rule.clears_dna if f in task.dna],
        evidence={n: p.position for n, p in proofs.items() if p.ok and p.position is not None},
    )


def allowed_from(workflow: Workflow, task: TaskView) -> list[str]:
    """The transition keys that start at the task's status (or ``any``) and apply to its role, for guidance."""
    table = workflow.types.get(task.task_type, {})
    return sorted(
        k
        for k in table
        if (k.startswith(f"{task.status}->") or k.startswith("any->"))
        and (":" not in k or k.rsplit(":", 1)[1] == task.role)
    )


# --- who reads which task -------------------------------------------------------------------------------------


def task_visible(scope: str | None, task: TaskView) -> bool:
    """Whether an agent limited to ``scope`` (:func:`ledger.core.access.read_scope`) sees a task.

    It sees every task it created or acted on, and every task still open (not complete or cancelled): the
    workflow hands each open task to a role, and the acting role is the role of a session the agent opens, so
    any agent may be the one that claims, reviews or finishes it next. Closed tasks of others stay hidden.
    """
    return scope is None or scope in task.actors or task.status not in TERMINAL


def require_task_reader(caller: Caller, task: TaskView) -> None:
    if not task_visible(read_scope(caller), task):
        raise Forbidden(
            f"task {task.task_id} is {task.status} and another agent's",
            "an agent key reads open tasks and the tasks it created or acted on",
        )
