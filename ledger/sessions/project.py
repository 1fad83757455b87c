"""The project's real state, read by the server itself: git branch and status count, PHASE, and CTX citations.

An agent only names its working directory; everything here is derived from the file system and git, so a
session records the true state at clock-in and the anchor (above) can compare what the agent claims with what is
true. Three rules hold throughout:

* the working directory must lie inside a configured project root, checked on the resolved path *before*
  its existence, so a caller cannot probe for directories outside the roots;
* git runs without a shell, with a timeout, with no prompts and with its own security checks intact
  (a repository owned by another user is simply "not a repository" here);
* a CTX citation that leaves the working directory gets one message whatever lies outside, so the check
  is never an existence oracle for the rest of the machine.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ledger.core.errors import Forbidden, InvalidInput

DEFAULT_CONTEXT_PATHS: tuple[str, ...] = ("PROJECT-CONTEXT.oct.md", ".hestai/context/PROJECT-CONTEXT.oct.md")
GIT_TIMEOUT_SECONDS = 5.0
MAX_PATH_CHARS = 4096
MAX_CONTEXT_BYTES = 1 << 20  # PHASE sits near the top; a larger context file is read only this far
MAX_SCAN_BYTES = 64 << 20  # a citation's line count is not checked past this many bytes
READ_CHUNK_BYTES = 1 << 16
MAX_PHASE_CHARS = 200

# Variables that would point git at another repository than the one under ``-C``.
_GIT_LOCATION_VARS = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
    }
)
# ``PHASE::B1``, ``PHASE::"B1"``, indented or inside a block; an unquoted value ends at a space, quote,
# bracket, comma or ``//`` comment. ``CURRENT_PHASE::`` and the like are other fields.
_PHASE = re.compile(r'^[ \t]*PHASE[ \t]*::[ \t]*(?:"([^"\r\n]*)"|((?:[^\s"\[\](),/]|/(?!/))+))', re.MULTILINE)
_NO_BRANCH_YET = ("No commits yet on ", "Initial commit on ")  # the second from git before 2.17


@dataclass(frozen=True)
class ProjectContext:
    """The authoritative context of one working directory at one moment."""

    working_dir: str  # resolved absolute path (symlinks resolved)
    branch: str | None  # current git branch; "HEAD" when detached; None if not a git repository
    files: int  # entries in ``git status --porcelain`` (0 if not a repository)
    phase: str | None  # PHASE from the first context file that declares one; None if none does
    context_files: tuple[str, ...]  # absolute paths of the context files that exist, in lookup order


# --- the working directory --------------------------------------------------------------------------------


def check_working_dir(working_dir: str, allowed_roots: Sequence[str]) -> Path:
    """Resolve ``working_dir`` and require it to be an existing directory inside one of ``allowed_roots``.

    Raises :class:`InvalidInput` for a malformed, relative, missing or non-directory path and
    :class:`Forbidden` for a path outside every root (or when no root is configured). Containment is
    checked on the resolved path before existence, so paths outside the roots all get the same answer.
    """
    if not isinstance(working_dir, str) or not working_dir.strip():
        raise InvalidInput("working_dir is empty", "send the absolute path of your project directory")
    if "\x00" in working_dir or len(working_dir) > MAX_PATH_CHARS:
        raise InvalidInput(
            "working_dir is not a valid path",
            f"send the absolute path of your project directory (no NUL bytes, at most {MAX_PATH_CHARS} characters)",
        )
    if not os.path.isabs(working_dir):
        raise InvalidInput(
            f"working_dir {working_dir!r} is not an absolute path",
            "send the absolute path of your project directory, e.g. /home/me/project (no '~', no relative path)",
        )
    roots = [Path(os.path.realpath(r)) for r in allowed_roots if isinstance(r, str) and os.path.isabs(r)]
    if not roots:
        raise Forbidden(
            "this ledger accepts no working directory: no project root is configured",
            "ask the operator to set LEDGER_PROJECT_ROOTS to a JSON list of absolute directories, "
            'e.g. ["/home/me/projects"]',
        )
    resolved = Path(os.path.realpath(working_dir))
    if not any(resolved.is_relative_to(root) for root in roots):
        raise Forbidden(
            f"working_dir {working_dir} is outside the allowed project roots",
            f"send a directory inside one of: {', '.join(str(r) for r in roots)}; or ask the operator to add "
            "your project directory to LEDGER_PROJECT_ROOTS (a JSON list; by default the home directory and the "
            "directory the server was started from)",
        )
    try:
        mode = resolved.stat().st_mode
    except OSError as exc:
        raise InvalidInput(
            f"working_dir {working_dir} does not exist",
            "send the absolute path of an existing project directory",
        ) from exc
    if not stat.S_ISDIR(mode):
        raise InvalidInput(
            f"working_dir {working_dir} is not a directory",
            "send the project directory itself, not a file in it",
        )
    return resolved


# --- git and PROJECT-CONTEXT ------------------------------------------------------------------------------


def read_context(working_dir: Path, context_paths: Sequence[str] = DEFAULT_CONTEXT_PATHS) -> ProjectContext:
    """Read branch and status count (one ``git status`` call) and PHASE; never raises for a non-repository."""
    root = Path(os.path.realpath(working_dir))
    branch, files = _git_status(root)
    workspace = Workspace(root)
    found: list[str] = []
    phase: str | None = None
    for rel in context_paths:
        real = workspace.resolve(rel)
        if real is None or not _is_regular(real):
            continue
        found.append(os.path.normpath(os.path.join(root, rel)))
        if phase is None:
            phase = _phase_in(real)
    return ProjectContext(str(root), branch, files, phase, tuple(found))


def git_output(root: Path, *args: str) -> bytes | None:
    """The standard output of ``git -C root ARGS`` (no shell, no prompt, a timeout); None when git fails."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_OPTIONAL_LOCKS"] = "0"  # a reader must not take index.lock from under the agent's own git
    command = ["git", "-C", str(root), "-c", "core.fsmonitor=false", *args]
    try:
        done = subprocess.run(
            command, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=GIT_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.SubprocessError):  # git missing, not executable, or too slow
        return None
    return done.stdout if done.returncode == 0 else None


