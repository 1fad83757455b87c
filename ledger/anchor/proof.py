"""The Odyssean Anchor proof (OA5, seed 001): parse a candidate, check it against authoritative state, render it.

Pure: no file system, no git, no ledger. What needs the outside world comes in as a value
(:class:`AuthoritativeContext`) or a callable (:data:`CitationChecker`, :data:`ParentChecker`).
Liberal in whitespace and indentation, strict in content; every error carries a specific fix, and
:func:`validate_proof` never raises for any input string (a checker that raises is not caught: a ledger
that cannot answer must fail loudly).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

TIERS = {"quick": 1, "default": 2, "deep": 3}  # minimum tension counts
MAX_RETRIES = 2  # a first attempt + two retries
START_MARKER = "===ODYSSEAN_ANCHOR_PROOF::v5.0==="
END_MARKER = "===END_ODYSSEAN_ANCHOR_PROOF==="
MAX_PROOF_CHARS = 20_000
MAX_TENSIONS = 20  # each one costs a citation check; an anchor is short
MAX_ERRORS = 25  # beyond this the rest are summarised in one line
UNKNOWN = "UNKNOWN"  # canonical PHASE/BRANCH when the authoritative value could not be read
CONTEXT_FILE = "PROJECT-CONTEXT.oct.md"
# FILES:: is "grossly" off git status (a failure, not a warning) when it is more than this many times the real count
# or less than its inverse, AND more than FILES_SLACK files apart; a smaller difference only warns.
FILES_GROSS_RATIO = 2
FILES_SLACK = 5
TENSION_FORMAT = "L{N}::[constraint]⇌CTX:{path}[state]→TRIGGER[action]"

TOP_SECTIONS = ("IDENTITY", "CONTEXT", "PROOF")
PROOF_SECTIONS = ("TENSIONS", "COMMIT")
PLACEHOLDER_WORDS = ("TODO", "TBD", "FIXME", "PLACEHOLDER", "EXAMPLE")


@dataclass(frozen=True)
class AuthoritativeContext:
    """What the server read itself: the session's directory, its git branch, its phase and git status count."""

    working_dir: str
    branch: str | None
    phase: str | None
    files: int  # git status file count


CitationChecker = Callable[[str, int], str | None]  # (ctx_path, line_number) -> error message, or None if fine
ParentChecker = Callable[[str], bool]  # DELEGATED parent session id -> exists in the ledger?


@dataclass(frozen=True)
class AnchorValidation:
    """The verdict on one proof candidate: validated with no errors, or at least one error and its guidance."""

    validated: bool
    errors: list[str]
    warnings: list[str]
    guidance: str  # "" when validated; else "VALIDATION FAILED: [e1, e2]. RETRY: [fix1, fix2]"
    canonical_proof: str  # with the AUTHORITATIVE context; "" if the candidate's structure could not be parsed
    template: str  # a copy-paste proof with the real context and slots to fill (always set)
    authority: str | None  # "RESPONSIBLE[...]" / "DELEGATED[...]" as parsed, or None


# --- small helpers ----------------------------------------------------------------------------------------

_FIELD_KEYS = frozenset({"ROLE", "COGNITION", "AUTHORITY", "PHASE", "BRANCH", "FILES", "ARTIFACT", "GATE"})
_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)\s*::?")
_FIELD = re.compile(r"([A-Z][A-Z0-9_]*)\s*::(.*)")
_LINE_CITATION = re.compile(r"L\s*([0-9]{1,9})\s*::?\s*")
_BAD_CITATION = re.compile(r"L[^\[\]:⇌→]{0,20}::?\s*")  # "L{N}::", "Lx::": no usable line, but a prefix to skip
_CTX = re.compile(r"CTX\s*::?\s*")
_TRIGGER = re.compile(r"TRIGGER\s*")
_BULLET = re.compile(r"[-*•]\s+")
_AUTHORITY = re.compile(r"(RESPONSIBLE|DELEGATED)\s*\[(.*)\]")
_PLACEHOLDER = re.compile(r"\b(" + "|".join(PLACEHOLDER_WORDS) + r")\b", re.IGNORECASE)
_SLOT_NAMES = ("N", "constraint", "path", "state", "action", "cognition", "scope", "artifact", "gate")
_SLOT = re.compile(r"\{(" + "|".join(_SLOT_NAMES) + r")\}")
_SLOT_WORDS = frozenset(s.lower() for s in _SLOT_NAMES)
_INTEGER = re.compile(r"[0-9]{1,9}")
_QUOTES = "\"'`"


