"""A fast ``dataclasses.replace`` for the frozen, slotted state classes of the folds, and its in-place twin.

``dataclasses.replace`` re-inspects the fields and runs ``__init__`` on every call, and it was the largest
single cost of a replay. The state classes here have no ``__post_init__``, so copying the slots and applying
the changes gives the same object. Each class gets a copier generated once, on first use: one parameter per
field and straight-line code (no loop, no ``getattr``) that writes each slot through its own
descriptor (a frozen class refuses ``setattr``; the slot's ``__set__`` is about twice as fast as
``object.__setattr__``). A new object is returned; the old one is untouched.

:func:`changed_in_place` is for bulk replay only (``projections.runner``): it writes the changes into an object
that the caller made itself and no one else has seen yet, so the result equals what :func:`with_changes`
returns, without the copy.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MemberDescriptorType
from typing import Any, TypeVar

T = TypeVar("T")
_new = object.__new__
_MISSING: Any = object()
_COPIERS: dict[type, Callable[..., Any]] = {}
_SETTERS: dict[type, Callable[..., Any]] = {}


def _slots(cls: type) -> tuple[str, ...]:
    slots: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]
    for name in slots:
        if not name.isidentifier() or name.startswith("_"):
            raise TypeError(f"{cls.__name__}.{name} cannot be copied by a generated copier")
        if not isinstance(cls.__dict__.get(name), MemberDescriptorType):
            raise TypeError(f"{cls.__name__}.{name} is not a slot of the class itself")
    return slots


def _generate(cls: type, kind: str, source: str) -> Callable[..., Any]:
    # Each slot's descriptor ``__set__`` is bound once, as ``_s_<name>``.
    scope: dict[str, Any] = {"_new": _new, "_MISSING": _MISSING, "cls": cls}
    scope.update({f"_s_{name}": cls.__dict__[name].__set__ for name in _slots(cls)})
    exec(compile(source, f"<{kind} of {cls.__qualname__}>", "exec"), scope)
    fn: Callable[..., Any] = scope["fn"]
    return fn


# The generated functions take the fields as ordinary parameters with defaults, though callers name them: a
# keyword-only parameter left out is filled by a dict lookup in ``__kwdefaults__`` on every call, an ordinary one
# from the ``__defaults__`` tuple. (Slots never start with ``_``, so ``_obj`` and ``_new_obj`` cannot clash.)


def _copier(cls: type) -> Callable[..., Any]:
    slots = _slots(cls)
    params = ", ".join(f"{name}=_MISSING" for name in slots)
    body = "\n".join(f"    _s_{name}(_new_obj, _obj.{name} if {name} is _MISSING else {name})" for name in slots)
    return _generate(cls, "copier", f"def fn(_obj, {params}):\n    _new_obj = _new(cls)\n{body}\n    return _new_obj\n")


def _setter(cls: type) -> Callable[..., Any]:
    slots = _slots(cls)
    params = ", ".join(f"{name}=_MISSING" for name in slots)
    body = "\n".join(f"    if {name} is not _MISSING:\n        _s_{name}(_obj, {name})" for name in slots)
    return _generate(cls, "setter", f"def fn(_obj, {params}):\n{body}\n    return _obj\n")


def _name_unknown(cls: type, changes: dict[str, Any], exc: TypeError) -> None:
    unknown = sorted(set(changes) - set(cls.__slots__))  # type: ignore[attr-defined]
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {unknown}") from exc


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
        _name_unknown(cls, changes, exc)
        raise


def changed_in_place(obj: T, **changes: Any) -> T:
    """Write ``changes`` into ``obj`` itself and return it: equal to ``with_changes(obj, **changes)``.

    Only for an object the caller made (or copied) itself and has shown to no one: the folds' states are
    immutable to everyone else, and bulk replay owns its copies until it hands the tables back.
    """
    cls = type(obj)
    try:
        return in_place(cls)(obj, **changes)
    except TypeError as exc:
        _name_unknown(cls, changes, exc)
        raise


def in_place(cls: type[T]) -> Callable[..., T]:
    """The generated ``(obj, **changes) -> obj`` that :func:`changed_in_place` calls for ``cls`` (a hot loop
    that knows the class calls it directly)."""
    setter = _SETTERS.get(cls)
    if setter is None:
        setter = _SETTERS[cls] = _setter(cls)
    return setter
