"""Parameter schemas, placeholder checks, hints, examples and validation for enforcement (seed 004, sections 3,
5 and 6): pure, no I/O. ``ledger.enforcement`` builds rules, levels and decisions on top; see its docstring
for the choices made where the seed is silent.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ledger.core.errors import InvalidInput
from ledger.workflow import decisions as wf

DEFAULT_RULES: Final = "enforcement_rules.yaml"
DOCS: Final = "docs/ENFORCEMENT.md"
ENVELOPE: Final = frozenset({"action", "session_id"})  # carried by every tool call, not schema fields
MAX_PATHS: Final = 100
MAX_PATH_CHARS: Final = 1024
MAX_JSON_BYTES: Final = 20_000
MAX_KEYS: Final = 100


# --- placeholders (seed 5.2) ----------------------------------------------------------------------------------

_MARKER = re.compile(r"<\s*(?:required|invalid)\s*:", re.I)
_PLACEHOLDER = re.compile(
    r"\b(?:todo|tbd|tbc|fixme|xxx+|placeholder|lorem\s+ipsum|n/a)\b|\.{3,}|…"
    r"|[<\[{]\s*(?:insert|describe|fill\s+in|enter|your)\b[^<>\[\]{}]{0,200}[>\]}]",
    re.I,
)
_REPEATED_CHAR = re.compile(r"([^\s\d])\1{5,}")
_WORDS = re.compile(r"\w+")
_GENERIC: Final = frozenset(
    {"a", "an", "and", "as", "above", "bit", "bits", "bug", "bugs", "change", "changed", "changes", "code"}
    | {"completed", "did", "done", "etc", "few", "finished", "fix", "fixed", "fixes", "it", "made", "minor", "misc"}
    | {"more", "other", "same", "see", "several", "small", "some", "stuff", "the", "thing", "things", "tweak"}
    | {"tweaks", "update", "updated", "updates", "various", "whatever", "work"}
    | {"all", "also", "at", "be", "been", "by", "for", "from", "in", "is", "just", "now", "of", "on", "out", "so"}
    | {"that", "this", "to", "up", "was", "were", "with"}
)
_TITLE_PLACEHOLDERS: Final = frozenset({"todo", "tbd", "n/a", "...", "…", "placeholder", "untitled", "xxx"})


def placeholder_problem(text: str) -> str | None:
    """Say why ``text`` is placeholder text (seed 5.2 and obvious equivalents), or None when it is not."""
    if match := _MARKER.search(text):
        return f"placeholder text (the unfilled correction template {match.group(0)!r}…)"
    if match := _PLACEHOLDER.search(text):
        return f"placeholder text ({match.group(0)!r})"
    if match := _REPEATED_CHAR.search(text):
        return f"placeholder text (repeated characters {match.group(0)!r})"
    words = [w.lower() for w in _WORDS.findall(text)]
    if len(words) >= 3 and len(set(words)) == 1:
        return f"placeholder text (the word {words[0]!r} repeated)"
    if words and all(w in _GENERIC for w in words):
        return f"placeholder text (only generic words like {' '.join(words[:4])!r}, nothing specific)"
    return None


# --- field types ----------------------------------------------------------------------------------------------


def _prose(min_words: int, too_brief: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if problem := placeholder_problem(value):
            raise ValueError(f"contains {problem} - replace it with the real content")
        words = len(value.split())
        if words < min_words:
            raise ValueError(f"{too_brief} (at least {min_words} words, got {words})")
        return value

    return check


_SENTENCE_END = re.compile(r"[.!?]+(?:\s+|$)|\n+")
_ACCOMPLISHED = re.compile(
    r"\b(?:implemented|completed|tested|fixed|added|updated|created|removed|deleted|refactored|rewrote|"
    r"rewritten|wrote|written|built|documented|resolved|replaced|migrated|renamed|moved|configured|deployed|"
    r"merged|verified|improved|extended|reworked|optimi[sz]ed|upgraded|integrated)\b",
    re.I,
)


def _summary_quality(value: str) -> str:
    sentences = [s for s in _SENTENCE_END.split(value) if _WORDS.search(s)]
    if len(sentences) < 2:
        raise ValueError("Completion summary should be multiple sentences (what was done, and how it was checked)")
    if not _ACCOMPLISHED.search(value):
        raise ValueError(
            "Completion summary should describe what was accomplished (say what was implemented, fixed, added, "
            "tested, ...)"
        )
    return value


def _relative_path(value: str) -> str:
    if not value:
        raise ValueError("Invalid file path: empty")
    if len(value) > MAX_PATH_CHARS:
        raise ValueError(f"Invalid file path: longer than {MAX_PATH_CHARS} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError(f"Invalid file path: {value!r} contains a control character such as NUL")
    path = value.replace("\\", "/")
    reason = None
    if path.startswith("/") or re.match(r"[A-Za-z]:", path):
        reason = "is absolute"
    elif re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", path):
        reason = "is a URL"
    elif path.startswith("~"):
        reason = "starts in a home directory ('~')"
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if reason is None and ".." in parts:
        reason = "leaves its directory ('..')"
    if reason is None and not parts:
        reason = "names no file"
    if reason is not None:
        raise ValueError(f"Invalid file path: {value!r} {reason}; list paths relative to the repository root")
    return "/".join(parts)


def _json_object(value: dict[str, Any]) -> dict[str, Any]:
    if len(value) > MAX_KEYS:
        raise ValueError(f"has {len(value)} keys; at most {MAX_KEYS} allowed")
    if any(not key.strip() for key in value):
        raise ValueError("keys must be non-empty names")
    try:
        size = len(json.dumps(value, allow_nan=False, ensure_ascii=False).encode())
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"is not plain JSON ({exc})") from None
    if size > MAX_JSON_BYTES:
        raise ValueError(f"is {size} bytes of JSON; at most {MAX_JSON_BYTES} allowed")
    return value


def _identifier(value: str) -> str:
    try:
        return wf.check_task_id(value)
    except InvalidInput:
        raise ValueError(
            f"{value!r} is not a valid id; use a slug of lower-case letters, digits, '.', '_' or '-' (at most 64)"
        ) from None


def _title(value: str) -> str:
    try:
        title = wf.check_title(value)
    except InvalidInput as exc:
        raise ValueError(f"{exc.message}; {exc.hint}") from None
    if _MARKER.search(title) or title.lower() in _TITLE_PLACEHOLDERS:
        raise ValueError(f"{title!r} is placeholder text; name the task")
    return title


def _text(min_words: int, too_brief: str) -> AfterValidator:
    return AfterValidator(_prose(min_words, too_brief))


WorkNotes = Annotated[
    str, Field(min_length=10, max_length=1000), _text(3, "Work notes too brief - describe what you did")
]
ProgressText = Annotated[
    str, Field(min_length=10, max_length=500), _text(3, "Progress too brief - say what concretely moved forward")
]
TestingNotes = Annotated[
    str, Field(min_length=10, max_length=1000), _text(3, "Testing notes too brief - say what was tested and how")
]
Description = Annotated[
    str, Field(min_length=20, max_length=2000), _text(3, "Description too brief - say what the task is for")
]
InsightText = Annotated[
    str, Field(min_length=10, max_length=1000), _text(3, "Insight too brief - say what was learned")
]
Blocker = Annotated[str, Field(min_length=10, max_length=500), _text(3, "Blocker too brief - say what blocks the work")]
CompletionSummary = Annotated[
    str,
    Field(min_length=20, max_length=2000),
    _text(5, "Summary too brief - provide more detail"),
    AfterValidator(_summary_quality),
]
RelativePath = Annotated[str, AfterValidator(_relative_path)]
Paths = Annotated[list[RelativePath], Field(max_length=MAX_PATHS)]
JsonObject = Annotated[dict[str, Any], AfterValidator(_json_object)]
NonEmptyJsonObject = Annotated[dict[str, Any], Field(min_length=1), AfterValidator(_json_object)]
Identifier = Annotated[str, AfterValidator(_identifier)]
Title = Annotated[str, AfterValidator(_title)]
Name = Annotated[str, Field(max_length=64, pattern=r"^[a-z][a-z0-9_-]*$")]  # a workflow type, role or status


# --- schemas (seed 3) -----------------------------------------------------------------------------------------


class ContextParams(BaseModel):
    """Base of every schema: unknown fields rejected, no type coercion, surrounding whitespace stripped.

    ``CALL_FIELDS`` are the identifying fields the tool needs; every other field is a context parameter.
    """

    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True, frozen=True)
    CALL_FIELDS: ClassVar[frozenset[str]] = frozenset({"task_id"})


class TaskCreateParams(ContextParams):
    """``manage_task(action="create")``: the workflow's ``task_create`` plus a description."""

    CALL_FIELDS: ClassVar[frozenset[str]] = frozenset({"task_id", "title", "task_type", "role", "status", "dna"})
    task_id: Identifier
    title: Title
    description: Description = Field(description="What the task is for and what done looks like")
    task_type: Name = "task"
    role: Name | None = None
    status: Name | None = None
    dna: JsonObject | None = None


