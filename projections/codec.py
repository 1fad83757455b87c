"""A typed JSON codec for projection states, so a snapshot can be stored and read back without ``pickle``.

Snapshots live in the database, which an attacker may be able to write; decoding one must never run code or
build a type the folds do not use. So the codec knows a closed set of types: JSON scalars, ``tuple``,
``list``, ``set``, ``frozenset``, ``dict`` (any hashable keys), aware ``datetime``, the ``StrEnum`` tiers and the
frozen, slotted state classes registered in :data:`STATE_CLASSES`. Anything else fails loudly at encode time,
so a new state field of an unknown type is caught by the snapshot tests, not silently dropped.

Wire form: scalars as themselves; every container is a one-key object whose key names its type:
``{"t": [...]}`` tuple, ``{"l": [...]}`` list, ``{"s": [...]}`` set, ``{"f": [...]}`` frozenset,
``{"d": [[k, v], ...]}`` dict, ``{"T": "iso"}`` datetime, ``{"e": ["Tier", "value"]}`` enum,
``{"o": ["Class", [field values...]]}`` state object and ``{"c": ["Class", "key field", {...}]}`` a
:class:`~projections.columns.ColumnTable` (its columns packed, see ``ColumnTable.to_wire``). A state
object's fields are written by their declared types, without tags where the type says what they are (a
``datetime`` field as its ISO text, a ``tuple[str, ...]`` as a list, a ``StrEnum`` as its value): restoring
tens of thousands of objects is then one ``json.loads`` and a list comprehension per object, not a recursive
walk over every value.
"""

from __future__ import annotations

import contextvars
import datetime as _dt
import io
import json
import types
import typing
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from projections import active_hours, brain, compliance, decay, enforcement, memory, sessions, tasks
from projections.columns import ColumnTable

STATE_CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        sessions.Token,
        sessions.AnchorChallenge,
        sessions.SessionView,
        compliance.AgentCompliance,
        active_hours.SessionSpan,
        active_hours.ActiveTime,
        memory.BlockView,
        memory.EdgeView,
        memory.CurateMark,
        enforcement.AgentToolStats,
        brain.Traffic,
        tasks.TaskView,
    )
}
ENUMS: dict[str, type[StrEnum]] = {decay.Tier.__name__: decay.Tier}

_SCALARS = (str, int, float, bool, type(None))


Encoder = Callable[[Any], Any] | None  # None: the value is already JSON (str, int, float, bool, None)
Decoder = Callable[[Any], Any] | None


def _optional(enc: Encoder, dec: Decoder) -> tuple[Encoder, Decoder]:
    if enc is None and dec is None:
        return None, None
    e, d = enc or (lambda v: v), dec or (lambda v: v)
    return (lambda v: None if v is None else e(v)), (lambda v: None if v is None else d(v))


