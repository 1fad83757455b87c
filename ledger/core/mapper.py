"""The one mapper between typed events and stored records (STYLE 3: the event is not its database row)."""

from __future__ import annotations

import datetime as _dt
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, get_args, get_origin

from ledger.core import free_text, sealed
from ledger.core.canonical import canonical_json, parse_ts, require_utf8
from ledger.core.chain import StoredRecord
from ledger.core.events import EVENT_TYPES, DomainEvent, RecordedEvent, from_payload, from_payload_json, to_payload
from ledger.core.text import require_clean

if TYPE_CHECKING:
    from ledger.core.data_keys import DataKeys
    from ledger.core.sealed import NewKey


def encode(event: DomainEvent) -> tuple[str, int, str]:
    """Return ``(type, schema_version, canonical data JSON)`` for a typed event."""
    payload = to_payload(event)
    data_json = _storable(canonical_json(payload), payload, event.type_name)
    return event.type_name, event.schema_version, data_json


def encode_all(
    events: Sequence[DomainEvent],
    stream: str,
    cipher: DataKeys | None,
    made: list[NewKey] | None = None,
    *,
    fresh: bool = False,
) -> tuple[list[tuple[str, int, str]], bool]:
    """:func:`encode` for each event of an append to ``stream``, its free text encrypted under the stream's data key
    when there is a key service (:mod:`ledger.core.data_keys`); also whether anything was (the metadata says so). A
    data key made for the append is added to ``made``, for the append to write in its transaction; ``fresh``: the
    stream is new (appended at version 0), so it has no key yet."""
    if cipher is None:
        return [encode(e) for e in events], False
    encoded: list[tuple[str, int, str]] = []
    sealed = False
    for event in events:
        free = free_text.fields_of(type(event), ("free",))
        if not free:
            encoded.append(encode(event))
            continue
        payload = to_payload(event)
        _storable(canonical_json(payload), payload, event.type_name)  # the clean-text backstop, on the clear text
        sealed = cipher.seal(stream, event.type_name, payload, free, made, fresh=fresh) or sealed
        encoded.append((event.type_name, event.schema_version, canonical_json(payload)))
    return encoded, sealed


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


def decode(record: StoredRecord, cipher: DataKeys | None = None) -> RecordedEvent:
    """Turn a stored record back into a typed event, upcasting old payload versions (and decrypting its free text
    through ``cipher``)."""
    return decode_row(
        record.position,
        record.stream,
        record.version,
        record.type,
        record.schema_version,
        record.data_json,
        record.meta_json,
        record.recorded_at,
        record.prev_hash,
        record.hash,
        cipher=cipher,
    )


ROW_COLUMNS = "position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash"
"""The columns :func:`decode_row` takes, in its order: a stored record's (every hashed column and the hash, so a
read can check the row against its hash)."""


def decode_row(
    position: int,
    stream: str,
    version: int,
    type_name: str,
    schema_version: int,
    data_json: str,
    meta_json: str,
    recorded_at: str,
    prev_hash: str,
    hash: str,
    _checked: object = None,
    *,
    cipher: DataKeys | None = None,
) -> RecordedEvent:
    """:func:`decode` from the columns of a row (:data:`ROW_COLUMNS`), for reads that need no record;
    ``_checked``: a last column the read already checked (the row's authenticator), ignored. An event whose
    metadata says its free text is encrypted is decrypted through ``cipher``; a field whose key is gone (erased,
    or no key service) reads as an empty value of its kind, and the record's metadata gets ``"erased": true``."""
    meta = _meta(meta_json)
    if "enc" in meta:
        event, erased = _open(stream, type_name, schema_version, data_json, cipher)
        if erased:
            meta = MappingProxyType({**meta, "erased": True})
    else:
        validate = _CURRENT.get((type_name, schema_version))
        event = validate(data_json) if validate is not None else from_payload_json(type_name, schema_version, data_json)
    # RecordedEvent(...) without the frozen ``__init__``'s seven ``object.__setattr__`` calls (about 5% of a
    # replay): each slot is written through its own descriptor, about twice as fast.
    rec = _new(RecordedEvent)
    _set_position(rec, position)
    _set_stream(rec, stream)
    _set_version(rec, version)
    _set_recorded_at(rec, _stored_ts(recorded_at))
    _set_meta(rec, meta)
    _set_event(rec, event)
    _set_hash(rec, hash)
    return rec


_new = object.__new__
if RecordedEvent.__slots__ != ("position", "stream", "version", "recorded_at", "meta", "event", "hash"):
    raise TypeError("decode_row writes RecordedEvent's slots one by one: update it to the class's fields")
_set_position, _set_stream, _set_version, _set_recorded_at, _set_meta, _set_event, _set_hash = (
    RecordedEvent.__dict__[name].__set__ for name in RecordedEvent.__slots__
)


# (type, its current schema version) -> the model's own JSON validator: ``model_validate_json`` without the
# classmethod around it. Older versions go through ``from_payload_json`` and its upcasters.
_CURRENT: dict[tuple[str, int], Callable[[str], DomainEvent]] = {
    (name, cls.schema_version): cls.__pydantic_validator__.validate_json for name, cls in EVENT_TYPES.items()
}


def _stored_ts(text: str) -> _dt.datetime:
    """``parse_ts`` without its ``astimezone`` for the store's own format (``...T12:00:00.000000Z``), which
    ``fromisoformat`` already reads as UTC; any other text goes through ``parse_ts``."""
    moment = _dt.datetime.fromisoformat(text)
    return moment if moment.tzinfo is _dt.UTC else parse_ts(text)


def _open(
    stream: str, type_name: str, schema_version: int, data_json: str, cipher: DataKeys | None
) -> tuple[DomainEvent, bool]:
    """An encrypted event's payload decrypted and validated; whether some field could not be (erased)."""
    payload = json.loads(data_json)
    if cipher is not None:
        erased = cipher.open(stream, type_name, payload)
    else:
        erased = [name for name, value in payload.items() if sealed.is_sealed(value)]
    cls = EVENT_TYPES.get(type_name)
    for name in erased:
        payload[name] = _blank(cls, name)
    return from_payload(type_name, schema_version, payload), bool(erased)


def _blank(cls: type[DomainEvent] | None, name: str) -> Any:
    """What an erased field reads as: ``None`` where the field may be absent, else an empty value of its kind."""
    field = cls.model_fields.get(name) if cls is not None else None
    if field is None or not field.is_required():
        return field.get_default(call_default_factory=True) if field is not None else None
    kinds = [field.annotation, *get_args(field.annotation)]
    for kind in kinds:
        origin = get_origin(kind) or kind
        if origin is dict:
            return {}
        if origin in (list, tuple):
            return []
    return sealed.ERASED_TEXT
