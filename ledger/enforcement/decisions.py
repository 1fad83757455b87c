"""Parameter enforcement (seed 004): schemas, placeholder checks, rules, progressive levels and decisions.

The pure core. No store, clock, MCP or metrics; the only I/O is reading the YAML rules file. The service
records every check as an event, folds :class:`AgentToolStats` per (agent, tool, action) from those events,
and asks :func:`decide` what to do with each call:

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
* **Rollout**: an agent's bucket is ``sha256(agent) mod 100``; agents outside the percentage get
  ``disabled`` (the seed defines no fallback level). A per-agent ``level`` overrides every rule's level.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal

import yaml
from pydantic import BaseModel, ConfigDict

from ledger.enforcement import limits

# The schema side, re-exported: callers use one module.
from ledger.enforcement.schemas import (
    DOCS as DOCS,
)
from ledger.enforcement.schemas import (
    ENVELOPE as ENVELOPE,
)
from ledger.enforcement.schemas import (
    EXAMPLES as EXAMPLES,
)
from ledger.enforcement.schemas import (
    MAX_JSON_BYTES as MAX_JSON_BYTES,
)
from ledger.enforcement.schemas import (
    MAX_KEYS as MAX_KEYS,
)
from ledger.enforcement.schemas import (
    MAX_PATH_CHARS as MAX_PATH_CHARS,
)
from ledger.enforcement.schemas import (
    MAX_PATHS as MAX_PATHS,
)
from ledger.enforcement.schemas import (
    PARAM_HINTS as PARAM_HINTS,
)
from ledger.enforcement.schemas import (
    SCHEMAS as SCHEMAS,
)
from ledger.enforcement.schemas import (
    TEMPLATES as TEMPLATES,
)
from ledger.enforcement.schemas import (
    CompletionParams as CompletionParams,
)
from ledger.enforcement.schemas import (
    ContextParams as ContextParams,
)
from ledger.enforcement.schemas import (
    ContextUpdateParams as ContextUpdateParams,
)
from ledger.enforcement.schemas import (
    InsightParams as InsightParams,
)
from ledger.enforcement.schemas import (
    ProgressParams as ProgressParams,
)
from ledger.enforcement.schemas import (
    SubtaskCompletionParams as SubtaskCompletionParams,
)
from ledger.enforcement.schemas import (
    SubtaskCreateParams as SubtaskCreateParams,
)
from ledger.enforcement.schemas import (
    SubtaskUpdateParams as SubtaskUpdateParams,
)
from ledger.enforcement.schemas import (
    TaskCreateParams as TaskCreateParams,
)
from ledger.enforcement.schemas import (
    Validation as Validation,
)
from ledger.enforcement.schemas import (
    WorkUpdateParams as WorkUpdateParams,
)
from ledger.enforcement.schemas import (
    context_fields as context_fields,
)
from ledger.enforcement.schemas import (
    correction_for as correction_for,
)
from ledger.enforcement.schemas import (
    documentation as documentation,
)
from ledger.enforcement.schemas import (
    example as example,
)
from ledger.enforcement.schemas import (
    param_hint as param_hint,
)
from ledger.enforcement.schemas import (
    placeholder_problem as placeholder_problem,
)
from ledger.enforcement.schemas import (
    suggested_correction as suggested_correction,
)
from ledger.enforcement.schemas import (
    validate as validate,
)
from projections.enforcement import AgentToolStats as AgentToolStats
from projections.enforcement import evolve as evolve

DEFAULT_RULES: Final = "enforcement_rules.yaml"


class EnforcementLevel(StrEnum):
    """How a rule treats missing or invalid context parameters."""

    DISABLED = "disabled"
    SOFT = "soft"  # record only
    WARNING = "warning"  # allow, with context_warning and suggestions
    STRICT = "strict"  # block


_RANK: Final = {EnforcementLevel.SOFT: 1, EnforcementLevel.WARNING: 2, EnforcementLevel.STRICT: 3}


# --- rules (seed 4.1, 8.2) ------------------------------------------------------------------------------------


class EnforcementConfigError(ValueError):
    """The enforcement rules file is not valid; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class Rule:
    """How one tool/action is enforced. ``required_params`` = the schema's required context parameters plus
    those the file adds; ``origin`` says where ``level`` came from for this agent."""

    tool: str
    action: str
    level: EnforcementLevel
    required_params: tuple[str, ...]
    optional_params: tuple[str, ...]
    fail_open: bool = False
    origin: str = "rule"


@dataclass(frozen=True, slots=True)
class Progressive:
    """Seed 4.2 / 8.2: the level may rise to warning after ``warning_threshold`` checks, to strict after
    ``strict_threshold``."""

    enabled: bool = True
    warning_threshold: int = 3
    strict_threshold: int = 5


