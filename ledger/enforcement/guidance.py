"""What an enforcement answer offers the caller (seed 004, section 6): a hint and a template per parameter, a
complete example call per tool and action, and where the docs explain it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from ledger.enforcement.schemas import DOCS, SCHEMAS

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
    "propagate_changes": "true to record the update on the task's open subtasks too (the tasks that depend on it), "
    "else false",
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
