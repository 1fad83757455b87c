"""The key index of a :class:`~projections.columns.ColumnTable`: ``key -> row``, with a large table's fixed-width
ASCII keys packed into one sorted ``bytes`` object."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any


class _KeyIndex:
    """``key -> row``: a ``dict``, plus (once :meth:`compact` found them fit) fixed-width ASCII keys sorted in one
    ``bytes`` object with their rows beside them, searched by bisection."""

    __slots__ = ("blob", "count", "dict", "packed_rows", "width")

    def __init__(self) -> None:
        self.dict: dict[Any, int] = {}
        self.blob = b""
        self.width = 0
        self.count = 0
        self.packed_rows = array("i")

    def __len__(self) -> int:
        return len(self.dict) + self.count

    def get(self, key: Any) -> int | None:
        row = self.dict.get(key)
        if row is not None or not self.count or type(key) is not str or len(key) != self.width:
            return row
        try:
            probe = key.encode("ascii")
        except UnicodeEncodeError:
            return None
        blob, w, lo, hi = self.blob, self.width, 0, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            if blob[mid * w : mid * w + w] < probe:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.count and blob[lo * w : lo * w + w] == probe:
            return self.packed_rows[lo]
        return None

    def items(self) -> Iterator[tuple[Any, int]]:
        blob, w, rows = self.blob, self.width, self.packed_rows
        for i in range(self.count):
            yield blob[i * w : i * w + w].decode("ascii"), rows[i]
        yield from self.dict.items()

    def remove(self, key: Any) -> None:
        if key not in self.dict and self.count:
            self.dict = dict(self.items())  # rare (the folds never delete): unpack, then forget the one key
            self.blob, self.count, self.packed_rows = b"", 0, array("i")
        del self.dict[key]

    def compact(self, pack_at: int) -> None:
        """Pack every key if they are all ASCII text of one width and there are at least ``pack_at``
        (:data:`projections.columns.PACK_AT`)."""
        if len(self) < pack_at or not self.dict:
            return
        first = next(iter(self.dict))
        if not self.count and type(first) is not str:
            return
        width = self.width if self.count else len(first)
        fresh: list[tuple[bytes, int]] = []
        for key, row in self.dict.items():
            if type(key) is not str or len(key) != width or not key.isascii():
                return
            fresh.append((key.encode("ascii"), row))
        blob, w = self.blob, self.width
        pairs = [(blob[i * w : i * w + w], self.packed_rows[i]) for i in range(self.count)] + fresh
        pairs.sort()
        self.blob = b"".join(k for k, _ in pairs)
        self.packed_rows = array("i", (r for _, r in pairs))
        self.width, self.count, self.dict = width, len(pairs), {}

    def copy(self) -> _KeyIndex:
        other = _KeyIndex()
        other.dict, other.blob, other.width, other.count = dict(self.dict), self.blob, self.width, self.count
        other.packed_rows = array("i", self.packed_rows)
        return other
