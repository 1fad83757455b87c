"""Parameter enforcement (seed 004): the decision on each call, and the one module callers use for the rest.

The pure core, with the schemas (:mod:`.schemas`, :mod:`.fields`), validation (:mod:`.validation`,
:mod:`.guidance`), rules (:mod:`.rules`) and levels (:mod:`.levels`) re-exported here. No store, clock, MCP,
metrics or file (the rules file is read by :data:`.rules.RULES_FILE`). The service records every check as an
event, folds :class:`AgentToolStats` per (agent, tool, action) from those events, and asks :func:`decide` what to
do with each call:

    rule = rules.rule_for(tool, action, agent)
    validation = validate(tool, action, params, require=rule.required_params if rule else ())
    level = effective_level(rule.level, stats.checks, stats.passed, rules.progressive) if rule else DISABLED
    decision = decide(rule, level, validation)          # record Decision.passed, then evolve(stats, ...)

Choices where the seed is silent (documented in docs/ENFORCEMENT.md):

* **Call fields vs context fields.** Every schema carries the identifying fields its tool needs (``task_id``,
  ``subtask_id``, ``title`` and ``task_create``'s options): its ``CALL_FIELDS``. The remaining fields are the
  *context parameters* the rules govern. Problems with call fields, an unknown parameter or a wrong ``action``
  block the call at every level except ``disabled`` (the call could not run anyway); problems with context
  parameters are recorded (soft), warned about (warning) or blocked (strict).
* **Schemas the seed names but does not define**: ``TaskCreateParams`` and ``SubtaskCreateParams`` need a
  ``description``; ``ContextUpdateParams`` needs ``data`` (seed 4.1) with optional ``propagate_changes``;
  ``InsightParams`` needs ``insight`` (with ``category`` and ``importance``); ``ProgressParams`` needs
  ``progress_made`` (with ``next_steps``, ``percent_complete``); the subtask update/completion schemas are
  the task ones plus ``subtask_id`` (subtask ids are scoped by their parent ``task_id``). ``blockers`` (seed
  4.1's optional parameter of ``manage_task.update``) is a list of short texts, so "no blockers" is ``[]``.
* **Text quality**: every free text is checked for placeholders (seed 5.2, applied to all texts, not only
  ``work_notes``) and needs at least three words; ``completion_summary`` five words (3.1), at least two
  sentences and an accomplishment verb (5.2; sentences also end at line breaks, and the seed's six verbs are
  extended by obvious equivalents such as "refactored"). Null or blank values count as not given.
* **File paths**: relative, no ``..`` *segment* (``a..b.py`` is fine), no leading ``/`` or ``~``, no drive
  letter or URL, no control character; backslashes become ``/`` and ``./`` segments are dropped (5.2).
* **Progressive enforcement** (4.2) uses the whole history, as the seed does (no sliding window), and reads
  the seed's ``warning_threshold`` / ``strict_threshold`` (8.2) as the number of recorded checks before the
  level may rise to warning / strict; with no checks the base level holds.
* **Conditions** (seed 4.1's ``applies_to``): a rule's ``conditions`` may test only facts the server derives —
  ``agent_id``, ``source``, ``role`` (the session's), ``task_type`` (the task's) — never a tool argument; when no
  conditioned rule applies, the tool/action's unconditional rule (else ``default_level``) does.
* **Rollout**: an agent's bucket is ``sha256(agent) mod 100``; agents outside the percentage get
  ``disabled`` (the seed defines no fallback level). A per-agent ``level`` overrides every rule's level.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from ledger.enforcement import limits
from ledger.enforcement.fields import MAX_JSON_BYTES, MAX_KEYS, MAX_PATH_CHARS, MAX_PATHS, placeholder_problem
from ledger.enforcement.guidance import EXAMPLES, PARAM_HINTS, TEMPLATES, documentation, example, param_hint
from ledger.enforcement.levels import DEFAULT_PROGRESSIVE, EnforcementLevel, Progressive, effective_level, raise_level
from ledger.enforcement.rules import (
    DEFAULT_RULES,
    AgentRollout,
    EnforcementConfigError,
    Rollout,
    Rule,
    RuleSet,
    parse_rules,
    rollout_bucket,
)
from ledger.enforcement.schemas import (
    DOCS,
    ENVELOPE,
    SCHEMAS,
    CompletionParams,
    ContextParams,
    ContextUpdateParams,
    InsightParams,
    ProgressParams,
    SubtaskCompletionParams,
    SubtaskCreateParams,
    SubtaskUpdateParams,
    TaskCreateParams,
    WorkUpdateParams,
    context_fields,
)
from ledger.enforcement.validation import Validation, correction_for, suggested_correction, validate
from projections.enforcement import AgentToolStats, evolve

# The schema, validation, rules and levels side, re-exported: callers use one module.
__all__ = [
    "DEFAULT_PROGRESSIVE",
    "DEFAULT_RULES",
    "DOCS",
    "ENVELOPE",
    "EXAMPLES",
    "MAX_JSON_BYTES",
    "MAX_KEYS",
    "MAX_PATHS",
    "MAX_PATH_CHARS",
    "PARAM_HINTS",
    "SCHEMAS",
    "TEMPLATES",
    "WARNING_LEVEL",
    "AgentRollout",
    "AgentToolStats",
    "CompletionParams",
    "ContextParams",
    "ContextUpdateParams",
    "Decision",
    "EnforcementConfigError",
    "EnforcementLevel",
    "EnforcementResponse",
    "InsightParams",
    "Outcome",
    "ProgressParams",
    "Progressive",
    "Rollout",
    "Rule",
    "RuleSet",
    "SubtaskCompletionParams",
    "SubtaskCreateParams",
    "SubtaskUpdateParams",
    "TaskCreateParams",
    "Validation",
    "WorkUpdateParams",
    "context_fields",
    "correction_for",
    "decide",
    "decide_internal_error",
    "decide_oversized",
    "documentation",
    "effective_level",
    "evolve",
    "example",
    "param_hint",
    "parse_rules",
    "placeholder_problem",
    "raise_level",
    "rollout_bucket",
    "suggested_correction",
    "validate",
]


WARNING_LEVEL: Final = "medium"  # seed 6.2's build_warning_response: the warning_level of an allowed call's warning


# --- the decision (seed 2.2, 6.2) -----------------------------------------------------------------------------


class EnforcementResponse(BaseModel):
    """The answer to a blocked call (seed 6.2)."""

    model_config = ConfigDict(frozen=True)

    success: Literal[False] = False
    error: str
    enforcement_level: EnforcementLevel
    missing_parameters: list[str]
    invalid_parameters: dict[str, str]
    hint: str
    example: dict[str, Any]
    suggested_correction: dict[str, Any]
    documentation: str


Outcome = Literal["passed", "disabled", "recorded", "warned", "blocked", "invalid_call", "bypassed", "oversized"]


@dataclass(frozen=True)
class Decision:
    """What to do with a call. ``passed`` (the parameters were valid) is what the compliance stats fold;
    ``response`` is set exactly when ``allow`` is false."""

    allow: bool
    level: EnforcementLevel
    outcome: Outcome
    passed: bool
    context_warning: str | None = None
    suggestions: tuple[str, ...] = ()
    response: EnforcementResponse | None = None


def _blocked(validation: Validation, level: EnforcementLevel, error: str) -> EnforcementResponse:
    return EnforcementResponse(
        error=error,
        enforcement_level=level,
        missing_parameters=list(validation.missing_parameters),
        invalid_parameters=dict(validation.invalid_parameters),
        hint=validation.hint,
        example=example(validation.tool, validation.action),
        suggested_correction=correction_for(validation),
        documentation=documentation(validation.tool, validation.action),
    )


def decide(rule: Rule | None, level: EnforcementLevel, validation: Validation) -> Decision:
    """Allow, record, warn or block (seed 2.2). ``disabled`` allows everything (the tool checks its own input);
    otherwise a call that cannot run (unknown tool/action or parameter, bad call field) is blocked at any level,
    and bad context parameters are recorded (soft), warned about (warning) or blocked (strict)."""
    if rule is not None and (rule.tool, rule.action) != (validation.tool, validation.action):
        raise ValueError(f"rule {rule.tool}.{rule.action} does not match {validation.tool}.{validation.action}")
    passed = validation.success
    name = f"{validation.tool}.{validation.action}"
    if level is EnforcementLevel.DISABLED:
        return Decision(True, level, "disabled", passed)
    if passed:
        return Decision(True, level, "passed", True)
    if not validation.call_ok:
        return Decision(False, level, "invalid_call", False, response=_blocked(validation, level, validation.error))
    if level is EnforcementLevel.SOFT:
        return Decision(True, level, "recorded", False)
    if level is EnforcementLevel.WARNING:
        said = "; ".join(validation.invalid_parameters.values())  # the checks' own words (seed 5.2's texts)
        what = f"{validation.error} — {said}" if said else validation.error
        warning = f"{name} was allowed without the context it needs ({what}); strict enforcement blocks it"
        lines = tuple(f"{p}: {param_hint(p)}" for p in (*validation.missing_parameters, *validation.invalid_parameters))
        return Decision(True, level, "warned", False, context_warning=warning, suggestions=lines)
    error = f"{name} blocked by strict parameter enforcement: {validation.error}"
    return Decision(False, level, "blocked", False, response=_blocked(validation, level, error))


def decide_internal_error(rule: Rule | None, tool: str, action: str, params: Any, error: str) -> Decision:
    """Enforcement itself failed: block (fail closed) unless the rule says ``fail_open``, in which case the call
    is allowed and ``outcome="bypassed"`` must be recorded."""
    given = dict(params) if isinstance(params, Mapping) else {}
    validation = Validation(tool, action, given, known=action in SCHEMAS.get(tool, {}), error=error)
    level = rule.level if rule is not None else EnforcementLevel.STRICT
    if rule is not None and rule.fail_open:
        warning = f"parameter enforcement failed ({error}); allowed because the rule is fail_open, and recorded"
        return Decision(True, level, "bypassed", False, context_warning=warning)
    message = f"parameter enforcement failed ({error}); the call is blocked (fail closed)"
    return Decision(False, level, "blocked", False, response=_blocked(validation, level, message))


def decide_oversized(
    tool: str, action: str, level: EnforcementLevel, params: Any, problems: Mapping[str, str]
) -> Decision:
    """A call over the hard size limits (``ledger.enforcement_limits.oversized``): refused at every level, even
    ``disabled`` — levels decide about quality, never about size. The answer names each limit and what to send
    instead, and its correction marks the oversized parameters instead of echoing them."""
    given = dict(params) if isinstance(params, Mapping) else {}
    known = action in SCHEMAS.get(tool, {})
    error = f"{tool}.{action} refused: {', '.join(problems)} over the hard size limits that apply at every level"
    validation = Validation(
        tool, action, given, known=known, error=error, invalid_parameters=dict(problems),
        call_errors=tuple(problems), hint=limits.hint(problems),
    )  # fmt: skip
    correction = correction_for(validation) if known else {"action": f"<invalid: action — {error}>"}
    response = _blocked(validation, level, error).model_copy(
        update={"suggested_correction": correction, "documentation": f"{DOCS}#hard-size-limits-every-level"}
    )
    return Decision(False, level, "oversized", False, response=response)