def _field_codec(tp: Any) -> tuple[Encoder, Decoder]:
    """How to write and read one declared field type; the tagged form for anything not plain."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp in (str, int, float, bool) or (origin is typing.Literal and all(isinstance(a, str) for a in args)):
        return None, None
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        return _optional(*_field_codec(next(a for a in args if a is not type(None))))
    if tp is _dt.datetime:
        return _dt.datetime.isoformat, _dt.datetime.fromisoformat
    if origin is tuple and args in ((str, ...), (int, ...)):
        return list, tuple
    if origin is frozenset and args in ((str,), (int,)):
        return sorted, frozenset
    if isinstance(tp, type) and issubclass(tp, StrEnum) and ENUMS.get(tp.__name__) is tp:
        return (lambda v: v.value), tp
    return to_wire, from_wire


class _ClassCodec:
    def __init__(self, cls: type) -> None:
        hints = typing.get_type_hints(cls)
        self.cls = cls
        self.slots = _slots(cls)
        codecs = [_field_codec(hints[name]) for name in self.slots]
        self.encoders = [e for e, _ in codecs]
        self.decoders = [d for _, d in codecs]

    def encode(self, obj: Any) -> list[Any]:
        return [
            getattr(obj, name) if enc is None else enc(getattr(obj, name))
            for name, enc in zip(self.slots, self.encoders, strict=True)
        ]

    def decode(self, values: list[Any]) -> Any:
        if len(values) != len(self.slots):
            raise CodecError(f"{self.cls.__name__} has {len(self.slots)} fields, the snapshot holds {len(values)}")
        obj: Any = object.__new__(self.cls)
        for name, dec, raw in zip(self.slots, self.decoders, values, strict=True):
            object.__setattr__(obj, name, raw if dec is None or raw is None else dec(raw))
        return obj


_CLASS_CODECS: dict[str, _ClassCodec] = {}


def _class_codec(name: str) -> _ClassCodec | None:
    codec = _CLASS_CODECS.get(name)
    if codec is None and name in STATE_CLASSES:
        codec = _CLASS_CODECS[name] = _ClassCodec(STATE_CLASSES[name])
    return codec


class CodecError(ValueError):
    """A value the codec does not know (encoding) or a payload that is not one it wrote (decoding)."""


def _slots(cls: type) -> tuple[str, ...]:
    slots = getattr(cls, "__slots__", None)
    if not isinstance(slots, tuple):
        raise CodecError(f"{cls.__name__} is not a slotted state class")
    return slots


def to_wire(value: Any) -> Any:
    """``value`` as plain JSON data (see the module docstring for the form)."""
    if isinstance(value, _SCALARS) and not isinstance(value, StrEnum):
        return value
    kind = type(value)
    if kind is tuple:
        return {"t": [to_wire(v) for v in value]}
    if kind is list:
        return {"l": [to_wire(v) for v in value]}
    if kind is frozenset or kind is set:
        return {"f" if kind is frozenset else "s": [to_wire(v) for v in value]}
    if isinstance(value, dict):  # dict, Counter and OrderedDict all come back as dict
        return {"d": [[to_wire(k), to_wire(v)] for k, v in value.items()]}
    if isinstance(value, _dt.datetime):  # a subclass too (freezegun makes them)
        if value.tzinfo is None:
            raise CodecError("a naive datetime in a projection state")
        return {"T": value.isoformat()}
    if isinstance(value, StrEnum) and ENUMS.get(kind.__name__) is kind:
        return {"e": [kind.__name__, value.value]}
    if isinstance(value, ColumnTable):
        cls = value.layout.cls
        if STATE_CLASSES.get(cls.__name__) is not cls:
            raise CodecError(f"cannot snapshot a column table of {cls.__qualname__}; register it in projections.codec")
        return {"c": [cls.__name__, value.layout.key_field, value.to_wire(to_wire)]}
    if STATE_CLASSES.get(kind.__name__) is kind:
        codec = _class_codec(kind.__name__)
        assert codec is not None
        return {"o": [kind.__name__, codec.encode(value)]}
    raise CodecError(f"cannot snapshot a value of type {kind.__qualname__}; register it in projections.codec")


def _from_object(spec: Any) -> Any:
    name, values = spec
    codec = _class_codec(name) if isinstance(name, str) else None
    if codec is None or not isinstance(values, list):
        raise CodecError(f"unknown state class {name!r} in a snapshot")
    return codec.decode(values)


def _from_columns(spec: Any) -> Any:
    name, key_field, data = spec
    cls = STATE_CLASSES.get(name) if isinstance(name, str) else None
    if cls is None or key_field not in getattr(cls, "__slots__", ()):
        raise CodecError(f"unknown column table {name!r} keyed by {key_field!r} in a snapshot")
    return ColumnTable.from_wire(cls, key_field, data, from_wire)


def _from_enum(spec: Any) -> Any:
    name, raw = spec
    enum = ENUMS.get(name) if isinstance(name, str) else None
    if enum is None:
        raise CodecError(f"unknown enum {name!r} in a snapshot")
    return enum(raw)


def _from_datetime(text: Any) -> _dt.datetime:
    if not isinstance(text, str):
        raise CodecError("a datetime in a snapshot is not a string")
    moment = _dt.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise CodecError("a naive datetime in a snapshot")
    return moment


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "t": lambda items: tuple(from_wire(v) for v in items),
    "l": lambda items: [from_wire(v) for v in items],
    "s": lambda items: {from_wire(v) for v in items},
    "f": lambda items: frozenset(from_wire(v) for v in items),
    "d": lambda items: {from_wire(k): from_wire(v) for k, v in items},
    "T": _from_datetime,
    "e": _from_enum,
    "o": _from_object,
    "c": _from_columns,
}


def from_wire(data: Any) -> Any:
    """The value :func:`to_wire` made ``data`` from; :class:`CodecError` for anything it would not have made."""
    if isinstance(data, _SCALARS):
        return data
    if not isinstance(data, dict) or len(data) != 1:
        raise CodecError("malformed snapshot value")
    ((tag, body),) = data.items()
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise CodecError(f"unknown snapshot tag {tag!r}")
    try:
        return decoder(body)
    except CodecError:
        raise
    except (TypeError, ValueError, KeyError) as exc:
        raise CodecError(f"malformed snapshot value under {tag!r}: {exc}") from exc


SPILL_AT = 256
"""A plain dict with more entries than this (a projection's table) is written one entry per line after the
rest, so reading a snapshot never holds the whole parsed JSON of a large graph at once (time and peak memory)."""
_TABLES: contextvars.ContextVar[list[dict[Any, Any]]] = contextvars.ContextVar("snapshot_tables")


def _skeleton(value: Any, spilled: list[dict[Any, Any]]) -> Any:
    if type(value) is dict:
        if len(value) > SPILL_AT:
            spilled.append(value)
            return {"@": len(spilled) - 1}
        return {"d": [[to_wire(k), _skeleton(v, spilled)] for k, v in value.items()]}
    return to_wire(value)


def _from_table(index: Any) -> dict[Any, Any]:
    tables = _TABLES.get(None)
    if tables is None or not isinstance(index, int) or not 0 <= index < len(tables):
        raise CodecError(f"a snapshot refers to table {index!r}, which it does not hold")
    return tables[index]


_DECODERS["@"] = _from_table


def dumps(value: Any) -> bytes:
    """``value`` as snapshot bytes: a first line ``{"tables": [sizes], "value": skeleton}``, then the entries of
    each spilled table, one ``[key, value]`` per line."""
    spilled: list[dict[Any, Any]] = []
    skeleton = _skeleton(value, spilled)
    dump = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    lines = [dump({"tables": [len(t) for t in spilled], "value": skeleton})]
    for table in spilled:
        lines.extend(dump([to_wire(k), to_wire(v)]) for k, v in table.items())
    return "\n".join(lines).encode()


def loads(payload: bytes) -> Any:
    """The value :func:`dumps` wrote; :class:`CodecError` for anything else."""
    stream = io.BytesIO(payload)
    try:
        head = json.loads(stream.readline())
        sizes, skeleton = head["tables"], head["value"]
        tables: list[dict[Any, Any]] = []
        for size in sizes:
            table: dict[Any, Any] = {}
            for _ in range(int(size)):
                key, item = json.loads(stream.readline())
                table[from_wire(key)] = from_wire(item)
            tables.append(table)
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise CodecError(f"a snapshot payload is not one this codec wrote: {exc}") from exc
    if stream.read(1):
        raise CodecError("a snapshot payload has more lines than its tables")
    token = _TABLES.set(tables)
    try:
        return from_wire(skeleton)
    finally:
        _TABLES.reset(token)