def _clip(text: str, limit: int = 80) -> str:
    """Candidate text quoted in a message, cut short so a message stays readable."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in _QUOTES:
        value = value[1:-1].strip()
    return value


def _placeholder(text: str) -> str | None:
    """The placeholder left in ``text`` (a TODO-like word or an unfilled template slot), if any."""
    if found := _PLACEHOLDER.search(text):
        return found.group(1)
    if found := _SLOT.search(text):
        return found.group(0)
    return None


def _is_blank_slot(value: str) -> bool:
    """A field that only repeats its slot name (``[state]``, ``CTX:path``) or is nothing but an ellipsis."""
    bare = value.strip().strip("{}<>").strip()
    return bare.lower() in _SLOT_WORDS or not bare.replace(".", "").replace("…", "").strip()


def _bracket_body(segment: str) -> str | None:
    """``segment`` is exactly one ``[...]`` (nested brackets allowed): its content; otherwise None."""
    if not segment.startswith("["):
        return None
    depth = 0
    for i, ch in enumerate(segment):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if depth == 0:
            return segment[1:i].strip() if i == len(segment) - 1 else None
    return None


_OPERATORS = (("<->", "⇌"), ("⇌", "⇌"), ("->", "→"), ("→", "→"))


def _split_operators(text: str) -> tuple[list[str], list[str]] | None:
    """Split at the ⇌/→ operators (or ASCII ``<->``/``->``) outside brackets; None if brackets do not balance."""
    segments: list[str] = []
    ops: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "[]":
            depth += 1 if ch == "[" else -1
            if depth < 0:
                return None
        elif depth == 0:
            op = next(((alias, canon) for alias, canon in _OPERATORS if text.startswith(alias, i)), None)
            if op is not None:
                segments.append(text[start:i].strip())
                ops.append(op[1])
                i += len(op[0])
                start = i
                continue
        i += 1
    if depth != 0:
        return None
    segments.append(text[start:].strip())
    return segments, ops


# --- collecting findings ------------------------------------------------------------------------------------


@dataclass
class _Findings:
    errors: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def fail(self, error: str, fix: str) -> None:
        if error not in self.errors:
            self.errors.append(error)
        if fix not in self.fixes:
            self.fixes.append(fix)

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def capped(self, items: list[str]) -> list[str]:
        if len(items) <= MAX_ERRORS:
            return list(items)
        return [*items[: MAX_ERRORS - 1], f"... and {len(items) - MAX_ERRORS + 1} more"]


# --- structure ----------------------------------------------------------------------------------------------


@dataclass
class _Structure:
    """The candidate cut into sections; content lines are stripped, blank and ``//`` comment lines dropped."""

    sections: dict[str, list[str]] = field(default_factory=dict)  # IDENTITY, CONTEXT, PROOF (loose lines)
    subsections: dict[str, list[str]] = field(default_factory=dict)  # TENSIONS, COMMIT
    markers_ok: bool = True

    @property
    def complete(self) -> bool:
        return (
            self.markers_ok
            and all(s in self.sections for s in TOP_SECTIONS)
            and all(s in self.subsections for s in PROOF_SECTIONS)
        )