class WorkUpdateParams(ContextParams):
    """``manage_task(action="update")``: what was done and what moved forward."""

    task_id: Identifier
    work_notes: WorkNotes = Field(description="Description of work performed")
    progress_made: ProgressText = Field(description="Specific progress achieved")
    files_modified: Paths = Field(default_factory=list, description="List of files modified")
    blockers: Annotated[list[Blocker], Field(max_length=20)] = Field(default_factory=list)


class CompletionParams(ContextParams):
    """``manage_task(action="complete")``: a summary of the finished work and how it was checked."""

    task_id: Identifier
    completion_summary: CompletionSummary = Field(description="Detailed summary of completed work")
    testing_notes: TestingNotes | None = Field(None, description="Testing performed and results")
    files_created: Paths = Field(default_factory=list, description="New files created")
    files_modified: Paths = Field(default_factory=list, description="Files modified")
    patterns_identified: JsonObject = Field(default_factory=dict, description="Reusable patterns discovered")


class ContextUpdateParams(ContextParams):
    """``manage_context(action="update")``: set fields of the task's context (seed 4.1: ``data``)."""

    task_id: Identifier
    data: NonEmptyJsonObject
    propagate_changes: bool = False


class InsightParams(ContextParams):
    """``manage_context(action="add_insight")``: something learned that others should know."""

    task_id: Identifier
    insight: InsightText
    category: Literal["technical", "pattern", "risk", "decision", "lesson"] = "technical"
    importance: Literal["low", "medium", "high", "critical"] = "medium"


