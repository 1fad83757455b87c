"""C2SP signed notes, checkpoints and cosignatures (c2sp.org/signed-note, tlog-checkpoint, tlog-cosignature).

* A **signed note** is a text ending in a newline, a blank line, then signature lines
  ``— <key name> <base64(4-byte key ID ‖ signature)>`` (U+2014 EM DASH, a space). Only UTF-8 without control
  characters other than newline. The text is everything before the last blank line.
* An **Ed25519 note key** (signature type 0x01) signs the note text; its key ID is the first 4 bytes of
  ``SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)``; its verifier key is ``<name>+<hex ID>+<base64(0x01 ‖ key)>``.
* A **cosignature** (type 0x04, c2sp.org/tlog-cosignature) is a witness's Ed25519 signature over
  ``cosignature/v1\\ntime <unix seconds>\\n`` followed by the checkpoint's text; its signature bytes are
  key ID ‖ 8-byte big-endian timestamp ‖ 64-byte signature.
* A **checkpoint** is a note whose text is the origin, the decimal tree size and the base64 root hash, one per line.

Verification follows the spec: signatures from unknown keys are ignored (a name or an ID matching a known key is not
enough, both must); a known key whose signature fails rejects the whole note; a note no known key signed is rejected.
Go's ``golang.org/x/mod/sumdb/note`` opens the notes made here (tests/go/).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledger.core.tlog.merkle import EMPTY_ROOT, HASH_SIZE

ED25519 = 0x01
COSIGNATURE_V1 = 0x04
DASH = "\u2014"
MAX_SIGNATURES = 100
"""Signature lines read from one note (the spec asks verifiers to accept at least 16)."""
MAX_NOTE_BYTES = 1_000_000
_NAME = re.compile(r"^[^\s+]+$")
_DECIMAL = re.compile(r"^(0|[1-9][0-9]*)$")
_MAX_TIMESTAMP = 2**63 - 1


class NoteError(ValueError):
    """A note, key or checkpoint that is malformed or does not verify; the message says which and why."""


_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def decode_base64(text: str, what: str) -> bytes:
    """Standard padded base64 exactly as Go's ``base64.StdEncoding`` reads it: Python's decoder, even with
    ``validate=True``, also takes excess padding (``QUJD====``) that Go's note.Open rejects the whole note for."""
    if not _BASE64.fullmatch(text):
        raise NoteError(f"{what} is not standard base64 (A-Z a-z 0-9 + /, padded with = to a multiple of 4)")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise NoteError(f"{what} is not standard base64") from exc


def key_id(name: str, kind: int, public: bytes) -> bytes:
    """The 4-byte key ID of the signed-note spec: SHA-256(name ‖ 0x0A ‖ type ‖ public key)[:4]."""
    return hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([kind]) + public).digest()[:4]


def check_name(name: str) -> str:
    if not name or not _NAME.match(name):
        raise NoteError(f"key name {name!r} must be non-empty, with no spaces and no '+'")
    return name


@dataclass(frozen=True)
class Verifier:
    """A public key that checks signatures on notes: the log's (type 0x01) or a witness's (type 0x04)."""

    name: str
    kind: int
    public: bytes

    @property
    def id(self) -> bytes:
        return key_id(self.name, self.kind, self.public)

    @property
    def vkey(self) -> str:
        """``<name>+<8 hex digits of the key ID>+<base64(type ‖ public key)>``."""
        encoded = base64.b64encode(bytes([self.kind]) + self.public).decode("ascii")
        return f"{self.name}+{self.id.hex()}+{encoded}"

    def verify(self, text: bytes, signature: bytes) -> bool:
        """Whether ``signature`` (after the key ID) is this key's over ``text``: the note text for type 0x01, the
        cosigned message for type 0x04 (``signature`` then starts with the timestamp)."""
        key = Ed25519PublicKey.from_public_bytes(self.public)
        try:
            if self.kind == COSIGNATURE_V1:
                if len(signature) != 8 + 64:
                    return False
                (timestamp,) = struct.unpack(">Q", signature[:8])
                if timestamp > _MAX_TIMESTAMP:
                    return False
                key.verify(signature[8:], cosigned_message(text, timestamp))
            else:
                if len(signature) != 64:
                    return False
                key.verify(signature, text)
        except InvalidSignature:
            return False
        return True


def parse_vkey(vkey: str) -> Verifier:
    """Read a verifier key; an Ed25519 (0x01) or a cosignature (0x04) key, whose ID must match."""
    parts = vkey.strip().split("+", 2)
    if len(parts) != 3:
        raise NoteError("a verifier key is <name>+<8 hex digits>+<base64 key>, three parts joined by '+'")
    name, hex_id, encoded = parts
    check_name(name)
    if not re.fullmatch(r"[0-9a-f]{8}", hex_id):
        raise NoteError(f"the verifier key's ID {hex_id!r} must be 8 lower-case hex digits")
    raw = decode_base64(encoded, "the verifier key's key part")
    if len(raw) != 33 or raw[0] not in (ED25519, COSIGNATURE_V1):
        raise NoteError(
            "the verifier key must hold an Ed25519 key: type 0x01 (a log's key) or 0x04 (a witness's), then 32 bytes"
        )
    verifier = Verifier(name, raw[0], raw[1:])
    if verifier.id.hex() != hex_id:
        raise NoteError(f"the verifier key's ID {hex_id} does not match its name and key ({verifier.id.hex()})")
    return verifier


