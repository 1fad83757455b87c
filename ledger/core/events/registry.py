"""The vocabulary by stable type name, the upcasters that lift stored payloads to the current schema version,
and the payload conversions the mapper uses."""

import json
from collections.abc import Callable, Mapping
from typing import Any

from ledger.core.events.anchor import (
    AnchorAttempted,
    AnchorChallengeIssued,
    AnchorLocked,
    AnchorRefused,
    AnchorUnlocked,
)
from ledger.core.events.base import DomainEvent
from ledger.core.events.enforcement import ParameterChecked, TaskWorkRecorded
from ledger.core.events.hooks import StopHookDecided, TurnStarted
from ledger.core.events.keys import (
    ApiKeyIssued,
    ApiKeyRevoked,
    LedgerCarried,
    LedgerInitialised,
    RowKeyBound,
    SigningKeyBound,
)
from ledger.core.events.memory import (
    ContradictionFlagged,
    MemoryArchived,
    MemoryCurated,
    MemoryDuplicateRejected,
    MemoryErased,
    MemoryForgotten,
    MemoryLinked,
    MemoryOutcomeRecorded,
    MemoryRecalled,
    MemoryRemembered,
    MemoryRestored,
    MemorySearched,
    MemorySuperseded,
)
from ledger.core.events.sessions import (
    ComplianceRefused,
    ComplianceStamped,
    SessionEnded,
    SessionErased,
    SessionStarted,
)
from ledger.core.events.settings import SettingsApplied
from ledger.core.events.workflow import TaskCreated, TaskDnaUpdated, TaskTransitioned, TaskTransitionRefused

VOCABULARY: tuple[type[DomainEvent], ...] = (
    LedgerInitialised,
    SigningKeyBound,
    RowKeyBound,
    SettingsApplied,
    LedgerCarried,
    ApiKeyIssued,
    ApiKeyRevoked,
    SessionStarted,
    SessionEnded,
    SessionErased,
    MemoryRemembered,
    MemoryDuplicateRejected,
    MemorySearched,
    MemoryRecalled,
    MemoryCurated,
    MemoryOutcomeRecorded,
    MemorySuperseded,
    MemoryForgotten,
    MemoryErased,
    MemoryArchived,
    MemoryRestored,
    MemoryLinked,
    ContradictionFlagged,
    ComplianceStamped,
    ComplianceRefused,
    AnchorChallengeIssued,
    AnchorAttempted,
    AnchorLocked,
    AnchorRefused,
    AnchorUnlocked,
    TaskCreated,
    TaskDnaUpdated,
    TaskTransitioned,
    TaskTransitionRefused,
    ParameterChecked,
    TaskWorkRecorded,
    TurnStarted,
    StopHookDecided,
)
EVENT_TYPES: dict[str, type[DomainEvent]] = {cls.type_name: cls for cls in VOCABULARY}


# --- upcasting --------------------------------------------------------------------------------------------

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


def _memory_remembered_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    raw = data.get("tags") or ""
    tags = [t.strip() for t in raw.split(",") if t.strip()] if isinstance(raw, str) else list(raw)
    return {**data, "tags": tags}


def _memory_remembered_v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "category": data.get("category") or "knowledge"}


def _memory_remembered_v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "context": None}  # blocks before v4 recorded no provenance


def _api_key_issued_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    lifted = {k: v for k, v in data.items() if k != "admin"}
    return {**lifted, "role": "admin" if data.get("admin") else "agent"}


def _request_id_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "request_id": None}  # requests before v2 carried no id


def _anchor_attempted_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "challenge_id": None}  # attempts before v2 answered no challenge


def _parameter_checked_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "duration_ms": None}  # checks before v2 were not timed


def _memory_recalled_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "relevant_ids": None}  # recalls before v2 counted every block shown as relevant


# (type name, stored version) -> function that lifts the payload to version + 1.
UPCASTERS: Mapping[tuple[str, int], Upcaster] = {
    ("MemoryRemembered", 1): _memory_remembered_v1_to_v2,
    ("MemoryRemembered", 2): _memory_remembered_v2_to_v3,
    ("MemoryRemembered", 3): _memory_remembered_v3_to_v4,
    ("ApiKeyIssued", 1): _api_key_issued_v1_to_v2,
    ("ComplianceStamped", 1): _request_id_v1_to_v2,
    ("ComplianceRefused", 1): _request_id_v1_to_v2,
    ("AnchorAttempted", 1): _anchor_attempted_v1_to_v2,
    ("ParameterChecked", 1): _parameter_checked_v1_to_v2,
    ("MemoryRecalled", 1): _memory_recalled_v1_to_v2,
}


class UnknownEventType(ValueError):
    """A stored event names a type this code does not know."""


def to_payload(event: DomainEvent) -> dict[str, Any]:
    """Return the JSON-ready payload of ``event`` at its current schema version."""
    return event.model_dump(mode="json")


def from_payload(type_name: str, schema_version: int, data: dict[str, Any]) -> DomainEvent:
    """Upcast a stored payload to the current version of its type and validate it."""
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        raise UnknownEventType(f"unknown event type {type_name!r}")
    version = schema_version
    if version < 1:
        raise UnknownEventType(f"{type_name} has an invalid schema version {schema_version}")
    while version < cls.schema_version:
        data = UPCASTERS[(type_name, version)](data)
        version += 1
    if version != cls.schema_version:
        raise UnknownEventType(f"{type_name} v{schema_version} is newer than this code (v{cls.schema_version})")
    return cls.model_validate(data)


def from_payload_json(type_name: str, schema_version: int, data_json: str) -> DomainEvent:
    """Like :func:`from_payload` for stored JSON text; current-version payloads skip the dict step."""
    cls = EVENT_TYPES.get(type_name)
    if cls is not None and schema_version == cls.schema_version:
        return cls.model_validate_json(data_json)
    return from_payload(type_name, schema_version, json.loads(data_json))