@dataclass(frozen=True, slots=True)
class AgentRollout:
    """A per-agent flag of the rollout: ``enabled`` and an optional level for every rule."""

    enabled: bool
    level: EnforcementLevel | None = None


@dataclass(frozen=True)
class Rollout:
    """Which agents are enforced: the listed ones as flagged, the rest by bucket < ``percentage``."""

    percentage: int = 100
    agents: Mapping[str, AgentRollout] = field(default_factory=dict)


def rollout_bucket(agent: str) -> int:
    """The agent's stable rollout bucket, 0–99."""
    return int.from_bytes(hashlib.sha256(agent.encode("utf-8", "surrogatepass")).digest()[:8], "big") % 100


@dataclass(frozen=True)
class RuleSet:
    """The loaded rules file."""

    enabled: bool
    default_level: EnforcementLevel
    progressive: Progressive
    rollout: Rollout
    rules: Mapping[tuple[str, str], Rule]
    source: str

    def rule_for(self, tool: str, action: str, agent: str) -> Rule | None:
        """The rule for this agent after the global switch and the rollout; None for an unknown tool/action."""
        rule = self.rules.get((tool, action))
        if rule is None:
            return None
        if not self.enabled:
            return replace(rule, level=EnforcementLevel.DISABLED, origin="enforcement disabled")
        flag = self.rollout.agents.get(agent)
        if flag is not None:
            if not flag.enabled:
                return replace(rule, level=EnforcementLevel.DISABLED, origin="agent disabled")
            return rule if flag.level is None else replace(rule, level=flag.level, origin="agent level")
        if rollout_bucket(agent) >= self.rollout.percentage:
            return replace(rule, level=EnforcementLevel.DISABLED, origin="outside rollout")
        return rule

    def level_for(self, tool: str, action: str, agent: str, stats: AgentToolStats) -> EnforcementLevel:
        """The effective level for the agent's next call (``disabled`` for an unknown tool/action)."""
        rule = self.rule_for(tool, action, agent)
        if rule is None:
            return EnforcementLevel.DISABLED
        return effective_level(rule.level, stats.checks, stats.passed, self.progressive)