@dataclass(frozen=True)
class Signer:
    """A private Ed25519 key that signs notes as ``name``: a log (type 0x01) or a witness (0x04, cosignatures)."""

    name: str
    key: Ed25519PrivateKey = field(repr=False)
    kind: int = ED25519

    def __post_init__(self) -> None:
        check_name(self.name)

    @property
    def verifier(self) -> Verifier:
        public = self.key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return Verifier(self.name, self.kind, public)

    def signature_line(self, text: bytes, timestamp: int | None = None) -> str:
        """The note signature line for ``text``; a cosigner needs the ``timestamp`` (POSIX seconds)."""
        if self.kind == COSIGNATURE_V1:
            if timestamp is None or not 0 < timestamp <= _MAX_TIMESTAMP:
                raise NoteError("a cosignature needs a timestamp in POSIX seconds, above 0")
            body = struct.pack(">Q", timestamp) + self.key.sign(cosigned_message(text, timestamp))
        else:
            body = self.key.sign(text)
        return f"{DASH} {self.name} {base64.b64encode(self.verifier.id + body).decode('ascii')}\n"


def cosigned_message(text: bytes, timestamp: int) -> bytes:
    """What a tlog-cosignature/v1 signs: the header, the time line, then the checkpoint text."""
    return b"cosignature/v1\ntime " + str(timestamp).encode("ascii") + b"\n" + text


# --- notes ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    name: str
    id: bytes
    body: bytes  # after the key ID
    line: str

    @property
    def timestamp(self) -> int | None:
        """A cosignature's time (POSIX seconds), read from its first 8 bytes."""
        return struct.unpack(">Q", self.body[:8])[0] if len(self.body) >= 8 else None


@dataclass(frozen=True)
class Note:
    """A parsed (not yet verified) signed note."""

    text: bytes
    signatures: tuple[Signature, ...]

    def render(self) -> str:
        return self.text.decode("utf-8") + "\n" + "".join(s.line for s in self.signatures)


def sign(text: str | bytes, *signers: Signer, timestamp: int | None = None) -> str:
    """A signed note: ``text`` (which must end in a newline) signed by each of ``signers``."""
    body = text.encode("utf-8") if isinstance(text, str) else text
    _check_text(body)
    if not signers:
        raise NoteError("a note needs at least one signature")
    return body.decode("utf-8") + "\n" + "".join(s.signature_line(body, timestamp) for s in signers)


def _check_text(body: bytes) -> None:
    if not body.endswith(b"\n"):
        raise NoteError("a note's text must end in a newline")
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NoteError("a note must be UTF-8") from exc
    if any(ord(c) < 0x20 and c != "\n" for c in decoded):
        raise NoteError("a note must not hold control characters other than newline")


def parse(note: str | bytes) -> Note:
    """Split a signed note into its text and signature lines (nothing verified yet)."""
    data = note.encode("utf-8") if isinstance(note, str) else note
    if len(data) > MAX_NOTE_BYTES:
        raise NoteError(f"the note is larger than {MAX_NOTE_BYTES} bytes")
    _check_text(data)
    split = data.rfind(b"\n\n")
    if split < 0:
        raise NoteError("a signed note needs a blank line between its text and its signature lines")
    text, lines = data[: split + 1], data[split + 2 :]
    signatures: list[Signature] = []
    # split on newlines only: str.splitlines() also breaks at U+2028, U+0085 and others, which Go's note.Open
    # (and the spec) keep inside a line
    for line in lines.decode("utf-8").split("\n")[:-1]:
        if len(signatures) >= MAX_SIGNATURES:
            raise NoteError(f"the note carries more than {MAX_SIGNATURES} signatures")
        signatures.append(_parse_signature(line))
    if not signatures:
        raise NoteError("the note carries no signature lines")
    return Note(text, tuple(signatures))


def parse_signature_lines(text: str) -> list[Signature]:
    """Signature lines on their own, e.g. a witness's answer to add-checkpoint."""
    if text and not text.endswith("\n"):
        raise NoteError("signature lines must each end in a newline")
    return [_parse_signature(line) for line in text.split("\n")[:-1]]


