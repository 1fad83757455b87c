"""The rules of seed 001 a parsed proof must pass: IDENTITY (role, cognition, authority), CONTEXT against the
authoritative one, the TENSIONS (count, form, citations, placeholders) and a concrete COMMIT."""

from __future__ import annotations

import re

from ledger.anchor.proof.oa5 import (
    _SLOT,
    CONTEXT_FILE,
    FILES_GROSS_RATIO,
    FILES_SLACK,
    MAX_TENSIONS,
    TENSION_FORMAT,
    TIERS,
    UNKNOWN,
    AuthoritativeContext,
    CitationChecker,
    ParentChecker,
    _clip,
    _Findings,
    _is_blank_slot,
    _placeholder,
    _unquote,
)
from ledger.anchor.proof.parse import _parse_tension, _Tension

_AUTHORITY = re.compile(r"(RESPONSIBLE|DELEGATED)\s*\[(.*)\]")
_INTEGER = re.compile(r"[0-9]{1,9}")


# --- IDENTITY -----------------------------------------------------------------------------------------------


def _check_identity(values: dict[str, str], *, role: str, parent_exists: ParentChecker, f: _Findings) -> str | None:
    """Check ROLE (against the requested role), COGNITION and AUTHORITY; return the authority when it parses."""
    claimed = values.get("ROLE", "")
    if not claimed:
        f.fail("IDENTITY has no ROLE", f"Add ROLE::{_clip(role)} under IDENTITY.")
    elif claimed != role.strip():
        f.fail(
            f"IDENTITY shows ROLE::{_clip(claimed)} but the anchor is for role {_clip(role)}",
            f"Set ROLE::{_clip(role)} under IDENTITY.",
        )
    cognition = values.get("COGNITION", "")
    if not cognition:
        f.fail("IDENTITY has no COGNITION", "Add COGNITION:: under IDENTITY (e.g., COGNITION::LOGOS).")
    elif _SLOT.search(cognition) or _is_blank_slot(cognition):
        f.fail(f"COGNITION::{_clip(cognition)} is a placeholder", "Fill COGNITION:: with your cognition (e.g., LOGOS).")
    raw = values.get("AUTHORITY", "")
    fix = "Write AUTHORITY::RESPONSIBLE[scope] or AUTHORITY::DELEGATED[parent_session_id]."
    if not raw:
        f.fail("IDENTITY has no AUTHORITY", f"Add the line under IDENTITY: {fix}")
        return None
    match = _AUTHORITY.fullmatch(raw)
    if match is None:
        f.fail(f"AUTHORITY::{_clip(raw)} is neither RESPONSIBLE[scope] nor DELEGATED[parent_session]", fix)
        return None
    kind, scope = match.group(1), match.group(2).strip()
    authority = f"{kind}[{scope}]"
    if not scope or _is_blank_slot(scope) or _SLOT.search(scope):
        f.fail(f"AUTHORITY::{_clip(authority)} has no real scope in its brackets", fix)
        return authority
    if kind == "DELEGATED":
        parent = scope.split("::", 1)[0].strip()
        if not parent:
            f.fail(f"AUTHORITY::{_clip(authority)} names no parent session", fix)
        elif not parent_exists(parent):
            f.fail(
                f"AUTHORITY::DELEGATED names parent session '{_clip(parent)}', which the ledger does not know",
                "Name the session that delegated this work in DELEGATED[parent_session_id::task], "
                "or claim RESPONSIBLE[scope].",
            )
    return authority


# --- CONTEXT ------------------------------------------------------------------------------------------------


