"""Validating a call's parameters against its schema (seed 004, section 5): one :class:`Validation` naming what is
missing, invalid or unknown, with hints, and the caller's call with templates in place of its mistakes."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from ledger.enforcement.guidance import PARAM_HINTS, _marker, param_hint
from ledger.enforcement.schemas import ENVELOPE, SCHEMAS, context_fields


@dataclass(frozen=True)
class Validation:
    """The verdict on one call's parameters. Every message in ``invalid_parameters`` starts with its name.

    ``call_errors`` names the problems that make the call impossible whatever the level (call fields, unknown
    parameters, a wrong ``action``); ``params`` is the caller's input, kept for the suggested correction.
    """

    tool: str
    action: str
    params: Mapping[str, Any]
    known: bool = True
    error: str = ""
    missing_parameters: tuple[str, ...] = ()
    invalid_parameters: Mapping[str, str] = field(default_factory=dict)
    unknown_parameters: tuple[str, ...] = ()
    call_errors: tuple[str, ...] = ()
    hint: str = ""
    suggestions: tuple[str, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return not self.error

    @property
    def call_ok(self) -> bool:
        return self.known and not self.call_errors


def _known_tools() -> str:
    return "; ".join(f"{tool} ({', '.join(actions)})" for tool, actions in SCHEMAS.items())


_TYPE_WORDS: Final = {
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "bool_type": "true or false",
    "int_type": "an integer",
}


_TOO_SHORT: Final = {"completion_summary": "Completion summary too short"}  # seed 5.2's text


def _json_type(value: Any) -> str:
    for kind, name in ((bool, "boolean"), (int, "number"), (float, "number"), (str, "string")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else "array" if isinstance(value, list) else "object"


def _message(err: Mapping[str, Any]) -> tuple[str, str]:
    loc = err.get("loc") or ("params",)
    name = str(loc[0])
    where = name + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:])
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    size = len(value.strip() if isinstance(value, str) else value) if isinstance(value, str | list | dict) else 0
    if kind == "value_error":
        detail = str(ctx.get("error", err["msg"]))
    elif kind == "string_too_short" and name in _TOO_SHORT:
        detail = f"{_TOO_SHORT[name]} (at least {ctx['min_length']} characters, got {size})"
    elif kind == "string_too_short":
        detail = f"must be at least {ctx['min_length']} characters (got {size})"
    elif kind == "string_too_long":
        detail = f"must be at most {ctx['max_length']} characters (got {size})"
    elif kind == "too_long":
        detail = f"has {ctx.get('actual_length')} items; at most {ctx.get('max_length')} allowed"
    elif kind == "too_short":
        detail = "must not be empty"
    elif kind == "string_pattern_mismatch":
        detail = f"must be a lower-case name such as 'task' (got {value!r})"
    elif kind == "literal_error":
        detail = f"must be one of {ctx.get('expected')} (got {value!r})"
    elif kind in ("greater_than_equal", "less_than_equal"):
        detail = f"must be {err['msg'].lower().removeprefix('input should be ')} (got {value!r})"
    elif kind in _TYPE_WORDS:
        detail = f"must be {_TYPE_WORDS[kind]} (got {_json_type(value)})"
    else:
        detail = str(err["msg"])
    return name, f"{where}: {detail}"


def validate(tool: str, action: str, params: Any, *, require: Iterable[str] = ()) -> Validation:
    """Check a call's parameters against the schema of ``tool``/``action``; never raises on JSON-like input.

    ``require`` names context parameters a rule requires beyond the schema's own (see :class:`Rule`).
    """
    actions = SCHEMAS.get(tool)
    given: Mapping[str, Any] = params if isinstance(params, Mapping) else {}
    if actions is None or action not in actions:
        if actions is None:
            error = f"unknown tool {tool!r}; known tools: {', '.join(SCHEMAS)}"
            bad_action = {}
        else:
            error = f"unknown action {action!r} for {tool}; known actions: {', '.join(actions)}"
            bad_action = {"action": f"action: {error}"}
        return Validation(
            tool, action, given, known=False, error=error, invalid_parameters=bad_action,
            call_errors=tuple(bad_action), hint=f"Call one of: {_known_tools()}",
        )  # fmt: skip
    schema = actions[action]
    fields = schema.model_fields
    extra = tuple(require)
    if bad := [n for n in extra if n not in fields or n in schema.CALL_FIELDS]:
        raise ValueError(f"{tool}.{action} has no context parameter {', '.join(bad)}")
    if not isinstance(params, Mapping):
        error = f"the parameters of {tool}.{action} must be a JSON object, not {_json_type(params)}"
        return Validation(tool, action, given, error=error, call_errors=("params",), hint=error)

    invalid: dict[str, str] = {}
    unknown: list[str] = []
    clean: dict[str, Any] = {}
    for key, value in params.items():
        name = str(key)
        if name == "action":
            if value != action:
                invalid[name] = f"action: {value!r} does not match the validated action {action!r}"
        elif name in ENVELOPE:
            continue
        elif not isinstance(key, str) or name not in fields:
            unknown.append(name)
            close = difflib.get_close_matches(name, list(fields), n=1)
            guess = f"did you mean {close[0]!r}? " if close else ""
            invalid[name] = f"{name}: not a parameter of {tool}.{action}; {guess}known: {', '.join(fields)}"
        elif value is not None and not (isinstance(value, str) and not value.strip()):
            clean[name] = value  # null or blank counts as not given

    required = {n for n, f in fields.items() if f.is_required()} | set(extra)
    missing = tuple(n for n in fields if n in required and n not in clean)
    data: dict[str, Any] = {}
    try:
        data = schema.model_validate(clean).model_dump()
    except ValidationError as exc:
        for err in exc.errors():
            if err["type"] != "missing":
                name, message = _message(err)
                invalid[name] = f"{invalid[name]}; {message}" if name in invalid else message
    if missing or invalid:
        data = {}
    call_errors = tuple(n for n in (*missing, *invalid) if n in schema.CALL_FIELDS or n == "action" or n in unknown)
    _, optional = context_fields(tool, action)
    suggestions = tuple(f"{n}: {param_hint(n)}" for n in optional if n not in clean and n not in extra)
    error = _summary(missing, invalid)
    return Validation(
        tool, action, dict(params), error=error, missing_parameters=missing, invalid_parameters=invalid,
        unknown_parameters=tuple(unknown), call_errors=call_errors, hint=_hint(missing, invalid),
        suggestions=suggestions, data=data,
    )  # fmt: skip


def _summary(missing: Iterable[str], invalid: Mapping[str, str]) -> str:
    parts = []
    if missing := list(missing):
        parts.append(f"missing required parameters: {', '.join(missing)}")
    if invalid:
        parts.append(f"invalid parameters: {', '.join(invalid)}")
    return "; ".join(parts)


def _hint(missing: Iterable[str], invalid: Mapping[str, str]) -> str:
    """Seed 6.1: one bullet per parameter, missing first."""
    lines = []
    if missing := list(missing):
        lines += ["Missing required parameters:", *(f"• {p}: {param_hint(p)}" for p in missing)]
    if invalid:
        lines.append("Invalid parameters:")
        lines += [f"• {m}" + (f" — {PARAM_HINTS[p]}" if p in PARAM_HINTS else "") for p, m in invalid.items()]
    return "\n".join(lines)


def correction_for(validation: Validation) -> dict[str, Any]:
    tool, action, given = validation.tool, validation.action, validation.params
    actions = SCHEMAS.get(tool)
    if actions is None:
        return {}
    if action not in actions:
        return {**given, "action": f"<invalid: action — one of {', '.join(actions)}>"}
    fixed: dict[str, Any] = {"action": action}
    fixed.update({k: v for k, v in given.items() if k in ENVELOPE and k != "action"})
    for name in actions[action].model_fields:
        if name in validation.invalid_parameters:
            fixed[name] = _marker("invalid", name)
        elif name in validation.missing_parameters:
            fixed[name] = _marker("required", name)
        elif name in given and given[name] is not None:
            fixed[name] = given[name]
    return fixed


def suggested_correction(tool: str, action: str, params: Any, *, require: Iterable[str] = ()) -> dict[str, Any]:
    """The caller's own call with every missing or invalid parameter replaced by a ``<required: …>`` or
    ``<invalid: …>`` template (which never validates) and unknown parameters dropped."""
    return correction_for(validate(tool, action, params, require=require))