def _parse_signature(line: str) -> Signature:
    if not line.startswith(DASH + " "):
        raise NoteError(f"a signature line must start with '{DASH} ' (an em dash and a space): {line[:40]!r}")
    parts = line[2:].split(" ")
    if len(parts) != 2:
        raise NoteError(f"a signature line is '{DASH} <key name> <base64 signature>': {line[:60]!r}")
    name, encoded = parts
    check_name(name)
    raw = decode_base64(encoded, f"the signature of {name}")
    if len(raw) < 5:
        raise NoteError(f"the signature of {name} is too short to hold a key ID and a signature")
    return Signature(name, raw[:4], raw[4:], line + "\n")


@dataclass(frozen=True)
class Opened:
    """A note with the signatures that verified, by key."""

    note: Note
    verified: tuple[tuple[Verifier, Signature], ...]

    @property
    def text(self) -> bytes:
        return self.note.text

    def by(self, verifier: Verifier) -> Signature | None:
        return next((s for v, s in self.verified if v == verifier), None)


def open_note(note: str | bytes | Note, verifiers: Iterable[Verifier]) -> Opened:
    """Verify a note against known keys: unknown signatures are ignored; a known key's failing signature rejects the
    note; so does a note no known key signed."""
    parsed = note if isinstance(note, Note) else parse(note)
    known = {(v.name, v.id): v for v in verifiers}
    verified = []
    for signature in parsed.signatures:
        verifier = known.get((signature.name, signature.id))
        if verifier is None:
            continue
        if not verifier.verify(parsed.text, signature.body):
            raise NoteError(f"the signature of {signature.name} (key ID {signature.id.hex()}) does not verify")
        verified.append((verifier, signature))
    if not verified:
        names = ", ".join(sorted({v.name for v in known.values()})) or "none"
        raise NoteError(f"no known key signed this note (known: {names})")
    return Opened(parsed, tuple(verified))


# --- checkpoints ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    """A tree head: the log's origin, its size and its root hash (c2sp.org/tlog-checkpoint)."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    @property
    def text(self) -> bytes:
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode("ascii"), *self.extensions]
        return ("\n".join(lines) + "\n").encode("utf-8")


def parse_checkpoint(text: bytes, *, check_empty_root: bool = True) -> Checkpoint:
    """Read a checkpoint's note text (origin, size, root, any extension lines). A size-0 checkpoint must carry the
    empty tree's root; ``check_empty_root=False`` leaves that to the caller (a witness answers it with its own
    status, 422, after the checks that come first)."""
    try:
        lines = text.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise NoteError("a checkpoint must be UTF-8") from exc
    if len(lines) < 4 or lines[-1] != "":
        raise NoteError("a checkpoint's text is the origin, the tree size and the root hash, each on its own line")
    origin, size_text, root_text, *extensions = lines[:-1]
    if not origin:
        raise NoteError("a checkpoint's origin line is empty")
    if not _DECIMAL.match(size_text) or len(size_text) > 19:
        raise NoteError(f"a checkpoint's tree size must be a decimal with no leading zeros, not {size_text[:30]!r}")
    root = decode_base64(root_text, "the checkpoint's root hash")
    if len(root) != HASH_SIZE:
        raise NoteError(f"the checkpoint's root hash has {len(root)} bytes, not {HASH_SIZE}")
    if any(not line for line in extensions):
        raise NoteError("a checkpoint's extension lines must not be empty")
    checkpoint = Checkpoint(origin, int(size_text), root, tuple(extensions))
    if check_empty_root and checkpoint.size == 0 and root != EMPTY_ROOT:
        raise NoteError("a checkpoint of size 0 must carry the empty tree's root, SHA-256 of nothing")
    return checkpoint


@dataclass(frozen=True)
class SignedCheckpoint:
    """A checkpoint note opened with the log's key, and the cosignatures that verified with the witnesses' keys."""

    checkpoint: Checkpoint
    note: Note
    cosignatures: tuple[tuple[Verifier, Signature], ...]


def open_checkpoint(
    note: str | bytes, log: Verifier, witnesses: Sequence[Verifier] = (), *, origin: str | None = None
) -> SignedCheckpoint:
    """Open a checkpoint note: the log's key must have signed it, its origin must be the log key's name (or
    ``origin``); witnesses' cosignatures that verify are returned (unknown ones ignored, a failing known one
    rejects the note)."""
    opened = open_note(note, [log, *witnesses])
    if opened.by(log) is None:
        raise NoteError(f"the log's key {log.name} did not sign this checkpoint")
    checkpoint = parse_checkpoint(opened.text)
    expected = origin if origin is not None else log.name
    if checkpoint.origin != expected:
        raise NoteError(f"the checkpoint's origin is {checkpoint.origin!r}, not {expected!r}")
    cosigned = tuple((v, s) for v, s in opened.verified if v.kind == COSIGNATURE_V1)
    return SignedCheckpoint(checkpoint, opened.note, cosigned)


def add_signatures(note: str, lines: Iterable[Signature]) -> str:
    """The note with signature lines added (a line already there is not repeated)."""
    parsed = parse(note)
    have = {s.line for s in parsed.signatures}
    extra = tuple(s for s in lines if s.line not in have)
    return Note(parsed.text, parsed.signatures + extra).render()
