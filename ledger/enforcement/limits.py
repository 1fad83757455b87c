"""Hard size limits of the managed tools' parameters, the same at every enforcement level (issue 10, hole 8).

Enforcement levels decide about the *quality* of what an agent reports (``soft`` records a thin report,
``warning`` lets it through with a warning); they never decide about size. Everything an allowed call sends is
stored for ever in the hash-chained log, so every text, list and object parameter has a hard maximum — about
four times its quality maximum, so the quality rules always speak first — and a call over any of them is
refused at every level, ``disabled`` included. The refused check is recorded; the oversized value is not: the
messages here name the parameter, its size and the limit, never its content.

Pure: no I/O. ``ledger.enforcement.decide_oversized`` turns the problems into the refusal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

MAX_PARAMS: Final = 32  # parameters in one call (the largest schema has 9 besides action and session_id)
MAX_NAME_CHARS: Final = 64  # characters of a parameter name
MAX_CALL_BYTES: Final = 512_000  # the whole call as JSON: bounds any combination (a call at every quality maximum fits)
MAX_OTHER_BYTES: Final = 4_000  # a parameter no schema declares (refused anyway unless enforcement is disabled)
MAX_MESSAGE_CHARS: Final = 1_000  # a message recorded in a ParameterChecked event
MAX_ID_CHARS: Final = 256  # ids and names (task_id, role, status, category, ...): quality maximum 64


@dataclass(frozen=True)
class Limit:
    """The hard maximum of one parameter: characters of a text, items (and characters per item) of a list, or
    bytes of an object's JSON. ``instead`` says what to send instead of an oversized value."""

    kind: Literal["text", "list", "object", "scalar"]
    chars: int = 0  # text: characters; list: characters per item
    items: int = 0  # list: items
    bytes: int = 0  # object or scalar: bytes of its JSON
    instead: str = ""

    @property
    def budget(self) -> int:
        """Bytes of JSON a value of this parameter may take whatever its type (UTF-8: up to 4 bytes a char)."""
        if self.kind == "text":
            return 4 * self.chars + 2
        if self.kind == "list":
            return self.items * (4 * self.chars + 3) + 2
        return self.bytes

    def describe(self) -> str:
        """The limit in words, e.g. 'at most 4,000 characters'."""
        if self.kind == "text":
            return f"at most {self.chars:,} characters"
        if self.kind == "list":
            return f"at most {self.items:,} items of at most {self.chars:,} characters each"
        return f"at most {self.bytes:,} bytes of JSON"


_KEEP_IN_FILES = "put long output (logs, diffs, transcripts) in a file of the repository and name the file instead"


def _text(chars: int, what: str = "summarise it") -> Limit:
    return Limit("text", chars=chars, instead=f"{what} in at most {chars:,} characters; {_KEEP_IN_FILES}")


def _list(items: int, chars: int) -> Limit:
    return Limit(
        "list", chars=chars, items=items, instead=f"send at most {items:,} items (the most relevant ones), each short"
    )


def _object(size: int) -> Limit:
    return Limit(
        "object",
        bytes=size,
        instead=f"send at most {size:,} bytes of JSON; store large data in a file of the repository and send its path",
    )


_NAME = Limit("text", chars=MAX_ID_CHARS, instead="send a short name or id")
_SCALAR = Limit("scalar", bytes=32, instead="send a single number or true/false")

