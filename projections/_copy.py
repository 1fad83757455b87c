"""A fast ``dataclasses.replace`` for the frozen, slotted state classes of the folds.

``dataclasses.replace`` re-inspects the fields and runs ``__init__`` on every call, and it was the largest
single cost of a replay. The state classes here have no ``__post_init__``, so copying the slots and applying
the changes gives the same object. Each class gets a copier generated once, on first use: one keyword
parameter per field and straight-line code (no loop, no ``getattr``), about three times faster than a loop over
``__slots__``. A new object is returned; the old one is untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_set = object.__setattr__
_new = object.__new__
_MISSING: Any = object()
_COPIERS: dict[type, Callable[..., Any]] = {}


def _copier(cls: type) -> Callable[..., Any]:
    slots: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]
    for name in slots:
        if not name.isidentifier() or name.startswith("_"):
            raise TypeError(f"{cls.__name__}.{name} cannot be copied by a generated copier")
    params = ", ".join(f"{name}=_MISSING" for name in slots)
    body = "\n".join(f"    _set(new, {name!r}, obj.{name} if {name} is _MISSING else {name})" for name in slots)
    source = f"def copy(obj, *, {params}):\n    new = _new(cls)\n{body}\n    return new\n"
    scope: dict[str, Any] = {"_set": _set, "_new": _new, "_MISSING": _MISSING, "cls": cls}
    exec(compile(source, f"<copier of {cls.__qualname__}>", "exec"), scope)
    copy: Callable[..., Any] = scope["copy"]
    return copy


def with_changes(obj: T, **changes: Any) -> T:
    """Return a copy of a frozen slotted dataclass instance with ``changes`` applied (``TypeError`` for a field
    the class does not have)."""
    cls = type(obj)
    copy = _COPIERS.get(cls)
    if copy is None:
        copy = _COPIERS[cls] = _copier(cls)
    try:
        return copy(obj, **changes)  # type: ignore[no-any-return]
    except TypeError as exc:
        unknown = sorted(set(changes) - set(cls.__slots__))  # type: ignore[attr-defined]
        if unknown:
            raise TypeError(f"{cls.__name__} has no field(s) {unknown}") from exc
        raise
