"""The base of the event vocabulary: :class:`DomainEvent` (a frozen pydantic model with a stable type name and a
payload version), the UTC :data:`Timestamp` its fields use, and :class:`RecordedEvent`, an event as stored."""

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


class DomainEvent(BaseModel):
    """Base of every fact in the ledger."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    type_name: ClassVar[str]
    schema_version: ClassVar[int] = 1


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