def _body(text: str, f: _Findings) -> tuple[str, bool]:
    """The text between the markers (or as much as can be found), and whether both markers were in order."""
    start, end = text.find(START_MARKER), text.find(END_MARKER)
    if start < 0:
        other = re.search(r"===ODYSSEAN_ANCHOR_PROOF::([^=\s]{0,20})===", text)
        if other:
            f.fail(
                f"the START marker is for version {_clip(other.group(1), 20)}, not v5.0",
                f"Put {START_MARKER} (OA5) on the first line of the proof.",
            )
        else:
            f.fail("the START marker is missing", f"Put {START_MARKER} on the first line of the proof.")
    if end < 0:
        f.fail("the END marker is missing", f"Put {END_MARKER} on the last line of the proof.")
    if start >= 0 and 0 <= end < start:
        f.fail(
            "the END marker comes before the START marker",
            f"Put {START_MARKER} first and {END_MARKER} last.",
        )
        end = text.find(END_MARKER, start)
    begin = start + len(START_MARKER) if start >= 0 else 0
    stop = end if end >= begin else len(text)
    return text[begin:stop], start >= 0 and end >= begin


def _dedent(lines: list[str]) -> list[str]:
    indents = [line[: len(line) - len(line.lstrip())] for line in lines if line.strip()]
    common = indents[0] if indents else ""
    for indent in indents:
        while not indent.startswith(common):
            common = common[:-1]
    return [line[len(common) :] if line.startswith(common) else line for line in lines]


def _header(stripped: str) -> str | None:
    """The section name if the line is only a header (``NAME:`` or ``NAME::``), not a field such as ``FILES::``."""
    match = _HEADER.fullmatch(stripped)
    if match is None or match.group(1) in _FIELD_KEYS or re.fullmatch(r"L[0-9]+", match.group(1)):
        return None
    return match.group(1)


def _structure(text: str, f: _Findings) -> _Structure:
    body, markers_ok = _body(text, f)
    found = _Structure(markers_ok=markers_ok)
    current: str | None = None  # a top-level section, "?" for an unknown one
    sub: str | None = None
    before: list[str] = []
    for line in _dedent(body.splitlines()):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        name = _header(stripped)
        if name in TOP_SECTIONS:
            if name in found.sections:
                f.fail(f"the {name} section appears twice", f"Write one {name}: section.")
            found.sections.setdefault(name, [])
            current, sub = name, None
        elif name in PROOF_SECTIONS:
            if current != "PROOF":
                f.fail(f"{name} appears outside PROOF", f"Put {name}: under PROOF:.")
            if name in found.subsections:
                f.fail(f"PROOF has {name} twice", f"Write one {name}: under PROOF:.")
            found.subsections.setdefault(name, [])
            sub = name
        elif name is not None and not line[:1].isspace():
            f.fail(
                f"unknown top-level section {_clip(name, 40)}",
                f"Remove the section '{_clip(name, 40)}'; the proof has exactly IDENTITY, CONTEXT and PROOF.",
            )
            current, sub = "?", None
        elif sub is not None:
            found.subsections[sub].append(stripped)
        elif current is None:
            before.append(stripped)
        elif current != "?":
            found.sections[current].append(stripped)
    if before:
        f.fail(
            f"text before the first section: '{_clip(before[0], 60)}'",
            "Start the proof with IDENTITY: right after the START marker.",
        )
    for name in TOP_SECTIONS:
        if name not in found.sections:
            f.fail(f"the {name} section is missing", f"Add the {name}: section (see the template).")
    if "PROOF" in found.sections:
        for name in PROOF_SECTIONS:
            if name not in found.subsections:
                f.fail(f"PROOF has no {name}", f"Add {name}: under PROOF: (see the template).")
    return found


def _fields(section: str, lines: list[str], allowed: tuple[str, ...], f: _Findings) -> dict[str, str]:
    """``KEY::value`` lines of one section; duplicates and anything else are errors."""
    values: dict[str, str] = {}
    stray: list[str] = []
    for line in lines:
        match = _FIELD.fullmatch(line)
        if match is None or match.group(1) not in allowed:
            stray.append(line)
        elif match.group(1) in values:
            f.fail(f"{section} lists {match.group(1)} twice", f"Keep one {match.group(1)}:: line under {section}.")
        else:
            values[match.group(1)] = _unquote(match.group(2))
    if stray:
        count = f"{len(stray)} unrecognised lines, the first" if len(stray) > 1 else "an unrecognised line"
        f.fail(
            f"{section} has {count} '{_clip(stray[0], 60)}'",
            f"Under {section} write only {', '.join(k + '::' for k in allowed)} lines.",
        )
    return values


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


