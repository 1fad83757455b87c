"""`with_changes` copies a frozen slotted state like `dataclasses.replace`, only faster."""

from __future__ import annotations

import dataclasses
import datetime as _dt

import pytest

from projections._copy import with_changes
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
