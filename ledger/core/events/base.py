"""The base of the event vocabulary: :class:`DomainEvent` (a frozen pydantic model with a stable type name, a
payload version and its inventory of text, :class:`Texts`), the UTC :data:`Timestamp` its fields use, and
:class:`RecordedEvent`, an event as stored."""

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, PlainSerializer

from ledger.core.canonical import format_ts


def _aware_utc(moment: _dt.datetime) -> _dt.datetime:
    if moment.tzinfo is None:
        raise ValueError("timestamps must carry a UTC offset")
    return moment.astimezone(_dt.UTC)


Timestamp = Annotated[_dt.datetime, AfterValidator(_aware_utc), PlainSerializer(format_ts, when_used="json")]


@dataclass(frozen=True, slots=True)
class Texts:
    """An event class's inventory of text: every field that holds a string (alone, or inside a list or a dict,
    keys included) is named in exactly one of the three, which ``tests/unit/test_text_inventory.py`` checks.

    ``free``: text a caller wrote, or the ledger's words quoting it (memory content, queries, notes, reasons) —
    scanned for credentials at the append door, and what later encryption under the subject's key covers.
    ``labels``: short names of a checked form a caller chose (a role, a tag, a task id) — scanned too, but kept in
    the clear, since folds and gates read them. ``ledger``: ids, digests, vocabulary words and text the ledger made
    or read itself (a session id, a block id, a git branch the server read) — not scanned. ``ledger.core.free_text``
    walks them; docs/DESIGN_NOTES.md ("The inventory of text") says why each field is where it is."""

    free: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    ledger: tuple[str, ...] = ()


class DomainEvent(BaseModel):
    """Base of every fact in the ledger."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    type_name: ClassVar[str]
    schema_version: ClassVar[int] = 1
    texts: ClassVar[Texts] = Texts()


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """A typed event as the ledger recorded it: where, when, by whom, and its chain hash."""

    position: int
    stream: str
    version: int
    recorded_at: _dt.datetime
    meta: Mapping[str, Any]
    event: DomainEvent
    hash: str

    @property
    def agent(self) -> str | None:
        """The agent the event was recorded for, from the credential (never from a tool argument)."""
        value = self.meta.get("agent")
        return value if isinstance(value, str) else None
