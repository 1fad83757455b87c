"""Tool arguments that fail validation, explained: each problem names the argument and says what to send, in words
taken from the tool's input schema — never pydantic's raw text or its documentation links.

Pure: a validation error and a schema in, a message out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

MAX_PROBLEMS = 5  # a call with more problems than this is told the first ones and how many more
_VALUE_ERROR = re.compile(r"^(Value|Assertion) error, ")


def clean(text: str) -> str:
    """A docstring as clean text: each paragraph on one line, no indentation, paragraphs apart by a blank line."""
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


def explain(error: ValidationError, schema: Mapping[str, Any]) -> str:
    """One message for every problem of ``error``, a validation of arguments against the input ``schema``."""
    problems = list(dict.fromkeys(_problem(e, schema) for e in error.errors(include_url=False)))
    shown = problems[:MAX_PROBLEMS]
    more = f"; and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
    return f"invalid arguments: {'; '.join(shown)}{more}"


def _problem(err: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    loc: Sequence[Any] = err.get("loc", ())
    kind = err.get("type", "")
    properties: Mapping[str, Any] = schema.get("properties", {})
    if not loc:  # a check of the whole call, e.g. text the ledger cannot store: its message says it all
        return _VALUE_ERROR.sub("", str(err.get("msg", "")))
    name = ".".join(str(part) for part in loc)
    if kind == "extra_forbidden":
        takes = f"send only {_names(properties)}" if properties else "this tool takes no arguments: send none"
        return f"unknown argument '{name}': {takes}"
    wanted = _at(properties, loc)
    send = f"send {expected(wanted)}" if wanted else "see the tool's input schema"
    said = wanted.get("description") if wanted else None
    about = f" — {said}" if said else ""
    if kind == "missing":
        return f"argument '{name}' is required: {send}{about}"
    msg = _VALUE_ERROR.sub("", str(err.get("msg", "is not valid")))
    return f"argument '{name}' is not valid ({msg[:1].lower()}{msg[1:]}): {send}{about}"


def _names(properties: Mapping[str, Any]) -> str:
    names = [f"'{n}'" for n in properties]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _at(properties: Mapping[str, Any], loc: Sequence[Any]) -> dict[str, Any] | None:
    """The schema of the argument at ``loc`` (a name, then list indexes or object keys)."""
    found = properties.get(str(loc[0]))
    for part in loc[1:]:
        if found is None:
            return None
        found = _concrete(found)
        found = found.get("items") if isinstance(part, int) else found.get("additionalProperties")
        if not isinstance(found, dict):
            return None
    return dict(found) if isinstance(found, dict) else None


def _concrete(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The non-null branch of ``T | None`` (with the description of the whole), else the schema itself."""
    branches = [b for b in schema.get("anyOf", []) if b.get("type") != "null"]
    if len(branches) == 1:
        return {**schema, **branches[0]}
    return dict(schema)


def expected(schema: Mapping[str, Any]) -> str:
    """What a value of ``schema`` is, in words: 'an integer from 1 to 100', 'one of 'self' or 'task''..."""
    s = _concrete(schema)
    optional = any(b.get("type") == "null" for b in schema.get("anyOf", []))
    words = _words(s)
    return f"{words}, or null to leave it out" if optional else words


def _words(s: Mapping[str, Any]) -> str:
    if "enum" in s:
        values = [repr(v) for v in s["enum"]]
        return values[0] if len(values) == 1 else f"one of {', '.join(values)}"
    kind = s.get("type")
    if kind == "string":
        return _text(s)
    if kind in ("integer", "number"):
        return ("an integer" if kind == "integer" else "a number") + _range(s.get("minimum"), s.get("maximum"), "")
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        items = s.get("items")
        each = f", each {_words(_concrete(items))}" if isinstance(items, dict) and items.get("type") else ""
        return "a list" + _range(s.get("minItems"), s.get("maxItems"), "items") + each
    if kind == "object":
        return "a JSON object"
    return "a value of the type the schema gives"


def _range(low: Any, high: Any, unit: str) -> str:
    tail = f" {unit}" if unit else ""
    if low is not None and high is not None:
        return f" of {low:,} to {high:,}{tail}" if unit else f" from {low} to {high}"
    if high is not None:
        return f" of at most {high:,}{tail}" if unit else f" of at most {high}"
    if low is not None and low > 0:
        return f" of at least {low:,}{tail}" if unit else f" of at least {low}"
    return ""


def _text(s: Mapping[str, Any]) -> str:
    low, high = s.get("minLength"), s.get("maxLength")
    if low == 1 and high is None:
        return "a non-empty text" + _pattern(s)
    return "a text" + _range(low, high, "characters") + _pattern(s)


def _pattern(s: Mapping[str, Any]) -> str:
    return f" matching {s['pattern']}" if "pattern" in s else ""
