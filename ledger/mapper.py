"""The one mapper between typed events and stored records (STYLE 3: the event is not its database row)."""

import functools
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ledger.canonical import canonical_json, parse_ts, require_utf8
from ledger.chain import StoredRecord
from ledger.events import DomainEvent, RecordedEvent, from_payload_json, to_payload
from ledger.text import require_clean


def encode(event: DomainEvent) -> tuple[str, int, str]:
    """Return ``(type, schema_version, canonical data JSON)`` for a typed event."""
    payload = to_payload(event)
    data_json = _storable(canonical_json(payload), payload, event.type_name)
    return event.type_name, event.schema_version, data_json


def _storable(text: str, value: Any, what: str) -> str:
    """The backstop behind every edge: no event holding a NUL or a lone surrogate is ever appended.

    Canonical JSON escapes NUL as ``\\u0000`` and writes surrogates raw, so clean text (nearly always) costs one
    substring search and one encode; otherwise the walker names the field.
    """
    if "\\u0000" in text or not _encodes(text):
        require_clean(value, what)
    return require_utf8(text, what)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def encode_meta(meta: dict[str, Any]) -> str:
    """Canonical JSON of an event's metadata (actor, session, source, correlation ids)."""
    return _encode_meta(tuple(sorted(meta.items())))


@functools.lru_cache(maxsize=4096)
def _encode_meta(items: tuple[tuple[str, Any], ...]) -> str:
    # Metadata repeats for every event of a session, so its canonical text is cached.
    meta = dict(items)
    return _storable(canonical_json(meta), meta, "meta")


@functools.lru_cache(maxsize=4096)
def _meta(meta_json: str) -> Mapping[str, Any]:
    """Parsed metadata, shared read-only: a session's events all carry the same meta text."""
    return MappingProxyType(json.loads(meta_json))


def decode(record: StoredRecord) -> RecordedEvent:
    """Turn a stored record back into a typed event, upcasting old payload versions."""
    return RecordedEvent(
        position=record.position,
        stream=record.stream,
        version=record.version,
        recorded_at=parse_ts(record.recorded_at),
        meta=_meta(record.meta_json),
        event=from_payload_json(record.type, record.schema_version, record.data_json),
        hash=record.hash,
    )