def _check_context(values: dict[str, str], context: AuthoritativeContext, f: _Findings) -> None:
    """Compare the candidate's CONTEXT with the authoritative one (the canonical proof uses only the latter)."""
    phase, branch = values.get("PHASE"), values.get("BRANCH")
    if not phase:
        f.fail("CONTEXT has no PHASE", f"Add PHASE::{context.phase or UNKNOWN} under CONTEXT.")
    elif context.phase is None:
        f.warn(f"PHASE::{_clip(phase)} cannot be checked: no phase was found in {CONTEXT_FILE}")
    elif phase.casefold() != context.phase.strip().casefold():
        f.fail(
            f"CONTEXT shows PHASE::{_clip(phase)} but {CONTEXT_FILE} shows {context.phase}",
            f"CONTEXT shows PHASE::{_clip(phase)} but {CONTEXT_FILE} shows {context.phase}. "
            "Update PHASE to match context.",
        )
    if not branch:
        f.fail("CONTEXT has no BRANCH", f"Add BRANCH::{context.branch or UNKNOWN} under CONTEXT.")
    elif context.branch is None:
        f.warn(f"BRANCH::{_clip(branch)} cannot be checked: git shows no branch")
    elif branch != context.branch:
        f.fail(
            f"CONTEXT shows BRANCH::{_clip(branch)} but git shows {context.branch}",
            f"CONTEXT shows BRANCH::{_clip(branch)} but git shows {context.branch}. Update BRANCH to match git.",
        )
    files = values.get("FILES")
    if not files:
        f.fail("CONTEXT has no FILES", f"Add FILES::{context.files} under CONTEXT (the git status file count).")
    elif not _INTEGER.fullmatch(files):
        f.fail(
            f"CONTEXT shows FILES::{_clip(files)}, which is not a whole number",
            f"Set FILES::{context.files} (the git status file count).",
        )
    elif files_grossly_off(int(files), context.files):
        f.fail(
            f"CONTEXT shows FILES::{int(files)} but git status shows {context.files} files: that is not a miscount "
            f"(more than {FILES_GROSS_RATIO}x off and more than {FILES_SLACK} apart)",
            f"Set FILES::{context.files} (the git status file count).",
        )
    elif abs(int(files) - context.files) > max(FILES_SLACK, context.files / 2):
        f.warn(
            f"CONTEXT shows FILES::{int(files)} but git status shows {context.files} files; "
            f"the canonical proof uses {context.files}"
        )


def files_grossly_off(claimed: int, actual: int) -> bool:
    """Seed 001: "warn on mismatch, fail on gross hallucination". Gross: more than double or less than half the
    real count, and more than :data:`FILES_SLACK` apart (so 0 vs 3 or 2 vs 5 stay warnings at most)."""
    ratio_off = claimed > FILES_GROSS_RATIO * actual or claimed * FILES_GROSS_RATIO < actual
    return ratio_off and abs(claimed - actual) > FILES_SLACK


# --- TENSIONS -----------------------------------------------------------------------------------------------


def _check_tensions(
    lines: list[str], *, tier: str, context: AuthoritativeContext, check_citation: CitationChecker, f: _Findings
) -> list[_Tension]:
    """Count, parse, cite-check and placeholder-check the tensions; return them parsed for rendering."""
    if tier in TIERS and len(lines) < TIERS[tier]:
        need, found = TIERS[tier], len(lines)
        wanted = f"TIER_{tier.upper()} requires {need} tension{'s' if need > 1 else ''}, found {found}"
        more = "Add another tension." if need - found == 1 else f"Add {need - found} more tensions."
        f.fail(wanted, f"{wanted}. {more}")
    if len(lines) > MAX_TENSIONS:
        f.fail(
            f"PROOF lists {len(lines)} tensions; at most {MAX_TENSIONS} are allowed",
            f"Keep the {MAX_TENSIONS} most relevant tensions.",
        )
    tensions = [_parse_tension(line) for line in lines[:MAX_TENSIONS]]
    seen: dict[str, int] = {}
    for n, t in enumerate(tensions, start=1):
        if t.line is None:
            f.fail(
                f"TENSION {n} has no L{{N}} line citation",
                f"Start TENSION {n} with L{{N}}::, the line number (from 1) in the CTX file that shows the state.",
            )
        elif t.line < 1:
            f.fail(f"TENSION {n} cites L{t.line}; lines are numbered from 1", f"Cite a line from 1 in TENSION {n}.")
        if not t.has_ctx:
            missing = f"TENSION {n} has L{t.line} but no CTX citation" if t.line else f"TENSION {n} has no CTX citation"
            f.fail(missing, f"{missing}. Add CTX:{{path}}[{{state}}] to prove context awareness.")
        if t.problems:
            f.fail(
                f"TENSION {n} is malformed: {'; '.join(t.problems)}",
                f"Write TENSION {n} as {TENSION_FORMAT} (ASCII <-> and -> are accepted).",
            )
        # a path is exempt (a real file may be called example.py); it is the citation checker's to judge
        free_text = " ".join((t.constraint, t.state, t.action)) if t.has_ctx and not t.problems else t.raw
        blank = [v for v in (t.constraint, t.path, t.state, t.action) if v and _is_blank_slot(v)]
        if marker := _placeholder(free_text) or (blank[0] if blank else None):
            f.fail(
                f"TENSION {n} contains placeholder content '{_clip(marker, 40)}'",
                f"Replace the placeholder in TENSION {n} with a real constraint, file, state and action.",
            )
        if t.canonical in seen and not t.problems:
            f.fail(f"TENSION {n} repeats TENSION {seen[t.canonical]}", f"Make TENSION {n} a distinct tension.")
        seen.setdefault(t.canonical, n)
        if t.line is not None and t.line >= 1 and t.path and not _is_blank_slot(t.path) and not _SLOT.search(t.path):
            problem = check_citation(t.path, t.line)
            if problem is not None:
                external = ""
                if context.external_context:
                    external = f" (or, by absolute path, under one of: {', '.join(context.external_context)})"
                f.fail(
                    f"TENSION {n}: {problem}",
                    f"Cite in TENSION {n} a file under {context.working_dir}{external} and a line L{{N}} that exists "
                    "in it.",
                )
    return tensions


