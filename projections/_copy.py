"""A fast ``dataclasses.replace`` for the frozen, slotted state classes of the folds.

``dataclasses.replace`` re-inspects the fields and runs ``__init__`` on every call, and it was the largest
single cost of a replay. The state classes here have no ``__post_init__``, so copying the slots and applying
the changes gives the same object, several times faster. A new object is returned; the old one is untouched.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")
_set = object.__setattr__


def with_changes(obj: T, **changes: Any) -> T:
    """Return a copy of a frozen slotted dataclass instance with ``changes`` applied."""
    cls = type(obj)
    new = object.__new__(cls)
    for name in cls.__slots__:  # type: ignore[attr-defined]
        _set(new, name, changes.pop(name) if name in changes else getattr(obj, name))
    if changes:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(changes)}")
    return new
