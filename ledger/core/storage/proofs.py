"""What a caller may ask of a store's transparency-log tree (roots, inclusion and consistency proofs, leaf data),
with the checks of each request, written once for both stores (:class:`~.tree.StoreTree` of the SQL store and
:class:`~.memory.MemoryStore`)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from ledger.core.errors import InvalidInput
from ledger.core.tlog import merkle


def _whole(value: Any, what: str, hint: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{what} must be a whole number of 0 or more, not {value!r}", hint)
    return value


class TreeProofs(abc.ABC):
    """Roots, proofs and leaf data over a store's tree, with the checks of what a caller asks: the same for the SQL
    store (:class:`~.tree.StoreTree`) and the memory store. A store gives ``tree_size``, ``tree_hashes`` and
    ``_chain_hash_at``; ``_verified`` is the largest size known good without asking (0: always ask)."""

    _verified = 0  # the largest size whose newest leaf was checked (or written by this store)

    @abc.abstractmethod
    def tree_size(self) -> int:
        """The number of leaves the tree holds."""

    @abc.abstractmethod
    def tree_hashes(self, indexes: Sequence[int]) -> list[bytes]:
        """The tree's stored hashes at ``indexes`` (Go sumdb's layout)."""

    @abc.abstractmethod
    def _chain_hash_at(self, position: int) -> str | None:
        """The chain hash of the event at ``position`` (checked as the store checks a read), or None."""

    def _within(self, size: int) -> int:
        _whole(size, "the tree size", "send a tree size, e.g. the size of a checkpoint")
        if size > self._verified:
            tree = self.tree_size()
            if size > tree:
                raise InvalidInput(
                    f"size {size} is past the tree, which has {tree} leaves", f"ask for a size of at most {tree}"
                )
        return size

    def tree_root(self, size: int) -> bytes:
        """The root hash of the tree's first ``size`` leaves (RFC 9162 MTH)."""
        return merkle.tree_hash(self._within(size), self.tree_hashes)

    def prove_inclusion(self, index: int, size: int) -> list[bytes]:
        """The inclusion proof (RFC 9162 PATH) of leaf ``index`` in the tree of ``size`` leaves."""
        self._within(size)
        hint = f"send 0 ≤ index < size (the event at position p is leaf p − 1; here index < {size})"
        if _whole(index, "the leaf index", hint) >= size:
            raise InvalidInput(f"leaf index {index} is not in a tree of {size} leaves", hint)
        return merkle.prove_inclusion(index, size, self.tree_hashes)

    def prove_consistency(self, old: int, size: int) -> list[bytes]:
        """The consistency proof (RFC 9162 PROOF) that the tree of ``old`` leaves is a prefix of that of ``size``."""
        self._within(size)
        hint = f"send 0 < old ≤ size (here size is {size})"
        if not 0 < _whole(old, "the old size", hint) <= size:
            raise InvalidInput(f"no consistency proof from size {old} to size {size}", hint)
        return merkle.prove_consistency(old, size, self.tree_hashes)

    def leaf_data(self, position: int) -> bytes:
        """The leaf data of the event at ``position`` (leaf ``position − 1``): its chain hash's 32 raw bytes."""
        hint = "send the position of an event in the log (1 to its head)"
        if _whole(position, "the position", hint) < 1:
            raise InvalidInput("positions start at 1", hint)
        found = self._chain_hash_at(position)
        if found is None:
            raise InvalidInput(f"the log has no event at position {position}", hint)
        return bytes.fromhex(found)
