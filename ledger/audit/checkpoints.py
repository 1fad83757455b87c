"""Signed checkpoints of the chain head, kept outside the database.

The hash chain proves the log is self-consistent, not that it is the log that was written: whoever can write
the database can truncate it, or rewrite an event and re-hash everything after it. A checkpoint is the ledger
key's Ed25519 signature over ``{position, head_hash, recorded_at, key_id}``; kept somewhere the database's
writers cannot reach, it lets ``verify --checkpoint`` tell that the log still holds that head at that position.

A checkpoint is one JSON line: ``{"alg": "Ed25519", "checkpoint": {...}, "signature": "<base64url>"}``, where
the signature covers the canonical JSON of ``checkpoint``. Checkpoint files are JSON lines, appended to.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.core import clock as _clock
from ledger.core.canonical import canonical_json, format_ts, parse_ts
from ledger.core.chain import StoredRecord
from ledger.core.errors import InvalidInput
from ledger.core.signing import ALG, PublicKey, SigningKey, b64url, unb64url

log = logging.getLogger(__name__)

TYPE = "compliance-ledger/checkpoint"
VERSION = 1
MAX_POSITION = 2**63 - 1
MAX_LINE_CHARS = 4096
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX16 = re.compile(r"^[0-9a-f]{16}$")
_HINT = "give a checkpoint written by `compliance-ledger checkpoint` or served at GET /checkpoints/latest"


@dataclass(frozen=True)
class Checkpoint:
    """A signed statement: at ``recorded_at`` the log's head was ``head_hash`` at ``position``."""

    position: int
    head_hash: str
    recorded_at: str
    key_id: str
    signature: str

    def claims(self) -> dict[str, Any]:
        return {
            "type": TYPE,
            "v": VERSION,
            "position": self.position,
            "head_hash": self.head_hash,
            "recorded_at": self.recorded_at,
            "key_id": self.key_id,
        }

    def document(self) -> dict[str, Any]:
        return {"alg": ALG, "checkpoint": self.claims(), "signature": self.signature}

    def to_line(self) -> str:
        return canonical_json(self.document())

    def signed_by(self, key: PublicKey) -> bool:
        """True when ``key`` made this signature over these claims."""
        if self.key_id != key.key_id:
            return False
        try:
            signature = unb64url(self.signature)
        except ValueError:
            return False
        return key.verify(signature, _message(self.claims()))

    @property
    def moment(self) -> _dt.datetime:
        return parse_ts(self.recorded_at)


def _message(claims: dict[str, Any]) -> bytes:
    return canonical_json(claims).encode("utf-8")


def sign(key: SigningKey, *, position: int, head_hash: str, now: _dt.datetime) -> Checkpoint:
    """Sign the head ``(position, head_hash)`` as of ``now``."""
    if position < 1:
        raise InvalidInput("the ledger holds no events to checkpoint", "run `compliance-ledger init` first")
    unsigned = Checkpoint(position, head_hash, format_ts(now), key.key_id, "")
    return Checkpoint(
        position, head_hash, unsigned.recorded_at, key.key_id, b64url(key.sign(_message(unsigned.claims())))
    )


def parse(document: Any) -> Checkpoint:
    """Read a checkpoint document (parsed JSON); anything malformed is :class:`InvalidInput`."""

    def bad(what: str) -> InvalidInput:
        return InvalidInput(f"not a checkpoint: {what}", _HINT)

    if not isinstance(document, dict) or document.get("alg") != ALG:
        raise bad(f'expected an object with "alg": "{ALG}", "checkpoint" and "signature"')
    claims, signature = document.get("checkpoint"), document.get("signature")
    if not isinstance(claims, dict) or claims.get("type") != TYPE or claims.get("v") != VERSION:
        raise bad(f'"checkpoint" must be a {TYPE} claim set, version {VERSION}')
    position = claims.get("position")
    if type(position) is not int or not 1 <= position <= MAX_POSITION:
        raise bad("position must be a whole number from 1 to 2^63-1")
    head_hash, key_id, recorded_at = claims.get("head_hash"), claims.get("key_id"), claims.get("recorded_at")
    if not isinstance(head_hash, str) or not _HEX64.match(head_hash):
        raise bad("head_hash must be 64 lower-case hex digits")
    if not isinstance(key_id, str) or not _HEX16.match(key_id):
        raise bad("key_id must be 16 lower-case hex digits")
    if not isinstance(recorded_at, str):
        raise bad("recorded_at must be an ISO time")
    try:
        parse_ts(recorded_at)
    except ValueError as exc:
        raise bad(f"recorded_at: {exc}") from exc
    if not isinstance(signature, str) or len(signature) > 200:
        raise bad("signature must be base64url text")
    if set(claims) != set(Checkpoint(0, "", "", "", "").claims()):
        raise bad("the claims carry unknown fields")
    return Checkpoint(position, head_hash, recorded_at, key_id, signature)