class ProgressParams(ContextParams):
    """``manage_context(action="add_progress")``: a progress note on the task."""

    task_id: Identifier
    progress_made: ProgressText
    next_steps: ProgressText | None = None
    percent_complete: Annotated[int, Field(ge=0, le=100)] | None = None


class SubtaskCreateParams(ContextParams):
    """``manage_subtask(action="create")``: a subtask of ``task_id``."""

    CALL_FIELDS: ClassVar[frozenset[str]] = frozenset({"task_id", "subtask_id", "title"})
    task_id: Identifier
    subtask_id: Identifier
    title: Title
    description: Description


class SubtaskUpdateParams(ContextParams):
    """``manage_subtask(action="update")``: the task update's parameters, for one subtask."""

    CALL_FIELDS: ClassVar[frozenset[str]] = frozenset({"task_id", "subtask_id"})
    task_id: Identifier
    subtask_id: Identifier
    work_notes: WorkNotes
    progress_made: ProgressText
    files_modified: Paths = Field(default_factory=list)
    blockers: Annotated[list[Blocker], Field(max_length=20)] = Field(default_factory=list)


class SubtaskCompletionParams(ContextParams):
    """``manage_subtask(action="complete")``: the task completion's parameters, for one subtask."""

    CALL_FIELDS: ClassVar[frozenset[str]] = frozenset({"task_id", "subtask_id"})
    task_id: Identifier
    subtask_id: Identifier
    completion_summary: CompletionSummary
    testing_notes: TestingNotes | None = None
    files_created: Paths = Field(default_factory=list)
    files_modified: Paths = Field(default_factory=list)
    patterns_identified: JsonObject = Field(default_factory=dict)


