"""Active hours measured from a ledger (on the in-memory store: a fold of its sessions): overlapping sessions once,
idle gaps and holidays not at all."""

from __future__ import annotations

import datetime as _dt

import pytest
from freezegun import freeze_time

from ledger.service import Actor
from tests.conftest import MEMORY, LedgerFactory

T0 = _dt.datetime(2026, 5, 4, 9, 0, tzinfo=_dt.UTC)
A, B = Actor("a", "mcp"), Actor("b", "mcp")


def test_overlapping_sessions_count_once_and_a_weeks_holiday_adds_nothing(make_ledger: LedgerFactory) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(MEMORY)
        first = ledger.clock_in(A, "dev").session_id  # 09:00
        clock.tick(_dt.timedelta(hours=1))
        second = ledger.clock_in(B, "dev").session_id  # 10:00
        clock.tick(_dt.timedelta(hours=1))
        ledger.clock_out(A, first)  # 11:00
        clock.tick(_dt.timedelta(hours=1))
        ledger.clock_out(B, second)  # 12:00: the union is 09:00-12:00
        before_holiday = ledger.active_hours()
        clock.tick(_dt.timedelta(days=7))
        after_holiday = ledger.active_hours()
        third = ledger.clock_in(A, "dev").session_id
        clock.tick(_dt.timedelta(hours=2))
        ledger.search(A, third, "anything")  # never clocked out: counts to its last event + 30 min idle
        clock.tick(_dt.timedelta(hours=5))
        total = ledger.active_hours()
        as_of_mid_morning = ledger.active_hours(as_of=T0 + _dt.timedelta(hours=1, minutes=30))
    assert before_holiday == pytest.approx(3.0)
    assert after_holiday == pytest.approx(3.0)
    assert total == pytest.approx(3.0 + 2.5)
    # As of 10:30 neither session had clocked out: each counts to its last event (09:00, 10:00) + 30 min idle.
    assert as_of_mid_morning == pytest.approx(1.0)
