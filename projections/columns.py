"""A table of frozen state objects stored by column, so state that grows with history costs bytes, not objects.

A projection that keeps one small state per entity for the whole history (a memory block, a session's active
span) would hold, as a ``dict`` of dataclass instances, a Python object per entity plus an object per field
value (each ``datetime`` alone is 48 bytes). :class:`ColumnTable` is a ``MutableMapping`` with the same
contents held as columns instead: numbers and moments in ``array`` columns (8 bytes a value; a moment as
microseconds since the epoch), every other field dictionary-encoded (its distinct values once, a 4-byte code
per row). Reading a key builds the state object afresh, equal to the one stored; the folds stay the same pure
functions over immutable states.

Columns also make the table cheap to copy (for a snapshot taken while folding goes on) and to write and read
back: :meth:`to_wire` / :meth:`from_wire` move each numeric column as one base64 string, not one JSON value per
row. Only the key field (the entity's id) stays a Python string per row, as a dictionary key.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Hashable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

from projections._column_layout import _NONE, _Codes, _micros, _pack, _reader, _unpack, _writer, layout
from projections._column_layout import NONE as NONE
from projections._key_index import _KeyIndex

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_set = object.__setattr__
_new = object.__new__


PACK_AT = 1024
"""A table restored or copied with at least this many keys (all ASCII text of one width, such as block and session
ids) keeps them packed: sorted in one ``bytes`` object, about 30 bytes a key instead of about 150 for a ``str``, a
``dict`` slot and an ``int`` row number."""


class ColumnTable(MutableMapping[K, V], Generic[K, V]):
    """``key -> state`` for one frozen, slotted state class whose ``key_field`` holds the key.

    The states written last (up to ``hot``) are also kept as objects, so an entity being folded event after event
    (an open session, a block being recalled) is not rebuilt from its columns each time; older ones live in the
    columns only, and a large table's keys are packed (:data:`PACK_AT`). Values read from the columns are equal
    to, not identical with, the objects stored; keys iterate packed ones first (in sorted order), then the rest
    in the order they were set. ``None`` states (a fold's "nothing yet") and states whose key field is not their
    key are kept apart, as objects.
    """

    def __init__(self, cls: type[V], key_field: str, hot: int = 1024) -> None:
        self.layout = layout(cls, key_field)
        self.hot_limit = hot
        self._index = _KeyIndex()  # every key whose state is in the columns -> its row
        self._next_row = 0
        self._hot: dict[K, V] = {}  # the latest states, newest last (their rows may be stale until evicted)
        self._dirty: set[K] = set()  # hot keys whose rows are stale
        self._objects: dict[K, V | None] = {}  # states kept as objects: None, or not keyed by their key field
        self._columns = self.layout.empty()
        self._writers = self._make_writers()
        self._readers = self._make_readers()

    # --- the mapping ---------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._index) + len(self._objects)

    def __iter__(self) -> Iterator[K]:
        for key, _ in self._index.items():
            yield key
        yield from self._objects

    def __contains__(self, key: object) -> bool:
        return key in self._hot or self._index.get(key) is not None or key in self._objects

    def __getitem__(self, key: K) -> V:
        value = self._hot.get(key)
        if value is not None:
            return value
        row = self._index.get(key)
        if row is None:
            return self._objects[key]  # type: ignore[return-value]
        return self._read(key, row)

    def get(self, key: K, default: Any = None) -> Any:
        value = self._hot.get(key)
        if value is not None:
            return value
        row = self._index.get(key)
        if row is None:
            return self._objects.get(key, default)
        return self._read(key, row)

    def __setitem__(self, key: K, value: V) -> None:
        hot = self._hot
        if value is not None and hot.get(key) is value:
            return  # unchanged (a fold returned the state it was given)
        if value is None or getattr(value, self.layout.key_field) != key:
            if key in hot or self._index.get(key) is not None:
                del self[key]
            self._objects[key] = value
            return
        if key in hot:
            del hot[key]
            self._dirty.add(key)
        elif self._index.get(key) is not None:
            self._dirty.add(key)
        else:
            self._objects.pop(key, None)
            self._index.dict[key] = self._next_row
            self._next_row += 1
            for write in self._writers:
                write(value, None)
        hot[key] = value
        if len(hot) > self.hot_limit:
            self._flush(next(iter(hot)))

    def __delitem__(self, key: K) -> None:
        if key in self._objects:
            del self._objects[key]
            return
        self._hot.pop(key, None)
        self._dirty.discard(key)
        self._index.remove(key)  # the row's cells stay behind, unreferenced

    def values(self) -> Iterator[V]:  # type: ignore[override]
        for _, value in self.items():
            yield value

    def items(self) -> Iterator[tuple[K, V]]:  # type: ignore[override]
        hot = self._hot
        for key, row in self._index.items():
            value = hot.get(key)
            yield key, (value if value is not None else self._read(key, row))
        yield from self._objects.items()  # type: ignore[misc]

    def field(self, name: str) -> Iterator[tuple[K, Any]]:
        """``(key, value of one field)`` for every state, without building the states (e.g. to index tags)."""
        read = dict(zip(self.layout.fields, self._readers, strict=True))[name]
        hot = self._hot
        for key, row in self._index.items():
            value = hot.get(key)
            yield key, (getattr(value, name) if value is not None else read(row))
        for key, obj in self._objects.items():
            if obj is not None:
                yield key, getattr(obj, name)

    def arrays(self, *names: str) -> tuple[array[Any], ...] | None:
        """The named numeric columns themselves, brought up to date (moments as microseconds since the epoch,
        ``NONE`` for a missing value), when every row is a live state; ``None`` otherwise (after a delete, or
        with states kept as objects): then use :meth:`raw`. Read them, never change them."""
        if len(self._index) != self._next_row or any(v is not None for v in self._objects.values()):
            return None
        self._settle()
        return tuple(self._columns[name] for name in names)

    def raw(self, *names: str) -> Iterator[tuple[Any, ...]]:
        """The named fields of every state as stored, without building states: moments as microseconds since
        the epoch, ``None`` as ``None``; for bulk arithmetic over a large table (e.g. active hours)."""
        layout = self.layout
        plan = []
        for name in names:
            kind, _ = layout.kinds[name]
            plan.append((name, self._columns[name], kind))
        hot = self._hot

        def stored(value: Any, kind: str) -> Any:
            return _micros(value) if kind == "time" and value is not None else value

        for key, row in self._index.items():
            obj = hot.get(key)
            if obj is not None:
                yield tuple(stored(getattr(obj, name), kind) for name, _, kind in plan)
                continue
            out = []
            for _, column, kind in plan:
                if isinstance(column, _Codes):
                    out.append(column.values[column.codes[row]])
                else:
                    value = column[row]
                    out.append(None if value == _NONE and kind in ("time", "int") else value)
            yield tuple(out)
        for obj in self._objects.values():
            if obj is not None:
                yield tuple(stored(getattr(obj, name), kind) for name, _, kind in plan)

    def gather(self, *names: str) -> tuple[list[K], list[Any]]:
        """Every key, and for each named field a sequence of its values in the same order, as :meth:`raw` gives
        them (moments as microseconds, ``None`` as ``None``, booleans as 0/1; a number that is never ``None`` in an
        ``array``): a whole table read column by column for arithmetic over every state, without building a state
        or a tuple per row."""
        self._settle()  # every row now holds its state, hot or not
        pairs = list(self._index.items())
        keys: list[Any] = [key for key, _ in pairs]
        rows = [row for _, row in pairs]
        del pairs
        out: list[Any] = []
        for name in names:
            column, (kind, optional) = self._columns[name], self.layout.kinds[name]
            if isinstance(column, _Codes):
                values, codes = column.values, column.codes
                out.append([values[codes[r]] for r in rows])
            elif optional:  # an optional int or moment: NONE is None
                out.append([None if v == _NONE else v for v in [column[r] for r in rows]])
            else:  # kept an array: 8 bytes a value, no object each
                out.append(array(column.typecode, map(column.__getitem__, rows)))
        objects = [(key, obj) for key, obj in self._objects.items() if obj is not None]
        if objects:
            keys += [key for key, _ in objects]
            for name, values_out in zip(names, out, strict=True):
                kind = self.layout.kinds[name][0]
                for _, obj in objects:
                    value = getattr(obj, name)
                    values_out.append(_micros(value) if kind == "time" and value is not None else value)
        return keys, out

    def _row(self, key: K) -> int:
        row = self._index.get(key)
        assert row is not None, key
        return row

    def _flush(self, key: K) -> None:
        """Write a hot state into its row and drop the object."""
        value = self._hot.pop(key)
        if key in self._dirty:
            self._dirty.discard(key)
            row = self._row(key)
            for write in self._writers:
                write(value, row)

    def _settle(self) -> None:
        """Write every stale row from its hot state (they stay hot too), so the columns alone hold the table."""
        for key in self._dirty:
            row, value = self._row(key), self._hot[key]
            for write in self._writers:
                write(value, row)
        self._dirty.clear()

    # --- copying and the wire ------------------------------------------------------------------------------

    def copy(self) -> ColumnTable[K, V]:
        """A copy later writes do not change (for a snapshot); both pack their keys if they have grown."""
        self._settle()
        self._index.compact(PACK_AT)
        other: ColumnTable[K, V] = ColumnTable(self.layout.cls, self.layout.key_field, self.hot_limit)
        other._index, other._next_row, other._objects = self._index.copy(), self._next_row, dict(self._objects)
        other._columns = {
            n: c.copy() if isinstance(c, _Codes) else array(c.typecode, c) for n, c in self._columns.items()
        }
        other._writers, other._readers = other._make_writers(), other._make_readers()
        return other

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ColumnTable | dict):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ColumnTable({self.layout.cls.__name__}, {len(self)} rows)"

    def to_wire(self, encode: Callable[[Any], Any]) -> dict[str, Any]:
        """Plain JSON data, each column packed (``encode`` for the coded values). Packed keys travel packed (one
        ASCII string and their rows), so reading a large table back builds no object per key."""
        self._settle()
        self._index.compact(PACK_AT)
        index = self._index
        if index.count and len(index) == self._next_row:  # every row live: the columns go as they are
            whole: dict[str, Any] = {}
            for name, column in self._columns.items():
                if isinstance(column, _Codes):
                    whole[name] = {"v": [encode(v) for v in column.values], "i": _pack(column.codes)}
                else:
                    whole[name] = _pack(column)
            return {
                "rows": self._next_row,
                "packed": {**index.wire(), "rows": _pack(index.packed_rows)},
                "keys": [[encode(k), r] for k, r in index.dict.items()],
                "objects": [[encode(k), encode(v)] for k, v in self._objects.items()],
                "columns": whole,
            }
        live = sorted(index.items(), key=lambda item: item[1])
        keep = array("q", (row for _, row in live))
        columns: dict[str, Any] = {}
        for name, column in self._columns.items():
            if isinstance(column, _Codes):
                codes = array("i", (column.codes[r] for r in keep))
                columns[name] = {"v": [encode(v) for v in column.values], "i": _pack(codes)}
            else:
                columns[name] = _pack(array(column.typecode, (column[r] for r in keep)))
        return {
            "keys": [encode(key) for key, _ in live],
            "objects": [[encode(k), encode(v)] for k, v in self._objects.items()],
            "columns": columns,
        }

    @classmethod
    def from_wire(
        cls, state_cls: type[V], key_field: str, data: Any, decode: Callable[[Any], Any]
    ) -> ColumnTable[K, V]:
        """The table :meth:`to_wire` described; ``ValueError`` for anything it would not have written."""
        table: ColumnTable[K, V] = cls(state_cls, key_field)
        if "packed" in data:
            return table._from_packed_wire(data, decode)
        keys = [decode(k) for k in data["keys"]]
        table._read_columns(data["columns"], len(keys), decode)
        table._index.dict = {k: i for i, k in enumerate(keys)}
        table._next_row = len(keys)
        if len(table._index.dict) != len(keys):
            raise ValueError("a column table's keys repeat")
        del keys
        table._index.compact(PACK_AT)
        table._objects = {decode(k): decode(v) for k, v in data["objects"]}
        if any(table._index.get(k) is not None for k in table._objects):
            raise ValueError("a column table holds a key twice")
        table._writers, table._readers = table._make_writers(), table._make_readers()
        return table

    def _from_packed_wire(self, data: Any, decode: Callable[[Any], Any]) -> ColumnTable[K, V]:
        rows = int(data["rows"])
        self._read_columns(data["columns"], rows, decode)
        packed = data["packed"]
        index = self._index
        index.load_wire(packed, _unpack("i", packed["rows"]))
        w, blob = index.width, index.blob
        if w <= 0 or len(blob) != w * index.count:
            raise ValueError("packed keys do not match their count")
        if any(blob[i * w : i * w + w] >= blob[i * w + w : i * w + 2 * w] for i in range(index.count - 1)):
            raise ValueError("packed keys are not strictly sorted")
        index.dict = {decode(k): int(r) for k, r in data["keys"]}
        taken = [*index.packed_rows, *index.dict.values()]
        if len(taken) != rows or sorted(taken) != list(range(rows)):
            raise ValueError("a column table's keys do not name each of its rows once")
        if any(index.get(k) != r for k, r in index.dict.items()):
            raise ValueError("a column table holds a key twice")
        self._next_row = rows
        self._objects = {decode(k): decode(v) for k, v in data["objects"]}
        if any(index.get(k) is not None for k in self._objects):
            raise ValueError("a column table holds a key twice")
        self._writers, self._readers = self._make_writers(), self._make_readers()
        return self

    def _read_columns(self, wire: Any, rows: int, decode: Callable[[Any], Any]) -> None:
        if set(wire) != set(self.layout.fields):
            raise ValueError(f"the columns {sorted(wire)} are not those of {self.layout.cls.__name__}")
        for name, column in self._columns.items():
            raw = wire[name]
            if isinstance(column, _Codes):
                column.values = [decode(v) for v in raw["v"]]
                column.index = {v: i for i, v in enumerate(column.values)}
                column.codes = _unpack("i", raw["i"])
                if column.codes and not 0 <= min(column.codes) <= max(column.codes) < len(column.values):
                    raise ValueError(f"column {name} refers to values it does not hold")
                size = len(column.codes)
            else:
                self._columns[name] = _unpack(column.typecode, raw)
                size = len(self._columns[name])
            if size != rows:
                raise ValueError(f"column {name} holds {size} rows for {rows} keys")

    # --- rows ------------------------------------------------------------------------------------------------

    def _read(self, key: K, row: int) -> V:
        obj: Any = _new(self.layout.cls)
        _set(obj, self.layout.key_field, key)
        for name, read in zip(self.layout.fields, self._readers, strict=True):
            _set(obj, name, read(row))
        return obj  # type: ignore[no-any-return]

    def _make_readers(self) -> list[Callable[[int], Any]]:
        readers: list[Callable[[int], Any]] = []
        for name, (kind, optional) in self.layout.kinds.items():
            column = self._columns[name]
            readers.append(_reader(column, kind, optional))
        return readers

    def _make_writers(self) -> list[Callable[[Any, int | None], None]]:
        writers: list[Callable[[Any, int | None], None]] = []
        for name, (kind, optional) in self.layout.kinds.items():
            writers.append(_writer(name, self._columns[name], kind, optional))
        return writers
