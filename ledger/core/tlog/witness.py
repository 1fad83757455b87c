"""A c2sp.org/tlog-witness witness's decisions: an ``add-checkpoint`` body in, a cosignature or a refusal carrying
the spec's HTTP status out. Pure: the last cosigned checkpoint, the trusted log keys, the witness's key and the time
are arguments; :mod:`ledger.core.tlog.witness_state` keeps the state on disk and serialises the requests.

The checks run in the order the spec states them (tlog-witness.md, "add-checkpoint"); the first that fails answers:

====  =========================================================================================================
400   the body is not ``old <size>``, at most 63 base64 hashes, an empty line and a signed checkpoint note
404   no trusted log key is named as the checkpoint's origin
403   no trusted key for that origin signed it, or a trusted key's signature fails to verify
400   the old size is larger than the checkpoint's size
409   the old size is not the size of the last checkpoint cosigned for the origin (0 if none); the body is that
      size and a newline, ``Content-Type: text/x.tlog.size``
422   a size-0 checkpoint without the empty tree's root; a proof sent with old size 0; the same size as the last
      cosigned checkpoint with another root; a consistency proof from the old size that does not verify
====  =========================================================================================================

Otherwise the witness cosigns (c2sp.org/tlog-cosignature, type 0x04, with a non-zero timestamp) and records the
checkpoint, with the log signatures it verified and its own cosignature, as the origin's latest.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ledger.core.tlog.merkle import EMPTY_ROOT, HASH_SIZE, ProofError, verify_consistency
from ledger.core.tlog.note import (
    Checkpoint,
    Note,
    NoteError,
    Opened,
    Signer,
    Verifier,
    open_note,
    parse,
    parse_checkpoint,
    parse_signature_lines,
)

MAX_PROOF_LINES = 63
"""tlog-witness: "The client MUST NOT send more than 63 consistency proof lines"."""
SIZE_CONTENT_TYPE = "text/x.tlog.size"
TEXT = "text/plain; charset=utf-8"
_OLD = re.compile(r"old (0|[1-9][0-9]{0,18})")

TrustedLogs = Mapping[str, Sequence[Verifier]]
"""The log keys a witness trusts, by origin (a log key's name is its origin)."""


class Refusal(Exception):
    """The witness will not cosign: the HTTP ``status`` the spec asks for, and the response body to send."""

    def __init__(self, status: int, message: str, hint: str = "", *, size: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.hint = hint
        self.size = size  # a 409's last cosigned size

    @property
    def content_type(self) -> str:
        return SIZE_CONTENT_TYPE if self.size is not None else TEXT

    @property
    def body(self) -> str:
        """A 409's body is exactly the size and a newline (the spec's); other refusals say why, and what to send."""
        if self.size is not None:
            return f"{self.size}\n"
        return self.message + (f"\nhint: {self.hint}" if self.hint else "") + "\n"


def _bad_request(message: str, hint: str = "") -> Refusal:
    return Refusal(
        400,
        message,
        hint or "send 'old <size>', one base64 consistency-proof hash a line, an empty line, then the checkpoint note",
    )


@dataclass(frozen=True)
class AddCheckpoint:
    """A parsed ``add-checkpoint`` request (nothing verified yet)."""

    old: int
    proof: tuple[bytes, ...]
    note: Note
    checkpoint: Checkpoint


def render_request(old: int, proof: Sequence[bytes], note: str) -> bytes:
    """An ``add-checkpoint`` body: what a log sends."""
    lines = [f"old {old}", *(base64.b64encode(h).decode("ascii") for h in proof)]
    return ("\n".join(lines) + "\n\n" + note).encode("utf-8")


def parse_request(body: bytes) -> AddCheckpoint:
    """Read an ``add-checkpoint`` body; anything malformed is a 400 :class:`Refusal` saying what."""
    head, sep, rest = body.partition(b"\n")
    if not sep or not _OLD.fullmatch(head.decode("ascii", errors="replace")):
        raise _bad_request("the body must start with the line 'old <size>' (a decimal with no leading zeros)")
    old = int(head[4:])
    proof: list[bytes] = []
    while True:
        line, sep, rest = rest.partition(b"\n")
        if not sep:
            raise _bad_request("the consistency proof must end with an empty line, before the checkpoint")
        if not line:
            break
        if len(proof) == MAX_PROOF_LINES:
            raise _bad_request(f"more than {MAX_PROOF_LINES} consistency proof lines")
        try:
            value = base64.b64decode(line, validate=True)
        except (binascii.Error, ValueError):
            raise _bad_request(f"consistency proof line {len(proof) + 1} is not standard base64") from None
        if len(value) != HASH_SIZE:
            raise _bad_request(
                f"consistency proof line {len(proof) + 1} holds {len(value)} bytes, not a {HASH_SIZE}-byte hash"
            )
        proof.append(value)
    try:
        parsed = parse(rest)
        # the size-0 root is checked later, with the spec's 422, once origin, signature and sizes have passed
        checkpoint = parse_checkpoint(parsed.text, check_empty_root=False)
    except NoteError as exc:
        raise _bad_request(f"the checkpoint is malformed: {exc}") from None
    return AddCheckpoint(old, tuple(proof), parsed, checkpoint)


def trusted_logs(keys: Iterable[Verifier]) -> dict[str, tuple[Verifier, ...]]:
    """The log keys by origin (several keys may share one, as during a key rotation)."""
    by_origin: dict[str, tuple[Verifier, ...]] = {}
    for key in keys:
        if key not in by_origin.get(key.name, ()):
            by_origin[key.name] = (*by_origin.get(key.name, ()), key)
    return by_origin


def authenticate(request: AddCheckpoint, logs: TrustedLogs) -> Opened:
    """404 for an unknown origin, 403 unless a trusted key for it signed (and none failed), 400 when old > size.
    Returns the note with the log signatures that verified."""
    origin = request.checkpoint.origin
    keys = logs.get(origin)
    if not keys:
        raise Refusal(
            404,
            f"this witness does not witness the log {origin!r}",
            "the checkpoint's origin line must be the name of a log key the witness was started with (--log-vkey)",
        )
    try:
        opened = open_note(request.note, keys)
    except NoteError as exc:
        raise Refusal(
            403,
            f"the checkpoint is not validly signed by a key this witness trusts for {origin!r}: {exc}",
            "sign the checkpoint with the log's key; a signature line naming a trusted key must verify",
        ) from None
    if request.old > request.checkpoint.size:
        raise _bad_request(
            f"the old size {request.old} is larger than the checkpoint's size {request.checkpoint.size}",
            "the old size is the size of the last checkpoint this witness cosigned, never more than the new one",
        )
    return opened


def check_consistency(request: AddCheckpoint, last: Checkpoint | None) -> None:
    """409 when the old size is not the last cosigned size, 422 when the checkpoint does not extend the last one."""
    held = last.size if last is not None else 0
    if request.old != held:
        # tlog-witness: "If it doesn't match, the witness MUST respond with a "409 Conflict" ... The response body
        # MUST consist of the tree size of the latest cosigned checkpoint in decimal, followed by a newline"
        raise Refusal(409, f"this witness last cosigned size {held}, not {request.old}", size=held)
    checkpoint = request.checkpoint
    if checkpoint.size == 0 and checkpoint.root != EMPTY_ROOT:
        # "A checkpoint of size zero MUST have the root hash of the empty tree ... Otherwise ... 422"
        raise Refusal(422, "a checkpoint of size 0 must carry the empty tree's root (SHA-256 of nothing)")
    if request.old == 0:
        if request.proof:
            # "If the proof is not empty when the old size is zero ... 422 Unprocessable Entity"
            raise Refusal(422, "the old size is 0, so the consistency proof must be empty")
        return
    assert last is not None
    if request.old == checkpoint.size and checkpoint.root != last.root:
        # "If the old size matches the checkpoint size, the witness MUST check that the root hashes are also
        # identical. If they don't match, the witness MUST respond with a "422 Unprocessable Entity"" (the spec
        # moved this case from 409 to 422 in C2SP/C2SP#280: every 409 carries the size body, and a fork is no retry)
        raise Refusal(
            422, f"size {last.size} was cosigned with another root hash: the log forked", "never cosigned twice"
        )
    try:
        # "the consistency proof lines MUST encode a Merkle Consistency Proof from the old size to the checkpoint
        # size ... if a Merkle Consistency Proof doesn't verify, the witness MUST respond with ... 422"
        verify_consistency(request.old, checkpoint.size, request.proof, last.root, checkpoint.root)
    except ProofError as exc:
        raise Refusal(
            422,
            f"the checkpoint of size {checkpoint.size} is not consistent with the one of size {last.size} this "
            f"witness cosigned: {exc}",
            f"send the RFC 6962 consistency proof from size {last.size} to size {checkpoint.size}",
        ) from None


@dataclass(frozen=True)
class Cosigned:
    """What a successful ``add-checkpoint`` answers, and what the witness records."""

    checkpoint: Checkpoint
    lines: str  # the response body: the cosignature line(s)
    note: str  # the checkpoint with the log signatures that verified and the cosignature: the state, and what
    # GET <origin hash>/checkpoint serves


def cosign(opened: Opened, checkpoint: Checkpoint, signer: Signer, timestamp: int) -> Cosigned:
    """The witness's cosignature/v1 line over the checkpoint, at ``timestamp`` (POSIX seconds, above 0)."""
    line = signer.signature_line(opened.text, timestamp)
    logged = tuple(signature for _, signature in opened.verified)
    note = Note(opened.text, (*logged, *parse_signature_lines(line))).render()
    return Cosigned(checkpoint, line, note)


def add_checkpoint(
    request: AddCheckpoint, logs: TrustedLogs, last: Checkpoint | None, signer: Signer, timestamp: int
) -> Cosigned:
    """Every check of the spec, in its order, then the cosignature. Raises :class:`Refusal`."""
    opened = authenticate(request, logs)
    check_consistency(request, last)
    return cosign(opened, request.checkpoint, signer, timestamp)
