"""Query parameter types shared by the REST routes: one definition, one documented bound."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Annotated, Any

from fastapi import Query
from pydantic import BeforeValidator

from ledger.core.limits import MAX_INT64

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]")


def _iso_time(value: Any) -> Any:
    # pydantic would read a bare number as seconds since 1970; the API documents (and means) an ISO 8601 time.
    if isinstance(value, str) and not _ISO.match(value):
        raise ValueError("send an ISO 8601 time with an offset, e.g. 2026-01-31T12:00:00Z")
    return value


AsOf = Annotated[
    _dt.datetime | None,
    BeforeValidator(_iso_time),
    Query(description="ISO 8601 time: the state as it was then (not with position)"),
]
Position = Annotated[
    int | None, Query(ge=0, le=MAX_INT64, description="log position: the state after that event (not with as_of)")
]
WindowStart = Annotated[
    _dt.datetime,
    BeforeValidator(_iso_time),
    Query(description="ISO 8601 time with an offset: the window's start (widened to its bucket's start)"),
]
WindowEnd = Annotated[
    _dt.datetime,
    BeforeValidator(_iso_time),
    Query(description="ISO 8601 time with an offset: the window's end (widened to its bucket's end)"),
]
