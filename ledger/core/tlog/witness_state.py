"""A witness's files and its service: the witness key (with its name), the state directory (one file per log, its
last cosigned checkpoint) and :class:`Witness`, which checks and records each ``add-checkpoint`` atomically.

* **The key file** is PKCS#8 PEM (mode 0600) preceded by two lines of text, ``name: <witness name>`` among them
  (RFC 7468 lets text precede the PEM block; OpenSSL and ``cryptography`` skip it), so ``serve`` needs only the file.
* **The state directory** holds ``<sha256 hex of the origin>.checkpoint`` per log: the last checkpoint the witness
  cosigned, with the log's verified signatures and the witness's cosignature, written to a temporary file, fsynced
  and renamed over the old one (then the directory fsynced), so a crash leaves the old state or the new, whole.
  A lock on ``DIR/.lock`` keeps a second witness process off the same directory.
* **Atomic check and persist** (tlog-witness's rollback race): one lock per origin is held from reading the last
  size to having persisted the new checkpoint, so two requests for one log are decided one after the other, each
  against the state the other left. The cosignature is only returned once it is on disk.

No database and no ledger home: a witness runs on its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.core import clock
from ledger.core.errors import Conflict, InvalidInput, NotInitialised
from ledger.core.tlog.note import COSIGNATURE_V1, Checkpoint, NoteError, Signer, Verifier, check_name, parse
from ledger.core.tlog.note import parse_checkpoint as _parse_checkpoint
from ledger.core.tlog.witness import Cosigned, Refusal, add_checkpoint, parse_request, trusted_logs

KEY_TITLE = "compliance-ledger witness key (c2sp.org/tlog-cosignature, Ed25519, key type 0x04)"
MAX_KEY_FILE_BYTES = 16_384
SUFFIX = ".checkpoint"
log = logging.getLogger(__name__)


def origin_hash(origin: str) -> str:
    """The spec's name for a log in the monitoring API: lower-case hex SHA-256 of its origin."""
    return hashlib.sha256(origin.encode("utf-8")).hexdigest()


# --- the key file -------------------------------------------------------------------------------------------


def _key_text(signer: Signer) -> bytes:
    pem = signer.key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return f"{KEY_TITLE}\nname: {signer.name}\n".encode() + pem


