"""Parsing an OA5 candidate: the text between its markers cut into sections and ``KEY::value`` fields, and each
tension line cut into its citation, constraint, CTX and trigger."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ledger.anchor.proof.oa5 import (
    END_MARKER,
    PROOF_SECTIONS,
    START_MARKER,
    TOP_SECTIONS,
    _clip,
    _Findings,
    _unquote,
)

_FIELD_KEYS = frozenset({"ROLE", "COGNITION", "AUTHORITY", "PHASE", "BRANCH", "FILES", "CHALLENGE", "ARTIFACT", "GATE"})
_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)\s*::?")
_FIELD = re.compile(r"([A-Z][A-Z0-9_]*)\s*::(.*)")
_LINE_CITATION = re.compile(r"L\s*([0-9]{1,9})\s*::?\s*")
_BAD_CITATION = re.compile(r"L[^\[\]:⇌→]{0,20}::?\s*")  # "L{N}::", "Lx::": no usable line, but a prefix to skip
_CTX = re.compile(r"CTX\s*::?\s*")
_TRIGGER = re.compile(r"TRIGGER\s*")
_BULLET = re.compile(r"[-*•]\s+")


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


# --- tension lines ------------------------------------------------------------------------------------------


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