def _git_status(root: Path) -> tuple[str | None, int]:
    """Branch and entry count from ``git status --porcelain=v1 --branch``; (None, 0) when git cannot say."""
    out = git_output(root, "status", "--porcelain=v1", "--branch", "--untracked-files=normal")
    lines = out.decode("utf-8", "replace").splitlines() if out is not None else []
    if not lines:
        return None, 0
    return _branch_from(lines[0]), sum(1 for entry in lines[1:] if entry.strip())


def _branch_from(header: str) -> str | None:
    """``## main...origin/main [ahead 1]`` -> main; ``## No commits yet on main`` -> main; detached -> HEAD."""
    if not header.startswith("## "):
        return None
    head = header[3:]
    if head.startswith("HEAD (no branch)"):
        return "HEAD"
    for prefix in _NO_BRANCH_YET:
        if head.startswith(prefix):
            head = head[len(prefix) :]
    # a ref name can contain neither ".." nor a space, so these split off only the upstream and tracking info
    return head.split("...", 1)[0].split(" ", 1)[0] or None


def _phase_in(real: str) -> str | None:
    data = read_head(real, MAX_CONTEXT_BYTES)
    if data is None:
        return None
    for match in _PHASE.finditer(data.decode("utf-8-sig", "replace")):
        value = (match[1] if match[1] is not None else match[2]).strip()
        if value:
            return value[:MAX_PHASE_CHARS]
    return None


# --- files inside the working directory -------------------------------------------------------------------


