"""The field types of the enforcement schemas (seed 004, sections 3 and 5.2): placeholder detection, and prose,
paths, JSON objects, ids and titles that validate themselves; pure, no I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Annotated, Any, Final

from pydantic import AfterValidator, Field

from ledger.core.errors import InvalidInput
from ledger.workflow import decisions as wf

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


def _prose(min_words: int, too_brief: str, subject: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if problem := placeholder_problem(value):
            # seed 5.2's text ("Work notes contain placeholder text"), then which placeholder and what to do
            detail = problem.removeprefix("placeholder text").strip()
            raise ValueError(f"{subject} placeholder text {detail} - replace it with the real content")
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
        raise ValueError(f"Invalid file path: {value} ({reason}); list paths relative to the repository root")
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


def _text(min_words: int, too_brief: str, subject: str) -> AfterValidator:
    return AfterValidator(_prose(min_words, too_brief, subject))


WorkNotes = Annotated[
    str,
    Field(min_length=10, max_length=1000),
    _text(3, "Work notes too brief - describe what you did", "Work notes contain"),
]
ProgressText = Annotated[
    str,
    Field(min_length=10, max_length=500),
    _text(3, "Progress too brief - say what concretely moved forward", "Progress contains"),
]
TestingNotes = Annotated[
    str,
    Field(min_length=10, max_length=1000),
    _text(3, "Testing notes too brief - say what was tested and how", "Testing notes contain"),
]
Description = Annotated[
    str,
    Field(min_length=20, max_length=2000),
    _text(3, "Description too brief - say what the task is for", "Description contains"),
]
InsightText = Annotated[
    str, Field(min_length=10, max_length=1000), _text(3, "Insight too brief - say what was learned", "Insight contains")
]
Blocker = Annotated[
    str,
    Field(min_length=10, max_length=500),
    _text(3, "Blocker too brief - say what blocks the work", "Blocker contains"),
]
CompletionSummary = Annotated[
    str,
    Field(min_length=20, max_length=2000),
    _text(5, "Summary too brief - provide more detail", "Completion summary contains"),
    AfterValidator(_summary_quality),
]
RelativePath = Annotated[str, AfterValidator(_relative_path)]
Paths = Annotated[list[RelativePath], Field(max_length=MAX_PATHS)]
JsonObject = Annotated[dict[str, Any], AfterValidator(_json_object)]
NonEmptyJsonObject = Annotated[dict[str, Any], Field(min_length=1), AfterValidator(_json_object)]
Identifier = Annotated[str, AfterValidator(_identifier)]
Title = Annotated[str, AfterValidator(_title)]
Name = Annotated[str, Field(max_length=64, pattern=r"^[a-z][a-z0-9_-]*$")]  # a workflow type, role or status
