"""The OA5 proof's vocabulary: markers, tiers and limits, section names, the authoritative context a proof is
checked against, the text helpers every part uses, and the findings (errors with fixes, warnings) a check collects."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

TIERS = {"quick": 1, "default": 2, "deep": 3}  # minimum tension counts
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
    external_context: tuple[str, ...] = ()  # absolute dirs or documents CTX: may also cite (by absolute path)


CitationChecker = Callable[[str, int], str | None]  # (ctx_path, line_number) -> error message, or None if fine
ParentChecker = Callable[[str], bool]  # DELEGATED parent session id -> exists in the ledger?


_PLACEHOLDER = re.compile(r"\b(" + "|".join(PLACEHOLDER_WORDS) + r")\b", re.IGNORECASE)
_SLOT_NAMES = ("N", "constraint", "path", "state", "action", "cognition", "scope", "artifact", "gate")
_SLOT = re.compile(r"\{(" + "|".join(_SLOT_NAMES) + r")\}")
_SLOT_WORDS = frozenset(s.lower() for s in _SLOT_NAMES)
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
