"""The key index of a :class:`~projections.columns.ColumnTable`: ``key -> row``, with a large table's fixed-width
ASCII keys packed into one sorted ``bytes`` object — as raw bytes when they are a shared prefix and lower-case hex
(block and session ids: ``blk_`` + 24 hex digits), half the size."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

_HEX = frozenset("0123456789abcdef")


class _KeyIndex:
    """``key -> row``: a ``dict``, plus (once :meth:`compact` found them fit) fixed-width ASCII keys sorted in one
    ``bytes`` object with their rows beside them, searched by bisection."""

    __slots__ = ("blob", "count", "dict", "hexed", "packed_rows", "prefix", "width")

    def __init__(self) -> None:
        self.dict: dict[Any, int] = {}
        self.blob = b""
        self.width = 0  # bytes per packed key
        self.count = 0
        self.packed_rows = array("i")
        self.prefix = ""  # with ``hexed``: every packed key is this prefix and 2 × width lower-case hex digits
        self.hexed = False

    def _packed(self, key: Any) -> bytes | None:
        """``key`` as it is packed in the blob, or ``None`` when no packed key can be it."""
        if type(key) is not str:
            return None
        if not self.hexed:
            return key.encode("ascii") if len(key) == self.width and key.isascii() else None
        start = len(self.prefix)
        if len(key) != start + 2 * self.width or not key.startswith(self.prefix):
            return None
        try:
            raw = bytes.fromhex(key[start:])
        except ValueError:
            return None
        return raw if raw.hex() == key[start:] else None  # upper case or spaces would decode too: not the key

    def _key(self, raw: bytes) -> str:
        return self.prefix + raw.hex() if self.hexed else raw.decode("ascii")

    def __len__(self) -> int:
        return len(self.dict) + self.count

    def get(self, key: Any) -> int | None:
        row = self.dict.get(key)
        if row is not None or not self.count:
            return row
        probe = self._packed(key)
        if probe is None:
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
        key = self._key
        for i in range(self.count):
            yield key(blob[i * w : i * w + w]), rows[i]
        yield from self.dict.items()

    def remove(self, key: Any) -> None:
        if key not in self.dict and self.count:
            self.dict = dict(self.items())  # rare (the folds never delete): unpack, then forget the one key
            self.blob, self.count, self.packed_rows, self.hexed, self.prefix = b"", 0, array("i"), False, ""
        del self.dict[key]

    def compact(self, pack_at: int) -> None:
        """Pack every key if they are all ASCII text of one width and there are at least ``pack_at``
        (:data:`projections.columns.PACK_AT`); as raw bytes when they share a prefix followed by lower-case hex."""
        if len(self) < pack_at or not self.dict:
            return
        keys = list(self.items())
        first = keys[0][0]
        if type(first) is not str:
            return
        width = len(first)
        if any(type(k) is not str or len(k) != width or not k.isascii() for k, _ in keys):
            return
        prefix = first[: first.index("_") + 1] if "_" in first else ""
        digits = width - len(prefix)
        hexed = (
            digits > 0
            and digits % 2 == 0
            and all(k.startswith(prefix) and _HEX.issuperset(k[len(prefix) :]) for k, _ in keys)
        )
        if hexed:
            pairs = sorted((bytes.fromhex(k[len(prefix) :]), r) for k, r in keys)
            self.width, self.prefix, self.hexed = digits // 2, prefix, True
        else:
            pairs = sorted((k.encode("ascii"), r) for k, r in keys)
            self.width, self.prefix, self.hexed = width, "", False
        self.blob = b"".join(k for k, _ in pairs)
        self.packed_rows = array("i", (r for _, r in pairs))
        self.count, self.dict = len(pairs), {}

    def wire(self) -> dict[str, Any]:
        """The packed keys for a snapshot: their text concatenated (the hex digits alone when hexed)."""
        text = self.blob.hex() if self.hexed else self.blob.decode("ascii")
        width = 2 * self.width if self.hexed else self.width
        return {"keys": text, "width": width, "prefix": self.prefix, "hex": self.hexed}

    def load_wire(self, packed: Any, rows: array[Any]) -> None:
        """Restore what :meth:`wire` wrote (``ValueError`` for what it would not have written)."""
        self.hexed, self.prefix = bool(packed.get("hex", False)), str(packed.get("prefix", ""))
        text, width = packed["keys"], int(packed["width"])
        if self.hexed:
            if width % 2 or not _HEX.issuperset(text):
                raise ValueError("packed hex keys are not lower-case hex of whole bytes")
            self.blob, self.width = bytes.fromhex(text), width // 2
        else:
            self.blob, self.width = text.encode("ascii"), width
        self.packed_rows, self.count = rows, len(rows)

    def copy(self) -> _KeyIndex:
        other = _KeyIndex()
        other.dict, other.blob, other.width, other.count = dict(self.dict), self.blob, self.width, self.count
        other.prefix, other.hexed = self.prefix, self.hexed
        other.packed_rows = array("i", self.packed_rows)
        return other