class Workspace:
    """File checks confined to one working directory and the allowed external context (no existence oracle
    outside them).

    ``external`` lists absolute paths — directories or single documents — that a CTX citation may also name, by
    absolute path (``LEDGER_EXTERNAL_CONTEXT``). A relative citation is always relative to the working directory.
    """

    def __init__(self, root: Path, external: Sequence[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        entries = [e for e in external if isinstance(e, str) and os.path.isabs(e) and "\x00" not in e]
        # lexical forms (as configured, and resolved) for the check before the file system is touched
        self._lexical = tuple({os.path.normpath(e) for e in entries} | {os.path.realpath(e) for e in entries})
        self._allowed = (self.root, *(Path(os.path.realpath(e)) for e in entries))
        self.outside = "is outside the session's working directory" + (
            " and the allowed external context" if entries else ""
        )

    def _resolve_absolute(self, path: str) -> str | None:
        """The real path of an absolute citation inside the working directory or an allowed external entry.

        Lexically inside first (nothing outside is touched), then with symlinks resolved."""
        lexical = os.path.normpath(path)
        inside = (str(self.root), *self._lexical)
        if not any(lexical == e or lexical.startswith(e.rstrip("/") + "/") for e in inside):
            return None
        try:
            real = Path(os.path.realpath(lexical))
        except (OSError, ValueError):
            return None
        return str(real) if any(real == a or real.is_relative_to(a) for a in self._allowed) else None

    def resolve(self, path: str) -> str | None:
        """The real path of ``path`` (relative to the root) if it stays inside the root, else None.

        Lexical first: an absolute path, a leading ``~``, a NUL byte or a ``..`` that climbs above the root
        at any point is refused without touching the file system, so ``../<root name>/file`` is refused
        too. Then symlinks are resolved and the result must still lie inside the root.
        """
        if not isinstance(path, str) or "\x00" in path or path.startswith("~") or os.path.isabs(path):
            return None
        depth = 0
        for part in path.split("/"):
            if part == "..":
                depth -= 1
                if depth < 0:
                    return None
            elif part not in ("", "."):
                depth += 1
        try:
            real = os.path.realpath(os.path.join(self.root, path))
        except (OSError, ValueError):
            return None
        return real if Path(real).is_relative_to(self.root) else None

    def check_citation(self, path: str, line: int) -> str | None:
        """None if ``path`` exists inside the root (or, given as an absolute path, inside an allowed external
        entry) and, when it is a file, has at least ``line`` lines.

        Otherwise a message naming the problem. Every path that leaves the root and the external entries gets
        the same message, whether or not its target exists. A directory is fine for any line.
        """
        shown = _shown(path)
        if isinstance(path, str) and not path.strip():
            return "CTX: names no path"
        absolute = isinstance(path, str) and "\x00" not in path and os.path.isabs(path)
        real = self._resolve_absolute(path) if absolute else self.resolve(path)
        if real is None:
            return f"CTX:{shown} {self.outside}"
        try:
            mode = os.stat(real).st_mode
        except (OSError, ValueError):
            where = "" if absolute else " in the working directory"
            return f"CTX:{shown} does not exist{where}"
        if stat.S_ISDIR(mode):
            return None
        if not stat.S_ISREG(mode):
            return f"CTX:{shown} is not a regular file or directory"
        if line < 1:
            return f"CTX:{shown}: lines are numbered from 1; L{line} does not exist"
        lines = _count_lines(real, line)
        if lines is None:
            return f"CTX:{shown} cannot be read by the ledger"
        if lines == -1:
            mib = MAX_SCAN_BYTES >> 20
            return f"CTX:{shown} is too large to check L{line}: only its first {mib} MiB are read"
        if lines < line:
            return f"CTX:{shown} has {lines} line{'' if lines == 1 else 's'}; L{line} does not exist"
        return None


def _shown(path: object) -> str:
    """The path as it may appear in a message: control characters escaped, long paths clipped."""
    text = path if isinstance(path, str) else repr(path)
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= 200 else text[:199] + "…"


def _open_regular(real: str) -> int | None:
    """A read-only descriptor on a regular file; never blocks on a FIFO and never follows a swapped-in link."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(real, flags)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _is_regular(real: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(real).st_mode)
    except (OSError, ValueError):
        return False


def read_head(real: str, limit: int) -> bytes | None:
    """Up to ``limit`` bytes from the start of a regular file (never a FIFO, never a swapped-in link); None if not."""
    fd = _open_regular(real)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            return f.read(limit)
        except OSError:
            return None


def _count_lines(real: str, wanted: int) -> int | None:
    """Lines in the file, counted by b"\\n" in chunks; stops once ``wanted`` is reached.

    None if the file cannot be read; -1 if ``wanted`` lies beyond the first :data:`MAX_SCAN_BYTES`.
    """
    fd = _open_regular(real)
    if fd is None:
        return None
    newlines, scanned, last = 0, 0, b"\n"
    with os.fdopen(fd, "rb", buffering=0) as f:
        try:
            while chunk := f.read(READ_CHUNK_BYTES):
                newlines += chunk.count(b"\n")
                scanned += len(chunk)
                last = chunk[-1:]
                if newlines >= wanted:
                    return newlines
                if scanned >= MAX_SCAN_BYTES:
                    return -1 if f.read(1) else newlines + (last != b"\n")
        except OSError:
            return None
    return newlines + (last != b"\n")  # a last line without a newline still counts
