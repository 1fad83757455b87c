"""The anchor challenge (seed 001: "Challenge-response validation layer"): the server picks a line of a file in the
session's working tree, and the next proof must quote it.

What the server reads itself: the list of files git tracks (``git ls-files``), one of them chosen at random, and
one line in it chosen at random among lines worth quoting. What it records: the path, the line number and an HMAC of
the line under the ledger's receipt key (:func:`line_digest`) — never the text. The answer travels in the proof's
CONTEXT as ``CHALLENGE::<challenge_id>[<the line's text>]`` and is checked against that digest; when it does not
match, the line is read again to tell a wrong answer from a line that changed since.

Only tracked files are asked about (what is committed is already shared with whoever can read the repository; an
ignored ``.env`` never is), and names that look like key or secret files are skipped, because the answer ends up in
the recorded proof.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import random
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from ledger.anchor.proof.oa5 import _clip, _Findings
from ledger.anchor.proof.parse import _structure
from ledger.core.errors import InvalidInput
from ledger.sessions.project import Workspace, git_output, read_head

CHALLENGE_PREFIX = "ach_"
CHALLENGE_ID = re.compile(r"ach_[A-Za-z0-9_-]{22}")  # "ach_" + secrets.token_urlsafe(16)
ANSWER_FORMAT = "CHALLENGE::{challenge_id}[{text}]"
MIN_LINE_CHARS = 12  # non-space characters: a line worth quoting, not a blank, a brace or "return x"
MAX_LINE_CHARS = 200
MAX_FILE_BYTES = 256 << 10  # only this much of a file is read for lines to ask about
SAMPLE_FILES = 32  # files tried, at most, before the server gives up

_SECRET_NAME = re.compile(
    r"(^|/)(\.env[^/]*|\.netrc|\.npmrc|\.pypirc|id_[a-z0-9]+|[^/]*\.(pem|key|p12|pfx|jks|keystore|asc|gpg)"
    r"|[^/]*(secret|credential|password|passwd|token|private)[^/]*)$",
    re.IGNORECASE,
)
_SECRET_LINE = re.compile(r"(password|passwd|secret|token|api[_-]?key|private[_-]?key)\s*[:=]", re.IGNORECASE)
_ANSWER_LINE = re.compile(r"CHALLENGE\s*::")
_ANSWER = re.compile(r"CHALLENGE\s*::\s*([^\s\[]*)\s*\[(.*)\]")


@dataclass(frozen=True)
class PickedLine:
    """A line the server read itself: a tracked file (relative path), a line number from 1, and its text."""

    path: str
    line: int
    text: str


@dataclass(frozen=True)
class Answer:
    """A proof's answer to a challenge: the id it names and the text it quotes."""

    challenge_id: str
    text: str


def new_challenge_id() -> str:
    return CHALLENGE_PREFIX + secrets.token_urlsafe(16)


def normalise(text: str) -> str:
    """The form compared: runs of whitespace as one space, none at the ends (a proof re-indents what it quotes)."""
    return " ".join(text.split())


def line_digest(secret: bytes, challenge_id: str, text: str) -> str:
    """HMAC-SHA256 of the normalised line, bound to the challenge, under the ledger's receipt key."""
    message = b"compliance-ledger anchor challenge\x00" + challenge_id.encode() + b"\x00" + normalise(text).encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def answers(secret: bytes, challenge_id: str, digest: str, text: str) -> bool:
    return hmac.compare_digest(line_digest(secret, challenge_id, text), digest)


def _quotable(text: str) -> bool:
    if len(text) > MAX_LINE_CHARS or "===" in text or _SECRET_LINE.search(text):
        return False
    if not all(c.isprintable() or c == "\t" for c in text):
        return False
    return len("".join(text.split())) >= MIN_LINE_CHARS


def _lines(real: str) -> list[str] | None:
    data = read_head(real, MAX_FILE_BYTES)
    if not data or b"\x00" in data:
        return None
    if len(data) == MAX_FILE_BYTES:  # the last line may be cut: keep only whole lines
        data = data[: data.rfind(b"\n") + 1]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return [line.removesuffix("\r") for line in text.split("\n")]


def pick_line(root: Path, rng: random.Random | None = None) -> PickedLine | None:
    """A random quotable line of a random tracked text file under ``root``; None if there is none."""
    listed = git_output(root, "ls-files", "-z", "--cached")
    if not listed:
        return None
    names: list[str] = []
    for raw in listed.split(b"\x00"):
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if name and name.isprintable() and not _SECRET_NAME.search(name):
            names.append(name)
    chooser = rng or secrets.SystemRandom()
    workspace = Workspace(root)
    for name in chooser.sample(names, min(SAMPLE_FILES, len(names))):
        real = workspace.resolve(name)
        lines = None if real is None or not os.path.isfile(real) else _lines(real)
        candidates = [(n, text) for n, text in enumerate(lines or [], start=1) if _quotable(text)]
        if candidates:
            number, text = chooser.choice(candidates)
            return PickedLine(name, number, text)
    return None


def read_line(root: Path, path: str, line: int) -> str | None:
    """Line ``line`` of ``path`` under ``root`` as it reads now; None if it is gone."""
    real = Workspace(root).resolve(path)
    lines = None if real is None else _lines(real)
    return lines[line - 1] if lines is not None and 0 < line <= len(lines) else None


def find_answer(proof: str) -> Answer | None:
    """The proof's ``CHALLENGE::<id>[<text>]`` line under CONTEXT, if any.

    Raises :class:`InvalidInput` for more than one such line, or one not in that form: a challenge answer that
    cannot be read is bad input, refused before anything is recorded.
    """
    text = proof.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    found = _structure(text, _Findings())
    lines = [line for line in found.sections.get("CONTEXT", []) if _ANSWER_LINE.match(line)]
    if not lines:
        return None
    form = "write one line CHALLENGE::<challenge_id>[<the text of the line the challenge names>] under CONTEXT"
    if len(lines) > 1:
        raise InvalidInput(f"the proof has {len(lines)} CHALLENGE:: lines", form)
    match = _ANSWER.fullmatch(lines[0])
    if match is None:
        raise InvalidInput(f"CHALLENGE line '{_clip(lines[0], 60)}' is not in the form CHALLENGE::<id>[<text>]", form)
    if not CHALLENGE_ID.fullmatch(match.group(1)):
        raise InvalidInput(
            f"'{_clip(match.group(1), 40)}' is not a challenge id",
            "copy the challenge_id that anchor_challenge returned (ach_ and 22 characters)",
        )
    return Answer(match.group(1), match.group(2))