LIMITS: Final[Mapping[str, Limit]] = {
    # identifying fields and names (quality maximum 64; titles 200)
    "task_id": _NAME,
    "subtask_id": _NAME,
    "task_type": _NAME,
    "role": _NAME,
    "status": _NAME,
    "category": _NAME,
    "importance": _NAME,
    "title": Limit("text", chars=800, instead="send a one-line title"),
    # texts: four times the quality maximum
    "description": _text(8_000),
    "work_notes": _text(4_000),
    "progress_made": _text(2_000),
    "next_steps": _text(2_000),
    "completion_summary": _text(8_000),
    "testing_notes": _text(4_000),
    "insight": _text(4_000),
    # lists: four times the quality item count; paths twice their 1,024-character validity limit
    "files_modified": _list(400, 2_048),
    "files_created": _list(400, 2_048),
    "blockers": _list(80, 2_000),
    # objects: four times the 20,000-byte quality maximum
    "data": _object(80_000),
    "patterns_identified": _object(80_000),
    "dna": _object(80_000),
    # scalars
    "propagate_changes": _SCALAR,
    "percent_complete": _SCALAR,
}
OTHER: Final = Limit("object", bytes=MAX_OTHER_BYTES, instead="send only the parameters the tool declares")


def limit_for(name: str) -> Limit:
    """The hard limit of a parameter (:data:`OTHER` for one no schema declares)."""
    return LIMITS.get(name, OTHER)


def _json_bytes(value: Any) -> int | None:
    """Bytes of ``value`` as JSON, or None when it is not plain JSON of bounded size (e.g. a 5,000-digit int)."""
    try:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError):
        return None


def clip(text: str, chars: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to ``chars`` characters (marked with …) so a recorded message stays small."""
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _name(name: Any) -> str:
    text = str(name)
    return text if len(text) <= MAX_NAME_CHARS else clip(text, MAX_NAME_CHARS)


def _problem(value: Any, limit: Limit) -> str | None:
    """The size of ``value`` in words when it is over ``limit``, else None."""
    if value is None:
        return None
    if limit.kind == "text" and isinstance(value, str):
        return None if len(value) <= limit.chars else f"{len(value):,} characters"
    if limit.kind == "list" and isinstance(value, list):
        if len(value) > limit.items:
            return f"{len(value):,} items"
        for i, item in enumerate(value):
            size = len(item) if isinstance(item, str) else _json_bytes(item)
            if size is None or size > limit.chars:
                return f"item [{i}] has {'an unbounded size' if size is None else f'{size:,} characters'}"
        return None
    size = _json_bytes(value)
    if size is None:
        return "not plain JSON of bounded size"
    if limit.kind == "object" and isinstance(value, dict):
        return None if size <= limit.bytes else f"{size:,} bytes of JSON"
    return None if size <= limit.budget else f"{size:,} bytes of JSON"


def oversized(params: Mapping[str, Any]) -> dict[str, str]:
    """Every parameter over its hard limit, as ``{name: message}``; empty when the call is within every limit.

    Messages say ``"<name>: <size>; hard limit at every enforcement level: <limit>"`` and never quote the value.
    Names longer than :data:`MAX_NAME_CHARS` are clipped.
    """
    if len(params) > MAX_PARAMS:
        return {"params": f"params: {len(params):,} parameters; hard limit: at most {MAX_PARAMS} in one call"}
    problems: dict[str, str] = {}
    for key, value in params.items():
        name = _name(key)
        if (chars := len(str(key))) > MAX_NAME_CHARS:
            problems[name] = f"{name}: a name of {chars:,} characters; hard limit: at most {MAX_NAME_CHARS} characters"
            continue
        limit = limit_for(name)
        if (size := _problem(value, limit)) is not None:
            problems[name] = f"{name}: {size}; hard limit at every enforcement level: {limit.describe()}"
    if not problems:
        total = _json_bytes(dict(params))
        if total is None or total > MAX_CALL_BYTES:
            what = "not plain JSON of bounded size" if total is None else f"{total:,} bytes of JSON"
            problems["params"] = f"params: {what} in all; hard limit: at most {MAX_CALL_BYTES:,} bytes for one call"
    return problems


def hint(problems: Mapping[str, str]) -> str:
    """One bullet per oversized parameter: its size, the limit, and what to send instead."""
    lines = ["Parameters over the hard size limits (the same at every enforcement level):"]
    for name, message in problems.items():
        instead = "send fewer or shorter parameters" if name == "params" else limit_for(name).instead or "send less"
        lines.append(f"• {message} — {instead}")
    return "\n".join(lines)
