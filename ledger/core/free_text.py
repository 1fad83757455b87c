"""The inventory of text, walked: every string a caller supplied in an event (its class's :class:`Texts`), with the
path that names it (``content``, ``tags[2]``, ``dna.notes``), and the same event rebuilt with some of them
replaced. The credential scan at the append door reads events through it, and so will encryption and erasure.

A field named in ``Texts.free`` or ``Texts.labels`` may hold a string, or lists and dicts of them to any depth:
every string in it counts, dict keys too (the key ``k`` of ``dna`` is at ``dna.k (name)``, its value at
``dna.k``). Numbers, booleans and ``None`` are skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

from ledger.core.events import DomainEvent

Which = Literal["free", "labels", "ledger"]
SCANNED: tuple[Which, ...] = ("free", "labels")  # what the credential scan reads
Rewrite = Callable[[str, str], str]  # (path, text) -> the text to keep


def fields_of(cls: type[DomainEvent], which: tuple[Which, ...] = SCANNED) -> tuple[str, ...]:
    """The fields of ``cls`` declared in ``which`` parts of its inventory, in declaration order."""
    return tuple(name for part in which for name in getattr(cls.texts, part))


def texts(event: DomainEvent, which: tuple[Which, ...] = SCANNED) -> Iterator[tuple[str, str]]:
    """``(path, text)`` for every string in the fields of ``event`` that ``which`` names (default: what a caller
    supplied, free text and labels)."""
    for name in fields_of(type(event), which):
        yield from walk(getattr(event, name), name)


def walk(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """``(path, text)`` for every string in ``value`` (a string, or lists, tuples and dicts of them)."""
    found: list[tuple[str, str]] = []

    def keep(where: str, text: str) -> str:
        found.append((where, text))
        return text

    rewrite(value, path, keep)
    yield from found


def rewrite(value: Any, path: str, fn: Rewrite) -> Any:
    """``value`` with every string in it replaced by ``fn(path, text)``; containers rebuilt, the rest kept."""
    if isinstance(value, str):
        return fn(path, value)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            new_key = fn(f"{where} (name)", key) if isinstance(key, str) else key
            out[new_key] = rewrite(item, where, fn)
        return out
    if isinstance(value, list | tuple):
        items = [rewrite(item, f"{path}[{i}]", fn) for i, item in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    return value


def rewrite_event(event: DomainEvent, fn: Rewrite, which: tuple[Which, ...] = SCANNED) -> DomainEvent:
    """``event`` with every string of the fields ``which`` names replaced by ``fn(path, text)``: the same event
    when nothing changed, else a new one of its class (validated, since events are frozen)."""
    changes: dict[str, Any] = {}
    for name in fields_of(type(event), which):
        old = getattr(event, name)
        new = rewrite(old, name, fn)
        if new != old:
            changes[name] = new
    if not changes:
        return event
    return type(event).model_validate({**dict(event), **changes})
