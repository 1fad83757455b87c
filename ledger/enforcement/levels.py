"""Enforcement levels and progressive enforcement (seed 004, section 4.2): how strictly a rule treats bad context
parameters, and how an agent's compliance history raises the level."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class EnforcementLevel(StrEnum):
    """How a rule treats missing or invalid context parameters."""

    DISABLED = "disabled"
    SOFT = "soft"  # record only
    WARNING = "warning"  # allow, with context_warning and suggestions
    STRICT = "strict"  # block


_RANK: Final = {EnforcementLevel.SOFT: 1, EnforcementLevel.WARNING: 2, EnforcementLevel.STRICT: 3}


@dataclass(frozen=True, slots=True)
class Progressive:
    """Seed 4.2 / 8.2: the level may rise to warning after ``warning_threshold`` checks, to strict after
    ``strict_threshold``."""

    enabled: bool = True
    warning_threshold: int = 3
    strict_threshold: int = 5


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