def load_rules(path: str | Path | None = None) -> RuleSet:
    """Load and check a rules file (the shipped ``ledger/enforcement/enforcement_rules.yaml`` when ``path`` is None)."""
    if path is None:
        text = resources.files("ledger.enforcement").joinpath(DEFAULT_RULES).read_text(encoding="utf-8")
        source = f"(default) ledger/enforcement/{DEFAULT_RULES}"
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise EnforcementConfigError(f"cannot read the enforcement rules {path}: {exc}") from exc
        source = str(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise EnforcementConfigError(f"{source} is not valid YAML: {exc}") from exc
    return parse_rules(data, source)


def parse_rules(data: Any, source: str = "(inline)") -> RuleSet:
    """Check the parsed YAML (seed 8.2's shape) and build the rule set; errors name ``source`` and the key."""

    def fail(key: str, message: str) -> EnforcementConfigError:
        return EnforcementConfigError(f"{source}: {key}: {message}")

    def mapping(value: Any, key: str, allowed: Iterable[str]) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise fail(key, "must be a mapping")
        if extra := sorted(str(k) for k in value if k not in allowed):
            raise fail(f"{key}.{extra[0]}" if key else extra[0], f"unknown key; allowed: {', '.join(allowed)}")
        return value

    def flag(value: Any, key: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise fail(key, f"must be true or false, not {value!r}")
        return value

    def level(value: Any, key: str) -> EnforcementLevel:
        try:
            return EnforcementLevel(value)
        except ValueError:
            raise fail(key, f"{value!r} is not one of {', '.join(lv.value for lv in EnforcementLevel)}") from None

    def count(value: Any, key: str, default: int, high: int | None = None) -> int:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0 or (high is not None and value > high):
            raise fail(key, f"must be an integer from 0{f' to {high}' if high is not None else ''}, not {value!r}")
        return value

    if not isinstance(data, dict) or "enforcement" not in data:
        raise fail("enforcement", "the file must be a mapping with an 'enforcement' section")
    mapping(data, "", ["enforcement"])
    root = mapping(data["enforcement"], "enforcement", ["enabled", "default_level", "progressive", "tools", "rollout"])
    default_level = level(root.get("default_level", "warning"), "enforcement.default_level")

    prog = mapping(
        root.get("progressive"), "enforcement.progressive", ["enabled", "warning_threshold", "strict_threshold"]
    )
    progressive = Progressive(
        enabled=flag(prog.get("enabled"), "enforcement.progressive.enabled", True),
        warning_threshold=count(prog.get("warning_threshold"), "enforcement.progressive.warning_threshold", 3),
        strict_threshold=count(prog.get("strict_threshold"), "enforcement.progressive.strict_threshold", 5),
    )
    if progressive.strict_threshold < progressive.warning_threshold:
        raise fail("enforcement.progressive.strict_threshold", "must not be below warning_threshold")

    tools = mapping(root.get("tools"), "enforcement.tools", SCHEMAS)
    rules: dict[tuple[str, str], Rule] = {}
    for tool, actions in SCHEMAS.items():
        configured = mapping(tools.get(tool), f"enforcement.tools.{tool}", actions)
        for action in actions:
            key = f"enforcement.tools.{tool}.{action}"
            spec = mapping(configured.get(action), key, ["level", "required_params", "fail_open"])
            required, optional = context_fields(tool, action)
            extra = spec.get("required_params") or []
            if not isinstance(extra, list) or not all(isinstance(p, str) for p in extra):
                raise fail(f"{key}.required_params", "must be a list of parameter names")
            for name in extra:
                if name not in (*required, *optional):
                    known = ", ".join((*required, *optional))
                    raise fail(f"{key}.required_params", f"{name!r} is not a context parameter (known: {known})")
            rules[(tool, action)] = Rule(
                tool=tool,
                action=action,
                level=level(spec.get("level", default_level), f"{key}.level"),
                required_params=tuple(p for p in (*required, *optional) if p in required or p in extra),
                optional_params=tuple(p for p in optional if p not in extra),
                fail_open=flag(spec.get("fail_open"), f"{key}.fail_open", False),
                origin="rule" if "level" in spec else "default_level",
            )

    roll = mapping(root.get("rollout"), "enforcement.rollout", ["strategy", "percentage", "agents"])
    if roll.get("strategy", "percentage") != "percentage":
        raise fail("enforcement.rollout.strategy", f"{roll.get('strategy')!r} is not 'percentage'")
    agents: dict[str, AgentRollout] = {}
    raw_agents = roll.get("agents") or {}
    if not isinstance(raw_agents, dict):
        raise fail("enforcement.rollout.agents", "must map agent names to {enabled, level}")
    for name, raw in raw_agents.items():
        key = f"enforcement.rollout.agents.{name}"
        agent = mapping(raw, key, ["enabled", "level"])
        agent_level = agent.get("level")
        agents[str(name)] = AgentRollout(
            enabled=flag(agent.get("enabled"), f"{key}.enabled", True),
            level=None if agent_level is None else level(agent_level, f"{key}.level"),
        )
    return RuleSet(
        enabled=flag(root.get("enabled"), "enforcement.enabled", True),
        default_level=default_level,
        progressive=progressive,
        rollout=Rollout(count(roll.get("percentage"), "enforcement.rollout.percentage", 100, 100), agents),
        rules=rules,
        source=source,
    )


# --- progressive enforcement (seed 4.2) -----------------------------------------------------------------------

DEFAULT_PROGRESSIVE: Final = Progressive()


def raise_level(level: EnforcementLevel) -> EnforcementLevel:
    """One level stricter: soft → warning → strict; strict and disabled stay."""
    order = (EnforcementLevel.SOFT, EnforcementLevel.WARNING, EnforcementLevel.STRICT)
    return order[min(order.index(level) + 1, 2)] if level in order else level


def effective_level(
    base: EnforcementLevel, checks: int, passed: int, progressive: Progressive = DEFAULT_PROGRESSIVE
) -> EnforcementLevel:
    """Seed 4.2: compliance above 0.9 keeps ``base``, above 0.7 raises it one level, else strict.

    No checks → ``base``; ``disabled`` stays disabled; the level never falls below ``base`` and rises to warning
    only after ``warning_threshold`` checks, to strict only after ``strict_threshold``.
    """
    if not 0 <= passed <= checks:
        raise ValueError(f"passed ({passed}) must be between 0 and checks ({checks})")
    if base is EnforcementLevel.DISABLED or not progressive.enabled or checks < max(progressive.warning_threshold, 1):
        return base
    target: EnforcementLevel = base  # rate > 0.9, compared exactly in integers
    if passed * 10 <= checks * 7:
        target = EnforcementLevel.STRICT
    elif passed * 10 <= checks * 9:
        target = raise_level(base)
    if checks < progressive.strict_threshold and target is EnforcementLevel.STRICT:
        target = max(base, EnforcementLevel.WARNING, key=_RANK.__getitem__)
    return max(base, target, key=_RANK.__getitem__)


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
        warning = f"{name} was allowed without the context it needs ({validation.error}); strict enforcement blocks it"
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