def parse_text(text: str) -> Checkpoint:
    try:
        document = json.loads(text, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"not a checkpoint: the text is not JSON ({exc})", _HINT) from exc
    return parse(document)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def held_by(checkpoint: Checkpoint, record: StoredRecord | None, head: int) -> str | None:
    """Why the log no longer holds ``checkpoint`` (``record`` is the log's row at its position), or None."""
    p, expected = checkpoint.position, checkpoint.head_hash[:16]
    if head < p:
        return (
            f"the log now ends at position {head}, but position {p} was signed on {checkpoint.recorded_at} "
            f"with hash {expected}…: events were removed (truncated, rolled back or emptied)"
        )
    if record is None:
        return f"position {p} (signed with hash {expected}…) is missing from the log"
    if record.hash != checkpoint.head_hash:
        return (
            f"position {p} now holds hash {record.hash[:16]}…, not the {expected}… signed on "
            f"{checkpoint.recorded_at}: the log was rewritten"
        )
    return None


# --- files ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where a checkpoint was read (``file:line``) and what was there: a checkpoint or why it is not one."""

    where: str
    checkpoint: Checkpoint | None
    problem: str | None = None


def read_sources(paths: Iterable[Path]) -> Iterator[Source]:
    """Checkpoints from files (JSON lines, or one JSON document) and directories (their *.json/*.jsonl files)."""
    for path in paths:
        path = path.expanduser()
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in {".json", ".jsonl"} and p.is_file())
            if not files:
                raise InvalidInput(f"{path} holds no *.json or *.jsonl checkpoint files", _HINT)
            for file in files:
                yield from _read_file(file)
        else:
            yield from _read_file(path)


def _read_file(path: Path) -> Iterator[Source]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read checkpoint file {path}: {exc}", _HINT) from exc
    try:  # a single (possibly pretty-printed) document, e.g. saved from GET /checkpoints/latest
        whole = json.loads(text, parse_constant=_no_constants)
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        yield _source(f"{path}", lambda: parse(whole))
        return
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise InvalidInput(f"checkpoint file {path} is empty", _HINT)
    for n, line in lines:
        yield _source(f"{path}:{n}", lambda line=line: parse_text(line))  # type: ignore[misc]


def _source(where: str, read: Callable[[], Checkpoint]) -> Source:
    try:
        return Source(where, read())
    except InvalidInput as exc:
        return Source(where, None, exc.message)


@dataclass
class CheckpointLog:
    """An append-only JSON-lines file of checkpoints (``serve`` writes one; keep a copy elsewhere)."""

    path: Path

    def append(self, checkpoint: Checkpoint) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"  # a line cut short by a crash: start afresh
            os.write(fd, (("\n" if torn else "") + checkpoint.to_line() + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def latest(self) -> Checkpoint | None:
        """The last checkpoint in the file (None when there is none); reads only the file's tail and skips a
        line cut short by a crash."""
        try:
            with self.path.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - 2 * MAX_LINE_CHARS))
                tail = fh.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None
        for line in reversed(tail.splitlines()):
            if line.strip():
                try:
                    return parse_text(line)
                except InvalidInput:
                    log.warning("a line near the end of %s is not a checkpoint; skipping it", self.path)
        return None


def due(last: Checkpoint | None, head: int, now: _dt.datetime, every_events: int, every: _dt.timedelta | None) -> bool:
    """Whether a new checkpoint should be written: the head moved, by ``every_events`` or ``every`` ago."""
    if head < 1:
        return False
    if last is None:
        return True
    if head <= last.position:
        return False
    if every_events and head - last.position >= every_events:
        return True
    return every is not None and now - last.moment >= every


@dataclass
class Checkpointer:
    """Writes a checkpoint to its log whenever one is due (``serve`` runs it in the background).

    Several writers of one file (nodes sharing a checkpoint file, ``serve`` and a second process) write it once per
    interval between them: a writer that finds a checkpoint due takes ``lease`` (one writer of the ledger at a time;
    one that finds it held skips its turn), then reads the file's newest checkpoint again, whoever wrote it, and
    writes only if one is still due. Nodes with files of their own each keep theirs at the configured rate."""

    make: Callable[[], Checkpoint]  # signs the current head
    head: Callable[[], int]
    log: CheckpointLog
    every_events: int
    every: _dt.timedelta | None
    clock: _clock.Clock = _clock.now
    last: Checkpoint | None = field(default=None)
    lease: Callable[[], AbstractContextManager[bool]] = field(default=lambda: nullcontext(True), repr=False)
    _behind: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if self.last is None:
            self.last = self.log.latest()

    def run_once(self, *, force: bool = False) -> Checkpoint | None:
        """Write a checkpoint if one is due (with ``force``: whenever the head moved); return it."""
        head = self.head()
        last = self.last
        if last is not None and head < last.position:
            if not self._behind:  # say it once, not at every poll
                log.error(
                    "the log's head (%d) is behind the last checkpoint (%d): check it with "
                    "`compliance-ledger verify --checkpoint %s`",
                    head,
                    last.position,
                    self.log.path,
                )
            self._behind = True
            return None
        if not self._due(last, head, force):
            return None
        with self.lease() as held:
            if not held:  # another writer is at it: this one's turn comes at the next poll
                return None
            self.last = last = self.log.latest() or last  # what another writer of this file wrote meanwhile
            if not self._due(last, head, force):
                return None
            checkpoint = self.make()
            self.log.append(checkpoint)
            self.last = checkpoint
            return checkpoint

    def _due(self, last: Checkpoint | None, head: int, force: bool) -> bool:
        moved = head >= 1 and (last is None or head > last.position)
        return moved and (force or due(last, head, self.clock(), self.every_events, self.every))
