"""The one clock. Every timestamp in the ledger comes from :func:`now`, so freezegun moves all of it."""

import datetime as _dt
from collections.abc import Callable

Clock = Callable[[], _dt.datetime]


def now() -> _dt.datetime:
    """Return the current time as an aware UTC datetime."""
    return _dt.datetime.now(_dt.UTC)