SCHEMAS: Final[Mapping[str, Mapping[str, type[ContextParams]]]] = {
    "manage_task": {"create": TaskCreateParams, "update": WorkUpdateParams, "complete": CompletionParams},
    "manage_context": {"update": ContextUpdateParams, "add_insight": InsightParams, "add_progress": ProgressParams},
    "manage_subtask": {
        "create": SubtaskCreateParams,
        "update": SubtaskUpdateParams,
        "complete": SubtaskCompletionParams,
    },
}


def context_fields(tool: str, action: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The (required, optional) context parameters of a tool/action's schema."""
    schema = SCHEMAS[tool][action]
    names = [n for n in schema.model_fields if n not in schema.CALL_FIELDS]
    return (
        tuple(n for n in names if schema.model_fields[n].is_required()),
        tuple(n for n in names if not schema.model_fields[n].is_required()),
    )


# --- hints, templates, examples (seed 6) ----------------------------------------------------------------------

PARAM_HINTS: Final[Mapping[str, str]] = {
    # seed 6.1, exact
    "work_notes": "Describe what work you performed (min 10 chars)",
    "progress_made": "Specify concrete progress achieved",
    "completion_summary": "Provide detailed summary of completed work (min 20 chars)",
    "testing_notes": "Describe testing performed and results",
    "files_modified": "List files you modified (e.g., ['src/app.py', 'tests/test_app.py'])",
    # ours
    "files_created": "List files you created (e.g., ['src/auth.py', 'docs/auth-api.md'])",
    "patterns_identified": "Name reusable patterns you discovered (e.g., {'retry': 'exponential backoff on 429'})",
    "blockers": "List what blocks the work, one item each (e.g., ['Waiting for the staging API key'])",
    "description": "Describe what the task is for and what done looks like (min 20 chars)",
    "data": "Send the context fields to set as an object (e.g., {'auth_strategy': 'JWT in httpOnly cookies'})",
    "propagate_changes": "true to pass the update on to dependent tasks, else false",
    "insight": "Describe what you learned that others should know (min 10 chars)",
    "category": "One of technical, pattern, risk, decision, lesson",
    "importance": "One of low, medium, high, critical",
    "next_steps": "Say what comes next (min 10 chars)",
    "percent_complete": "An integer from 0 to 100",
    "task_id": "The task's id, a slug such as 'task-123'",
    "subtask_id": "The subtask's id within its task, a slug such as 'sub-1'",
    "title": "A one-line title (at most 200 chars)",
    "task_type": "A task type of the workflow (default 'task')",
    "role": "A role of the workflow (default 'dev')",
    "status": "The status the task starts in (default 'ready')",
    "dna": "The task's initial DNA as an object",
}

TEMPLATES: Final[Mapping[str, str]] = {
    "work_notes": "describe the work performed, 10-1000 chars",
    "progress_made": "the concrete progress achieved, 10-500 chars",
    "completion_summary": "what was implemented, fixed or tested, in several sentences, 20-2000 chars",
    "testing_notes": "the tests run and their results, 10-1000 chars",
    "files_modified": "a list of relative paths, at most 100, e.g. ['src/app.py']",
    "files_created": "a list of relative paths, at most 100, e.g. ['src/auth.py']",
    "patterns_identified": "an object naming reusable patterns",
    "blockers": "a list of what blocks the work, each 10-500 chars",
    "description": "what the task is for and what done looks like, 20-2000 chars",
    "data": "an object of the context fields to set",
    "propagate_changes": "true or false",
    "insight": "what was learned, 10-1000 chars",
    "category": "technical, pattern, risk, decision or lesson",
    "importance": "low, medium, high or critical",
    "next_steps": "what comes next, 10-500 chars",
    "percent_complete": "an integer from 0 to 100",
    "task_id": "the task's id, e.g. 'task-123'",
    "subtask_id": "the subtask's id, e.g. 'sub-1'",
    "title": "a one-line title, at most 200 chars",
}

_TASK_UPDATE: Final[dict[str, Any]] = {
    "task_id": "task-123",
    "work_notes": "Implemented user authentication using JWT tokens",
    "progress_made": "Added login and logout endpoints with token validation",
    "files_modified": ["src/auth.py", "src/routes.py", "tests/test_auth.py"],
}
_TASK_COMPLETE: Final[dict[str, Any]] = {
    "task_id": "task-123",
    "completion_summary": "Successfully implemented JWT authentication with login, logout, and token refresh. "
    "All endpoints are tested and documented. Integration tests passing.",
    "testing_notes": "Added 15 unit tests and 5 integration tests. All passing with 95% coverage.",
    "files_created": ["src/auth.py", "docs/auth-api.md"],
}
_DESCRIPTION: Final = "Add JWT login and logout endpoints; done when both are tested and documented."
EXAMPLES: Final[Mapping[tuple[str, str], Mapping[str, Any]]] = {
    ("manage_task", "create"): {"task_id": "task-123", "title": "JWT authentication", "description": _DESCRIPTION},
    ("manage_task", "update"): _TASK_UPDATE,  # seed 6.1
    ("manage_task", "complete"): _TASK_COMPLETE,  # seed 6.1
    ("manage_context", "update"): {
        "task_id": "task-123",
        "data": {"auth_strategy": "JWT access tokens in httpOnly cookies, refresh tokens rotated"},
        "propagate_changes": False,
    },
    ("manage_context", "add_insight"): {
        "task_id": "task-123",
        "insight": "Token refresh must be serialised per user, or two tabs invalidate each other's tokens",
        "category": "pattern",
        "importance": "high",
    },
    ("manage_context", "add_progress"): {
        "task_id": "task-123",
        "progress_made": "Login endpoint returns signed tokens and rejects bad passwords",
        "next_steps": "Write the refresh endpoint and its tests",
        "percent_complete": 40,
    },
    ("manage_subtask", "create"): {
        "task_id": "task-123",
        "subtask_id": "sub-1",
        "title": "Token refresh endpoint",
        "description": "Add POST /auth/refresh that rotates the refresh token; done when tested.",
    },
    ("manage_subtask", "update"): {**_TASK_UPDATE, "subtask_id": "sub-1"},
    ("manage_subtask", "complete"): {**_TASK_COMPLETE, "subtask_id": "sub-1"},
}


def param_hint(param: str) -> str:
    """The hint for one parameter (seed 6.1 texts where the seed gives them)."""
    return PARAM_HINTS.get(param, f"Provide value for {param}")


def example(tool: str, action: str) -> dict[str, Any]:
    """A complete valid call of ``tool`` with ``action`` (including ``action``); ``{}`` when unknown."""
    call = EXAMPLES.get((tool, action))
    return {} if call is None else {"action": action, **json.loads(json.dumps(call))}


def documentation(tool: str, action: str) -> str:
    """Where the docs explain a tool/action: ``docs/ENFORCEMENT.md#<tool>-<action>``."""
    return f"{DOCS}#{tool}-{action}" if action in SCHEMAS.get(tool, {}) else DOCS


def _marker(kind: str, param: str) -> str:
    return f"<{kind}: {param} — {TEMPLATES.get(param, f'a value for {param}')}>"


# --- validation (seed 5) --------------------------------------------------------------------------------------


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