@dataclass(frozen=True)
class _Tension:
    raw: str
    line: int | None = None
    constraint: str = ""
    path: str = ""
    state: str = ""
    action: str = ""
    has_ctx: bool = False
    problems: tuple[str, ...] = ()

    @property
    def canonical(self) -> str:
        if self.problems or self.line is None or not self.has_ctx:
            return self.raw
        return f"L{self.line}::[{self.constraint}]⇌CTX:{self.path}[{self.state}]→TRIGGER[{self.action}]"


def _parse_tension(raw: str) -> _Tension:
    text = _BULLET.sub("", raw, count=1) if _BULLET.match(raw) else raw
    citation = _LINE_CITATION.match(text)
    line = int(citation.group(1)) if citation else None
    prefix = citation or _BAD_CITATION.match(text)
    rest = text[prefix.end() :] if prefix else text
    split = _split_operators(rest)
    if split is None:
        return _Tension(raw, line, has_ctx=bool(_CTX.search(rest)), problems=("its brackets do not balance",))
    segments, ops = split
    problems: list[str] = []
    constraint = _bracket_body(segments[0])
    if not constraint:
        problems.append("it must start with a non-empty [constraint] after L{N}::")
    trigger = _TRIGGER.match(segments[-1]) if len(segments) > 1 else None
    action = _bracket_body(segments[-1][trigger.end() :]) if trigger else None
    if not action:
        problems.append("it must end with →TRIGGER[action]")
    ctx = next(((i, m) for i, s in enumerate(segments) if (m := _CTX.match(s))), None)
    path = state = ""
    if ctx is not None:
        if len(segments) != 3 or ops != ["⇌", "→"] or ctx[0] != 1:
            problems.append("the parts must be [constraint]⇌CTX:{path}[state]→TRIGGER[action], in that order")
        after = segments[ctx[0]][ctx[1].end() :]
        cut = after.find("[")
        path = _unquote(after if cut < 0 else after[:cut])
        state = (_bracket_body(after[cut:]) if cut >= 0 else None) or ""
        if not path:
            problems.append("CTX: names no path")
        if not state:
            problems.append("CTX:{path} must be followed by a non-empty [state]")
    return _Tension(raw, line, constraint or "", path, state, action or "", ctx is not None, tuple(problems))


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
                f.fail(
                    f"TENSION {n}: {problem}",
                    f"Cite in TENSION {n} a file under {context.working_dir} and a line L{{N}} that exists in it.",
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


# --- rendering ----------------------------------------------------------------------------------------------


def _render(
    *,
    identity: list[tuple[str, str | None]],
    context: AuthoritativeContext,
    tensions: list[str],
    commit: list[tuple[str, str | None]],
) -> str:
    lines = [START_MARKER, "IDENTITY:"]
    lines += [f"  {key}::{value}" for key, value in identity if value]
    lines += [
        "CONTEXT:",
        f"  PHASE::{context.phase or UNKNOWN}",
        f"  BRANCH::{context.branch or UNKNOWN}",
        f"  FILES::{context.files}",
        "PROOF:",
        "  TENSIONS:",
    ]
    lines += [f"    {t}" for t in tensions]
    lines += ["  COMMIT:"] + [f"    {key}::{value}" for key, value in commit if value]
    return "\n".join([*lines, END_MARKER])


def proof_template(*, role: str, tier: str, context: AuthoritativeContext) -> str:
    """A proof to copy: the real role and CONTEXT, one tension line per tier minimum, ``{slots}`` to fill.

    Sent back unchanged it fails: every ``{slot}`` counts as placeholder content.
    """
    tension = "L{N}::[{constraint}]⇌CTX:{path}[{state}]→TRIGGER[{action}]"
    return _render(
        identity=[("ROLE", role or "{role}"), ("COGNITION", "{cognition}"), ("AUTHORITY", "RESPONSIBLE[{scope}]")],
        context=context,
        tensions=[tension] * TIERS.get(tier, TIERS["default"]),
        commit=[("ARTIFACT", "{artifact}"), ("GATE", "{gate}")],
    )


# --- the validator ------------------------------------------------------------------------------------------


def validate_proof(
    text: str,
    *,
    role: str,
    session_role: str,
    tier: str,
    context: AuthoritativeContext,
    check_citation: CitationChecker,
    parent_exists: ParentChecker,
) -> AnchorValidation:
    """Validate an OA5 proof candidate against the authoritative context (seed 001).

    Returns ``validated=True`` with no errors, or at least one error with guidance in the seed's
    format ``VALIDATION FAILED: [errors]. RETRY: [fixes]``. The canonical proof carries the authoritative
    CONTEXT, never the candidate's, and is empty only when the structure itself could not be parsed.
    """
    template = proof_template(role=role, tier=tier, context=context)
    f = _Findings()
    if len(text) > MAX_PROOF_CHARS:
        f.fail(
            f"the proof is {len(text)} characters; the limit is {MAX_PROOF_CHARS}",
            f"Send only the {START_MARKER} block (at most {MAX_PROOF_CHARS} characters).",
        )
        return _verdict(f, canonical="", template=template, authority=None)
    if tier not in TIERS:
        f.fail(f"tier '{_clip(tier, 40)}' is not known", f"Use one of the tiers {', '.join(TIERS)}.")
    if role.strip() != session_role.strip():
        f.fail(
            f"role '{_clip(role)}' does not match this session's role '{_clip(session_role)}'",
            f"Anchor as '{_clip(session_role)}', the role this session clocked in with, or clock in again.",
        )
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    found = _structure(text, f)
    identity: dict[str, str] = {}
    authority = None
    if "IDENTITY" in found.sections:
        identity = _fields("IDENTITY", found.sections["IDENTITY"], ("ROLE", "COGNITION", "AUTHORITY"), f)
        authority = _check_identity(identity, role=role, parent_exists=parent_exists, f=f)
    if "CONTEXT" in found.sections:
        _check_context(_fields("CONTEXT", found.sections["CONTEXT"], ("PHASE", "BRANCH", "FILES"), f), context, f)
    if loose := found.sections.get("PROOF"):
        f.fail(
            f"PROOF has a line outside TENSIONS and COMMIT: '{_clip(loose[0], 60)}'",
            "Put every tension under TENSIONS: and ARTIFACT::/GATE:: under COMMIT:.",
        )
    commit = _fields("COMMIT", found.subsections.get("COMMIT", []), ("ARTIFACT", "GATE"), f)
    if "COMMIT" in found.subsections:
        _check_commit(commit, f)
    tensions: list[_Tension] = []
    if "TENSIONS" in found.subsections:
        tensions = _check_tensions(
            found.subsections["TENSIONS"], tier=tier, context=context, check_citation=check_citation, f=f
        )
    canonical = ""
    if found.complete:
        canonical = _render(
            identity=[
                ("ROLE", identity.get("ROLE")),
                ("COGNITION", identity.get("COGNITION")),
                ("AUTHORITY", authority or identity.get("AUTHORITY")),
            ],
            context=context,
            tensions=[t.canonical for t in tensions],
            commit=[("ARTIFACT", commit.get("ARTIFACT")), ("GATE", commit.get("GATE"))],
        )
    return _verdict(f, canonical=canonical, template=template, authority=authority)


def _verdict(f: _Findings, *, canonical: str, template: str, authority: str | None) -> AnchorValidation:
    if not f.errors:
        return AnchorValidation(True, [], f.capped(f.warnings), "", canonical, template, authority)
    errors, fixes = f.capped(f.errors), f.capped(f.fixes)
    guidance = f"VALIDATION FAILED: [{', '.join(errors)}]. RETRY: [{', '.join(fixes)}]"
    return AnchorValidation(False, errors, f.capped(f.warnings), guidance, canonical, template, authority)
