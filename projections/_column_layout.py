"""The columns of a :class:`~projections.columns.ColumnTable`: how a state class is laid out (numbers and moments
in ``array`` columns, other fields dictionary-encoded), how a field is written to and read from its column, and
a numeric column packed as base64 for the wire."""

from __future__ import annotations

import base64
import datetime as _dt
import sys
import types
import typing
from array import array
from collections.abc import Callable
from typing import Any

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
NONE = _NONE = -(2**63)  # the "no value" of an optional int or moment column


def _micros(moment: _dt.datetime) -> int:
    if moment.tzinfo is None:
        raise ValueError("a naive datetime in a projection state")
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _moment(micros: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(microseconds=micros)


class _Codes:
    """A dictionary-encoded column: the distinct values once, a 4-byte code per row."""

    __slots__ = ("codes", "index", "values")

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.index: dict[Any, int] = {}
        self.codes = array("i")

    def code(self, value: Any) -> int:
        code = self.index.get(value)
        if code is None:
            code = self.index[value] = len(self.values)
            self.values.append(value)
        return code

    def copy(self) -> _Codes:
        other = _Codes()
        other.values, other.index, other.codes = list(self.values), dict(self.index), array("i", self.codes)
        return other


def _kind(tp: Any) -> tuple[str, bool]:
    """A field type's column kind (``float``, ``int``, ``bool``, ``time`` or ``code``) and whether it may be None."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    optional = False
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        tp, optional = next(a for a in args if a is not type(None)), True
    if tp is float and not optional:
        return "float", False
    if tp is bool and not optional:
        return "bool", False
    if tp is int:
        return "int", optional
    if tp is _dt.datetime:
        return "time", optional
    return "code", optional


class Layout:
    """How one state class is laid out in columns (worked out once per class)."""

    def __init__(self, cls: type, key_field: str) -> None:
        slots: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]
        hints = typing.get_type_hints(cls)
        if key_field not in slots:
            raise TypeError(f"{cls.__name__} has no field {key_field!r} to key a column table by")
        self.cls = cls
        self.key_field = key_field
        self.fields = tuple(name for name in slots if name != key_field)
        self.kinds = {name: _kind(hints[name]) for name in self.fields}

    def empty(self) -> dict[str, Any]:
        typecodes = {"float": "d", "bool": "b", "int": "q", "time": "q"}
        return {
            name: array(typecodes[kind]) if kind in typecodes else _Codes() for name, (kind, _) in self.kinds.items()
        }


_LAYOUTS: dict[tuple[type, str], Layout] = {}


def layout(cls: type, key_field: str) -> Layout:
    found = _LAYOUTS.get((cls, key_field))
    if found is None:
        found = _LAYOUTS[(cls, key_field)] = Layout(cls, key_field)
    return found


def _reader(column: Any, kind: str, optional: bool) -> Callable[[int], Any]:
    if isinstance(column, _Codes):
        values, codes = column.values, column.codes
        return lambda row: values[codes[row]]
    if kind == "bool":
        return lambda row: bool(column[row])
    if kind == "time":
        if optional:
            return lambda row: None if column[row] == _NONE else _moment(column[row])
        return lambda row: _moment(column[row])
    if optional:
        return lambda row: None if column[row] == _NONE else column[row]
    return column.__getitem__  # type: ignore[no-any-return]


def _writer(name: str, column: Any, kind: str, optional: bool) -> Callable[[Any, int | None], None]:
    get = _getter(name)
    target = column
    if isinstance(column, _Codes):
        convert: Callable[[Any], Any] = column.code
        target = column.codes
    elif kind == "time":
        convert = _micros
    elif kind == "float":
        convert = float
    elif kind == "bool":
        convert = int
    else:
        convert = _check_int
    if optional and not isinstance(column, _Codes):
        inner = convert
        convert = lambda v: _NONE if v is None else inner(v)  # noqa: E731

    def write(obj: Any, row: int | None) -> None:
        value = convert(get(obj))
        if row is None:
            target.append(value)
        else:
            target[row] = value

    return write


def _check_int(value: Any) -> int:
    if type(value) is bool or not isinstance(value, int):
        raise TypeError(f"an int column got {value!r}")
    if value == _NONE:
        raise ValueError(f"{value} is reserved in an int column")
    return value


def _getter(name: str) -> Callable[[Any], Any]:
    return lambda obj: getattr(obj, name)


def _pack(column: array[Any]) -> str:
    if sys.byteorder != "little":
        column = array(column.typecode, column)
        column.byteswap()
    return base64.b64encode(column.tobytes()).decode("ascii")


def _unpack(typecode: str, text: Any) -> array[Any]:
    if not isinstance(text, str):
        raise ValueError("a packed column is not a string")
    column = array(typecode)
    raw = base64.b64decode(text, validate=True)
    if len(raw) % column.itemsize:
        raise ValueError("a packed column's length is not a whole number of values")
    column.frombytes(raw)
    if sys.byteorder != "little":
        column.byteswap()
    return column
