"""A small aged memory shared by the adapter tests: the constitution, one faded block and one kept block."""

from __future__ import annotations

import datetime as _dt

from freezegun import freeze_time

from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory

T0 = _dt.datetime(2026, 5, 4, 9, 0, tzinfo=_dt.UTC)


def aged(make_ledger: LedgerFactory, who: Actor, url: str | None = None) -> tuple[Ledger, str, str]:
    """Constitution, an observation and a standard block, then a 100-active-hour session (in the past).

    The observation (EPHEMERAL, λ 0.05) has decayed below the archive threshold; the standard block has not.
    Returns the ledger and the faded and kept block ids.
    """
    with freeze_time(T0) as clock:
        ledger = make_ledger(url)
        ledger.setup_memory(who)
        sid = ledger.clock_in(who, "dev").session_id
        faded = ledger.remember(who, "The CI runner was slow on Tuesday.", ["project/ci"], sid, "observation")
        kept = ledger.remember(who, "Migrations run with alembic.", ["project/db"], sid)
        clock.tick(_dt.timedelta(hours=100))
        ledger.clock_out(who, sid)
    return ledger, faded.block_id, kept.block_id
