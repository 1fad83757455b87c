"""The inventory of text (``Texts`` on every event class) cannot go stale: every field that can hold a string is
declared in exactly one of free text, caller labels or the ledger's own text, and nothing else is declared; and
``ledger.core.free_text`` walks and rewrites exactly what is declared."""

from __future__ import annotations

import datetime as _dt
import types
import typing
from typing import Any, ClassVar, Literal, get_args, get_origin

from ledger.core import free_text
from ledger.core.events import (
    VOCABULARY,
    DomainEvent,
    MemoryRemembered,
    ParameterChecked,
    TaskCreated,
    Texts,
    Timestamp,
)


def holds_text(annotation: Any) -> bool:
    """Whether a field of this type can hold a string: ``str``, a ``Literal`` of strings, ``Any``, or a list,
    tuple, dict or union with one of them inside (keys included)."""
    if annotation is str or annotation is Any:
        return True
    origin = get_origin(annotation)
    if origin is Literal:
        return any(isinstance(a, str) for a in get_args(annotation))
    if origin is typing.Annotated:
        return holds_text(get_args(annotation)[0])
    if origin in (list, tuple, dict, set, typing.Union, types.UnionType):
        return any(holds_text(a) for a in get_args(annotation) if a is not Ellipsis)
    return False


def inventory_problems(cls: type[DomainEvent]) -> list[str]:
    """What is wrong with ``cls``'s inventory of text (empty: nothing)."""
    fields = cls.model_fields
    texts = {name for name, info in fields.items() if holds_text(info.annotation)}
    declared = [*cls.texts.free, *cls.texts.labels, *cls.texts.ledger]
    problems = [f"{cls.__name__}.{name} holds text but is not in its Texts" for name in sorted(texts - set(declared))]
    twice = {name for name in declared if declared.count(name) > 1}
    problems += [f"{cls.__name__}.{name} is declared twice" for name in sorted(twice)]
    problems += [f"{cls.__name__}.{name} is declared but is not a text field" for name in sorted(set(declared) - texts)]
    return problems


def test_every_text_field_of_every_event_is_declared_once() -> None:
    problems = [p for cls in VOCABULARY for p in inventory_problems(cls)]
    assert problems == []


def test_the_check_finds_an_undeclared_text_field_and_a_wrong_declaration() -> None:
    class NoteTaken(DomainEvent):
        type_name: ClassVar[str] = "NoteTaken"
        texts: ClassVar[Texts] = Texts(free=("note", "count"))
        note: str
        extra: dict[str, Any] | None = None
        kind: Literal["a", "b"] = "a"
        count: int = 0
        at: Timestamp | None = None

    assert inventory_problems(NoteTaken) == [
        "NoteTaken.extra holds text but is not in its Texts",
        "NoteTaken.kind holds text but is not in its Texts",
        "NoteTaken.count is declared but is not a text field",
    ]


def test_holds_text_reads_the_annotations_the_vocabulary_uses() -> None:
    assert holds_text(str | None) and holds_text(list[str]) and holds_text(dict[str, int])
    assert holds_text(list[tuple[str, str]]) and holds_text(dict[str, Any]) and holds_text(Literal["x"])
    assert not holds_text(int) and not holds_text(float | None) and not holds_text(Timestamp | None)
    assert not holds_text(bool) and not holds_text(_dt.datetime)


def test_texts_yields_each_caller_string_with_its_path() -> None:
    event = MemoryRemembered(
        block_id="blk_0", content="the schema", tags=["db", "ops"], session_id="ses_1", context="migrating"
    )
    assert list(free_text.texts(event)) == [
        ("content", "the schema"),
        ("context", "migrating"),
        ("tags[0]", "db"),
        ("tags[1]", "ops"),
        ("category", "knowledge"),
    ]
    assert list(free_text.texts(event, ("ledger",))) == [("block_id", "blk_0"), ("session_id", "ses_1")]


def test_nested_text_is_reached_keys_included_and_numbers_skipped() -> None:
    event = TaskCreated(
        task_id="t-1",
        task_type="task",
        title="Refresh",
        status="ready",
        role="dev",
        dna={"notes": ["first", {"deep": "second"}], "count": 3, "done": True},
    )
    assert list(free_text.texts(event)) == [
        ("title", "Refresh"),
        ("dna.notes (name)", "notes"),
        ("dna.notes[0]", "first"),
        ("dna.notes[1].deep (name)", "deep"),
        ("dna.notes[1].deep", "second"),
        ("dna.count (name)", "count"),
        ("dna.done (name)", "done"),
        ("task_id", "t-1"),
    ]


def test_rewrite_event_builds_a_new_event_only_when_a_text_changed() -> None:
    event = ParameterChecked(
        tool="manage_task",
        action="update",
        base_level="warning",
        level="warning",
        outcome="allowed",
        passed=False,
        allowed=True,
        invalid={"work_notes": "work_notes: too short"},
    )
    assert free_text.rewrite_event(event, lambda path, text: text) is event
    changed = free_text.rewrite_event(event, lambda path, text: text.upper() if path == "invalid.work_notes" else text)
    assert isinstance(changed, ParameterChecked) and changed is not event
    assert changed.invalid == {"work_notes": "WORK_NOTES: TOO SHORT"} and changed.tool == "manage_task"
    assert event.invalid == {"work_notes": "work_notes: too short"}  # the original is untouched (frozen)
