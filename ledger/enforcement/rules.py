"""The enforcement rules file (seed 004, sections 4.1 and 8.2): read by the one resource loader (:data:`RULES_FILE`)
and checked into a :class:`RuleSet` that gives each agent its rule for a tool and action, after the global switch
and the rollout."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from ledger.core.resources import YamlFile
from ledger.enforcement.levels import EnforcementLevel, Progressive, effective_level
from ledger.enforcement.schemas import SCHEMAS, context_fields
from projections.enforcement import AgentToolStats

DEFAULT_RULES: Final = "enforcement_rules.yaml"
# What a rule's ``conditions`` may test (seed 4.1's ``applies_to(context)``): facts the server derives itself —
# the credential's agent, the front end, the session's workflow role, the task's type — never a tool argument.
CONTEXT_KEYS: Final = ("agent_id", "source", "role", "task_type")


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
    conditions: Mapping[str, Any] | None = None

    def applies_to(self, context: Mapping[str, Any]) -> bool:
        """Seed 4.1: the rule applies when every condition equals the context's value (no conditions: always)."""
        if not self.conditions:
            return True
        return all(context.get(key) == value for key, value in self.conditions.items())


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
    conditional: Mapping[tuple[str, str], tuple[Rule, ...]] = field(default_factory=dict)

    def uses(self, key: str) -> bool:
        """Whether any rule's conditions test ``key`` of the context (so the caller knows what to look up)."""
        return any(key in (r.conditions or {}) for rules in self.conditional.values() for r in rules)

    def rule_for(self, tool: str, action: str, agent: str, context: Mapping[str, Any] | None = None) -> Rule | None:
        """The rule for this agent after the global switch and the rollout; None for an unknown tool/action.

        Seed 4.1's ``get_rule``: the first rule listed for the tool/action whose ``conditions`` the context meets
        (``agent_id`` is always the agent's), else the tool/action's unconditional rule."""
        rule = self.rules.get((tool, action))
        if rule is None:
            return None
        where = {"agent_id": agent, **(context or {})}
        rule = next((r for r in self.conditional.get((tool, action), ()) if r.applies_to(where)), rule)
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
    """Load and check a rules file (the shipped ``ledger/enforcement/enforcement_rules.yaml`` when ``path`` is None,
    parsed once per process)."""
    return RULES_FILE.load(path)


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

    def conditions(value: Any, key: str) -> Mapping[str, Any] | None:
        found = mapping(value, key, CONTEXT_KEYS)
        for name, wanted in found.items():
            if wanted is not None and not isinstance(wanted, str | bool | int):
                raise fail(
                    f"{key}.{name}", f"must be a single value (a string, number, true/false or null), not {wanted!r}"
                )
        return MappingProxyType(dict(found)) if found else None

    def rule(tool: str, action: str, raw: Any, key: str) -> Rule:
        spec = mapping(raw, key, ["level", "required_params", "fail_open", "conditions"])
        required, optional = context_fields(tool, action)
        extra = spec.get("required_params") or []
        if not isinstance(extra, list) or not all(isinstance(p, str) for p in extra):
            raise fail(f"{key}.required_params", "must be a list of parameter names")
        for name in extra:
            if name not in (*required, *optional):
                known = ", ".join((*required, *optional))
                raise fail(f"{key}.required_params", f"{name!r} is not a context parameter (known: {known})")
        return Rule(
            tool=tool,
            action=action,
            level=level(spec.get("level", default_level), f"{key}.level"),
            required_params=tuple(p for p in (*required, *optional) if p in required or p in extra),
            optional_params=tuple(p for p in optional if p not in extra),
            fail_open=flag(spec.get("fail_open"), f"{key}.fail_open", False),
            origin="rule" if "level" in spec else "default_level",
            conditions=conditions(spec.get("conditions"), f"{key}.conditions"),
        )

    tools = mapping(root.get("tools"), "enforcement.tools", SCHEMAS)
    rules: dict[tuple[str, str], Rule] = {}
    conditional: dict[tuple[str, str], tuple[Rule, ...]] = {}
    for tool, actions in SCHEMAS.items():
        configured = mapping(tools.get(tool), f"enforcement.tools.{tool}", actions)
        for action in actions:
            key = f"enforcement.tools.{tool}.{action}"
            raw = configured.get(action)
            listed = [rule(tool, action, r, f"{key}[{i}]") for i, r in enumerate(raw)] if isinstance(raw, list) else []
            if not isinstance(raw, list):
                listed = [rule(tool, action, raw, key)]
            plain = [i for i, r in enumerate(listed) if r.conditions is None]
            if plain and plain[0] != len(listed) - 1:
                raise fail(
                    f"{key}[{plain[0]}]",
                    "a rule without conditions must come last (the rules after it could never apply)",
                )
            # Nothing unconditional listed: the tool/action's fallback is default_level, like an unlisted one.
            rules[(tool, action)] = listed[-1] if plain else rule(tool, action, None, key)
            conditional[(tool, action)] = tuple(r for r in listed if r.conditions is not None)

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
    # read-only: the shipped rules are parsed once and shared by every ledger of the process
    return RuleSet(
        enabled=flag(root.get("enabled"), "enforcement.enabled", True),
        default_level=default_level,
        progressive=progressive,
        rollout=Rollout(
            count(roll.get("percentage"), "enforcement.rollout.percentage", 100, 100), MappingProxyType(agents)
        ),
        rules=MappingProxyType(rules),
        source=source,
        conditional=MappingProxyType({k: v for k, v in conditional.items() if v}),
    )


RULES_FILE: Final = YamlFile(
    "ledger.enforcement", DEFAULT_RULES, "the enforcement rules", parse_rules, EnforcementConfigError
)