def read_witness_key(path: Path) -> Signer:
    """The witness's signer (type 0x04) from its key file; a missing or foreign file says how to make one."""
    path = path.expanduser()
    hint = "create one with `compliance-ledger tlog witness init --key FILE --name NAME`"
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_KEY_FILE_BYTES + 1)
    except FileNotFoundError:
        raise NotInitialised(f"witness key {path} does not exist", hint) from None
    except OSError as exc:
        raise InvalidInput(f"cannot read witness key {path}: {exc.strerror}", "check the file's permissions") from None
    head, _, _ = data.partition(b"-----BEGIN")
    names = [line[6:] for line in head.decode("utf-8", errors="replace").splitlines() if line.startswith("name: ")]
    if len(data) > MAX_KEY_FILE_BYTES or len(names) != 1:
        raise InvalidInput(f"{path} is not a witness key file (no 'name:' line before the PEM block)", hint)
    try:
        key = serialization.load_pem_private_key(data, password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("not an Ed25519 key")
        return Signer(names[0], key, COSIGNATURE_V1)
    except (ValueError, TypeError, NoteError) as exc:
        raise InvalidInput(f"{path} is not a witness key file ({exc})", hint) from None


def create_witness_key(path: Path, name: str) -> tuple[Signer, bool]:
    """Create the witness key (mode 0600) named ``name``; returns ``(signer, created)``. An existing witness key of
    the same name is kept and returned; any other existing file is refused, never overwritten (a witness's key and
    name are its identity: the Ed25519 cosignature does not sign the name, so one key must never serve two names)."""
    try:
        check_name(name)
    except NoteError as exc:
        raise InvalidInput(str(exc), "name the witness like a schema-less URL, e.g. witness.example.com/w1") from None
    path = path.expanduser()
    if path.exists():
        existing = read_witness_key(path)
        if existing.name != name:
            raise Conflict(
                f"{path} already holds the witness key of {existing.name!r}, not {name!r}",
                f"keep its name (--name {existing.name}), or give another --key file for a new witness",
            )
        return existing, False
    path.parent.mkdir(parents=True, exist_ok=True)
    signer = Signer(name, Ed25519PrivateKey.generate(), COSIGNATURE_V1)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # created by someone else meanwhile: theirs stands, same rules
        return create_witness_key(path, name)
    with os.fdopen(fd, "wb") as fh:
        fh.write(_key_text(signer))
        fh.flush()
        os.fsync(fh.fileno())
    return signer, True


# --- the state directory ------------------------------------------------------------------------------------


class StateDir:
    """The witness's state: one file per origin holding its last cosigned checkpoint note."""

    def __init__(self, path: Path) -> None:
        self.path = path.expanduser()
        try:
            self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._lock = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise InvalidInput(
                f"cannot use {self.path} as the witness's state directory: {exc.strerror}",
                "give --state a directory this user can create and write",
            ) from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise Conflict(
                f"another witness process is using the state directory {self.path}",
                "stop it first, or give this one another --state directory",
            ) from None

    def file_of(self, origin: str) -> Path:
        return self.path / (origin_hash(origin) + SUFFIX)

    def read(self, origin: str) -> str | None:
        try:
            return self.file_of(origin).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def write(self, origin: str, note: str) -> None:
        """Replace the origin's file with ``note``, durably: temporary file, fsync, rename, fsync the directory."""
        target = self.file_of(origin)
        fd, temporary = tempfile.mkstemp(dir=self.path, prefix="." + target.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(note.encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        directory = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._lock)  # releases the flock


def read_state(note: str, origin: str, where: Path) -> Checkpoint:
    """The checkpoint a state file records. A file that cannot be read fails the witness closed: treating it as
    "never cosigned" would let the log roll back."""
    try:
        checkpoint = _parse_checkpoint(parse(note).text)
        if checkpoint.origin != origin:
            raise NoteError(f"its origin is {checkpoint.origin!r}, not {origin!r}")
    except NoteError as exc:
        raise NotInitialised(
            f"the witness state {where} is not a checkpoint of {origin!r}: {exc}",
            "restore it from a backup; never delete it (a witness that forgets a log's size cosigns a rollback)",
        ) from None
    return checkpoint


class Witness:
    """The witness: its key, the logs it trusts, its state; each ``add-checkpoint`` checked and recorded under the
    log's lock."""

    def __init__(self, signer: Signer, logs: Iterable[Verifier], state: StateDir, now: clock.Clock = clock.now) -> None:
        if signer.kind != COSIGNATURE_V1:
            raise InvalidInput("a witness signs cosignatures: its key must be of type 0x04", "use a witness key")
        self.signer = signer
        self.logs = trusted_logs(logs)
        self.state = state
        self._now = now
        self._locks = {origin: threading.Lock() for origin in self.logs}
        self._hashes = {origin_hash(origin): origin for origin in self.logs}
        self._last: dict[str, tuple[Checkpoint, str]] = {}
        for origin in self.logs:  # every known log's state is read (and checked) before the first request
            note = state.read(origin)
            if note is not None:
                self._last[origin] = (read_state(note, origin, state.file_of(origin)), note)

    @property
    def verifier(self) -> Verifier:
        return self.signer.verifier

    def size_of(self, origin: str) -> int | None:
        """The size of the last checkpoint cosigned for ``origin`` (None: never)."""
        last = self._last.get(origin)
        return last[0].size if last else None

    def add_checkpoint(self, body: bytes) -> Cosigned:
        """Check an ``add-checkpoint`` body, cosign and persist; a :class:`Refusal` carries the spec's status."""
        request = parse_request(body)
        origin = request.checkpoint.origin
        # held from reading the last size to having persisted the new one: no rollback race (an unknown origin has
        # no lock and no state: add_checkpoint answers it 404 before anything else)
        with self._locks.get(origin) or contextlib.nullcontext():
            last = self._last.get(origin)
            try:
                cosigned = add_checkpoint(request, self.logs, last[0] if last else None, self.signer, self._timestamp())
            except Refusal as refusal:
                if refusal.status == 422:  # signed by the log, inconsistent: kept in the log as evidence
                    log.warning(
                        "refused (422) a checkpoint of %s: %s\n%s", origin, refusal.message, request.note.render()
                    )
                raise
            self.state.write(origin, cosigned.note)
            self._last[origin] = (cosigned.checkpoint, cosigned.note)
        return cosigned

    def latest(self, hashed_origin: str) -> str | None:
        """The last cosigned checkpoint note of the log whose origin hashes to ``hashed_origin`` (None: never)."""
        origin = self._hashes.get(hashed_origin)
        if origin is None:
            return None
        lock = self._locks[origin]
        with lock:
            last = self._last.get(origin)
        return last[1] if last else None

    def _timestamp(self) -> int:
        return int(self._now().timestamp())
