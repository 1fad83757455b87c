"""The event vocabulary: explicit, frozen, past-tense facts with stable type names and versioned payloads.

Each event class names what happened. ``type_name`` is the stable name stored in the ``events`` table (never a
module path) and ``schema_version`` the payload version. Payloads stored under an older version are upcast on
read by the chained functions in ``UPCASTERS``. This package imports nothing of the project but the canonical
timestamp format.

The base classes are in :mod:`.base`, one module a capability holds its events (:mod:`.keys`, :mod:`.sessions`,
:mod:`.memory`, :mod:`.anchor`, :mod:`.workflow`, :mod:`.enforcement`, :mod:`.hooks`, and :mod:`.settings` the
ledger's decision settings), and :mod:`.registry` names them all and upcasts; everything is importable from here.
"""

from ledger.core.events.anchor import (
    AnchorAttempted,
    AnchorChallengeIssued,
    AnchorLocked,
    AnchorRefused,
    AnchorUnlocked,
)
from ledger.core.events.base import DomainEvent, RecordedEvent, Texts, Timestamp
from ledger.core.events.enforcement import ParameterChecked, TaskWorkRecorded
from ledger.core.events.hooks import StopHookDecided, StopOutcome, TurnStarted
from ledger.core.events.keys import (
    ApiKeyIssued,
    ApiKeyRevoked,
    KeyRole,
    LedgerCarried,
    LedgerInitialised,
    RowKeyBound,
    SigningKeyBound,
)
from ledger.core.events.memory import (
    ContradictionFlagged,
    Frame,
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
from ledger.core.events.registry import (
    EVENT_TYPES,
    UPCASTERS,
    VOCABULARY,
    UnknownEventType,
    Upcaster,
    from_payload,
    from_payload_json,
    to_payload,
)
from ledger.core.events.sessions import (
    ComplianceRefused,
    ComplianceStamped,
    RefusalReason,
    SessionEnded,
    SessionErased,
    SessionStarted,
)
from ledger.core.events.settings import SettingsApplied
from ledger.core.events.workflow import TaskCreated, TaskDnaUpdated, TaskTransitioned, TaskTransitionRefused

__all__ = [
    "EVENT_TYPES",
    "UPCASTERS",
    "VOCABULARY",
    "AnchorAttempted",
    "AnchorChallengeIssued",
    "AnchorLocked",
    "AnchorRefused",
    "AnchorUnlocked",
    "ApiKeyIssued",
    "ApiKeyRevoked",
    "ComplianceRefused",
    "ComplianceStamped",
    "ContradictionFlagged",
    "DomainEvent",
    "Frame",
    "KeyRole",
    "LedgerCarried",
    "LedgerInitialised",
    "MemoryArchived",
    "MemoryCurated",
    "MemoryDuplicateRejected",
    "MemoryErased",
    "MemoryForgotten",
    "MemoryLinked",
    "MemoryOutcomeRecorded",
    "MemoryRecalled",
    "MemoryRemembered",
    "MemoryRestored",
    "MemorySearched",
    "MemorySuperseded",
    "ParameterChecked",
    "RecordedEvent",
    "RefusalReason",
    "RowKeyBound",
    "SessionEnded",
    "SessionErased",
    "SessionStarted",
    "SettingsApplied",
    "SigningKeyBound",
    "StopHookDecided",
    "StopOutcome",
    "TaskCreated",
    "TaskDnaUpdated",
    "TaskTransitionRefused",
    "TaskTransitioned",
    "TaskWorkRecorded",
    "Texts",
    "Timestamp",
    "TurnStarted",
    "UnknownEventType",
    "Upcaster",
    "from_payload",
    "from_payload_json",
    "to_payload",
]