# --- COMMIT -------------------------------------------------------------------------------------------------

_ABSTRACT = frozenset(
    {
        "response", "responses", "thought", "thoughts", "output", "outputs", "answer", "answers", "analysis",
        "reply", "replies", "text", "message", "messages", "summary", "reasoning", "explanation", "result",
        "results", "work", "plan", "content", "idea", "ideas", "notes", "comment", "comments", "conversation",
        "chat", "document", "report", "nothing", "none", "n/a", "na",
    }
)  # fmt: skip
_FILLER = frozenset({"my", "the", "this", "that", "our", "your", "a", "an", "final", "full", "complete", "written"})
_TOOL_NOUNS = frozenset({"output", "report", "log", "diff", "results", "result", "run", "trace"})
_TOOL_WORD = re.compile(r"[a-z0-9][a-z0-9_.+-]*")
_PATH_LIKE = re.compile(r"\S*[A-Za-z0-9]\S*")
_EXTENSION = re.compile(r"\S+\.[A-Za-z][A-Za-z0-9]{0,9}")
_NO_GATE = frozenset({"none", "n/a", "na", "-", "null", "nothing"})


def _artifact_is_path(value: str) -> bool:
    return bool(_PATH_LIKE.fullmatch(value)) and ("/" in value or "\\" in value or bool(_EXTENSION.fullmatch(value)))


def artifact_is_concrete(value: str) -> bool:
    """Whether a COMMIT artifact names something that can be checked afterwards.

    Concrete is (after stripping quotes and trailing punctuation, case-insensitive):

    * a path: one token containing ``/`` or ``\\`` (``src/app.py``, ``docs/``, a URL), or a file name with an
      extension (``README.md``);
    * a named tool output: ``tool:NAME``; ``git SUBCOMMAND ...`` (``git diff``); or ``NAME output|report|log|
      diff|results|result|run|trace`` where NAME is a tool word such as ``pytest`` or ``ruff check``.

    Everything else is abstract: "response", "my thoughts", "the analysis", "final output", "design notes".
    """
    value = _unquote(value).rstrip(".,;:!?").strip()
    if not value or value.lower() in _ABSTRACT:
        return False
    if _artifact_is_path(value):
        return True
    words = value.lower().split()
    while words and words[0] in _FILLER:
        words.pop(0)
    if not words:
        return False
    if words[0].startswith("tool:"):
        return bool(_TOOL_WORD.fullmatch(words[0][5:] or (words[1] if len(words) > 1 else "")))
    if words[0] == "git":
        return len(words) > 1
    tool = words[:-1]
    return (
        len(words) >= 2
        and words[-1] in _TOOL_NOUNS
        and all(_TOOL_WORD.fullmatch(w) and w not in _ABSTRACT and w not in _FILLER for w in tool)
    )


def _check_commit(values: dict[str, str], f: _Findings) -> None:
    artifact, gate = values.get("ARTIFACT", ""), values.get("GATE", "")
    if not artifact:
        f.fail("COMMIT has no ARTIFACT", "Add ARTIFACT:: under COMMIT naming a concrete file (e.g., src/main.py).")
    elif not artifact_is_concrete(artifact) or _SLOT.search(artifact):
        shown = _clip(_unquote(artifact))
        f.fail(
            f"COMMIT artifact '{shown}' is not concrete",
            f"COMMIT artifact is '{shown}'. Name a concrete file (e.g., src/main.py) or tool output.",
        )
    elif not _artifact_is_path(artifact) and (marker := _placeholder(artifact)):
        f.fail(f"COMMIT ARTIFACT contains placeholder '{marker}'", "Name the real artifact you will produce.")
    if not gate or gate.lower() in _NO_GATE:
        f.fail(
            "COMMIT has no GATE",
            "Add GATE:: under COMMIT with the check that proves the artifact (e.g., pytest tests/test_main.py).",
        )
    elif (marker := _placeholder(gate)) or _is_blank_slot(gate):
        f.fail(
            f"COMMIT GATE contains placeholder '{_clip(marker or gate, 40)}'",
            "Name the real check that proves the artifact (e.g., pytest tests/test_main.py).",
        )
