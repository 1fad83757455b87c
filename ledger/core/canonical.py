"""Canonical JSON and the one timestamp format that the hash chain is computed over."""

import datetime as _dt
import json
from typing import Any

from ledger.core.errors import InvalidInput

_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def canonical_json(value: Any) -> str:
    """Serialise ``value`` with sorted keys, no whitespace and real UTF-8 (no ``\\u`` escapes)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def format_ts(moment: _dt.datetime) -> str:
    """Render an aware datetime as fixed-width UTC text (``2026-01-31T12:00:00.000000Z``).

    The fixed width makes the text sort in time order, so stores compare it as plain text.
    """
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware (UTC)")
    return moment.astimezone(_dt.UTC).strftime(_TS_FORMAT)


def parse_ts(text: str) -> _dt.datetime:
    """Parse text written by :func:`format_ts` (or any ISO 8601 time with an offset) to aware UTC."""
    moment = _dt.datetime.fromisoformat(text)  # Python 3.11+ reads the trailing "Z"
    if moment.tzinfo is None:
        raise ValueError(f"timestamp {text!r} has no UTC offset; send e.g. 2026-01-31T12:00:00Z")
    return moment.astimezone(_dt.UTC)


def require_utf8(text: str, what: str) -> str:
    """Refuse text that has no UTF-8 form (lone surrogates, which JSON parsers let through)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"the {what} contains a lone surrogate, which is not valid Unicode text",
            "send well-formed UTF-8 text (pair or remove the \\uD800-\\uDFFF escapes)",
        ) from exc
    return text
