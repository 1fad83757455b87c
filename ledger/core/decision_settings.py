"""The settings that change a decision, as one set a ledger records and every node compares its own with.

Which settings are in the set, and why, is said in one place: :func:`ledger.compose.decision_settings`. This module
is the pure part: their canonical form and digest, what differs between two sets and how to say it to a person.
A setting's value is plain JSON (a boolean, a number, a string, a list of strings, ``null``); a file's is
``{"sha256": ..., "text": ...}``, its exact text (so ``settings show`` can hand the file back) and the digest of it.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger.core.canonical import canonical_json

_ABSENT = object()


def file_value(text: str) -> dict[str, str]:
    """A file setting's value: its exact text and the SHA-256 of its UTF-8 bytes."""
    return {"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "text": text}


def is_file(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"sha256", "text"}


def digest_of(values: Mapping[str, Any]) -> str:
    """The digest of a set of settings: SHA-256 of their canonical JSON (names sorted)."""
    return hashlib.sha256(canonical_json(dict(values)).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class DecisionSettings:
    """One node's decision settings: ``values`` by name (what is compared and recorded), ``sources`` (where each
    file was read: a path or ``(default)``; said, never compared) and ``env`` (the variable that sets each, for
    messages)."""

    values: Mapping[str, Any]
    sources: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        return digest_of(self.values)


def render(value: Any) -> str:
    """A plain value as a person reads it (``true``, ``30.0``, ``["/srv"]``); a file as its short digest."""
    if value is _ABSENT:
        return "(none)"
    if is_file(value):
        return f"sha256:{value['sha256'][:16]}"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class Difference:
    """One setting whose value in the ledger (``recorded``) is not this node's (``local``)."""

    name: str
    recorded: Any
    local: Any
    env: str | None = None
    source: str | None = None

    def said(self) -> str:
        """``require_anchor (LEDGER_REQUIRE_ANCHOR): the ledger's true, this node's false``; a file's by digest and
        where this node read it."""
        where = f" ({self.env})" if self.env else ""
        local = render(self.local) + (f" from {self.source}" if self.source and is_file(self.local) else "")
        return f"{self.name}{where}: the ledger's {render(self.recorded)}, this node's {local}"

    def text_diff(self) -> list[str]:
        """For a file: a unified diff of the ledger's text against this node's (empty for other settings)."""
        if not (is_file(self.recorded) and is_file(self.local)):
            return []
        return list(
            difflib.unified_diff(
                self.recorded["text"].splitlines(),
                self.local["text"].splitlines(),
                f"{self.name} (the ledger's)",
                f"{self.name} (this node's{', ' + self.source if self.source else ''})",
                lineterm="",
            )
        )


def differences(recorded: Mapping[str, Any], local: DecisionSettings) -> list[Difference]:
    """Every setting whose recorded value is not the local one, in the local set's order (a setting the ledger
    records that this program no longer has comes last)."""
    names = [*local.values, *(name for name in recorded if name not in local.values)]
    return [
        Difference(
            name,
            recorded.get(name, _ABSENT),
            local.values.get(name, _ABSENT),
            local.env.get(name),
            local.sources.get(name),
        )
        for name in names
        if recorded.get(name, _ABSENT) != local.values.get(name, _ABSENT)
    ]
