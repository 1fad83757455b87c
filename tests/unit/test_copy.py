"""`with_changes` copies a frozen slotted state like `dataclasses.replace`, only faster."""

from __future__ import annotations

import dataclasses
import datetime as _dt

import pytest

from projections._copy import changed_in_place, in_place, with_changes
from projections.compliance import AgentCompliance
from projections.sessions import SessionView

T0 = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)


def test_it_equals_dataclasses_replace_and_leaves_the_original_alone() -> None:
    view = SessionView(session_id="s", agent="a", role="dev", working_dir=None, focus=None, started_at=T0)
    changed = with_changes(view, searches=3, anchor_locked=True)
    assert changed == dataclasses.replace(view, searches=3, anchor_locked=True)
    assert (view.searches, view.anchor_locked) == (0, False)
    assert type(changed) is SessionView


def test_an_unknown_field_is_an_error() -> None:
    with pytest.raises(TypeError, match="no field"):
        with_changes(AgentCompliance(agent="a"), passes=1, bogus=2)


def test_the_copy_stays_frozen() -> None:
    copy = with_changes(AgentCompliance(agent="a"), passes=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        copy.passes = 2  # type: ignore[misc]


def test_changed_in_place_equals_with_changes_and_returns_the_same_object() -> None:
    view = SessionView(session_id="s", agent="a", role="dev", working_dir=None, focus=None, started_at=T0)
    expected = with_changes(view, searches=3, anchor_locked=True)
    changed = changed_in_place(view, searches=3, anchor_locked=True)
    assert changed is view
    assert changed == expected
    assert in_place(SessionView)(view, searches=4) is view and view.searches == 4


def test_changed_in_place_names_an_unknown_field_and_the_object_stays_frozen() -> None:
    state = AgentCompliance(agent="a")
    with pytest.raises(TypeError, match="no field"):
        changed_in_place(state, passes=1, bogus=2)
    assert state.passes == 0  # nothing was written
    changed_in_place(state, passes=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.passes = 2  # type: ignore[misc]
