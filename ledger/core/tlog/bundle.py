"""Offline proof bundles: the c2sp.org/tlog-proof@v1 text format, and its verification with no database.

A bundle is ``c2sp.org/tlog-proof@v1``, an optional ``extra <base64>`` line, ``index <n>``, the inclusion proof's
hashes one per line (leaf side first), an empty line, then the checkpoint note verbatim with its cosignatures.
Verifying one (tlog-proof's four steps): compute the leaf hash from the leaf data the verifier holds, open the
checkpoint with the log's key for its origin, verify the known witnesses' cosignatures against a policy (at least
``min_cosignatures`` of them), and check that the inclusion proof binds the leaf to the checkpoint's root.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ledger.core.tlog import merkle
from ledger.core.tlog.note import NoteError, SignedCheckpoint, Verifier, decode_base64, open_checkpoint

HEADER = "c2sp.org/tlog-proof@v1"
SUFFIX = ".tlog-proof"
_INDEX = re.compile(r"^index (0|[1-9][0-9]{0,18})$")
MAX_PROOF_LINES = 64


@dataclass(frozen=True)
class Bundle:
    index: int
    proof: tuple[bytes, ...]
    checkpoint: str  # the note, verbatim
    extra: bytes | None = None

    def render(self) -> str:
        lines = [HEADER]
        if self.extra is not None:
            lines.append("extra " + base64.b64encode(self.extra).decode("ascii"))
        lines.append(f"index {self.index}")
        lines.extend(base64.b64encode(h).decode("ascii") for h in self.proof)
        return "\n".join(lines) + "\n\n" + self.checkpoint


def parse(text: str) -> Bundle:
    """Read a bundle; anything malformed is a :class:`~ledger.core.tlog.note.NoteError` saying what."""
    head, sep, checkpoint = text.partition("\n\n")
    if not sep:
        raise NoteError("a tlog-proof needs an empty line between the inclusion proof and the checkpoint")
    lines = head.split("\n")
    if lines[0] != HEADER:
        raise NoteError(f"a tlog-proof starts with the line {HEADER!r}")
    rest = lines[1:]
    extra = None
    if rest and rest[0].startswith("extra "):
        extra = decode_base64(rest[0][6:], "the extra line's data")
        rest = rest[1:]
    if not rest or not (match := _INDEX.match(rest[0])):
        raise NoteError("a tlog-proof's index line is 'index <decimal, no leading zeros>'")
    hashes = rest[1:]
    if len(hashes) > MAX_PROOF_LINES:
        raise NoteError(f"the inclusion proof has more than {MAX_PROOF_LINES} hashes")
    proof = []
    for n, line in enumerate(hashes, 1):
        value = decode_base64(line, f"inclusion proof line {n}")
        if len(value) != merkle.HASH_SIZE:
            raise NoteError(f"inclusion proof line {n} holds {len(value)} bytes, not a {merkle.HASH_SIZE}-byte hash")
        proof.append(value)
    return Bundle(int(match.group(1)), tuple(proof), checkpoint, extra)


@dataclass(frozen=True)
class Verified:
    bundle: Bundle
    checkpoint: SignedCheckpoint

    @property
    def witnesses(self) -> list[str]:
        return [v.name for v, _ in self.checkpoint.cosignatures]


def verify(
    text: str,
    leaf_data: bytes,
    log: Verifier,
    witnesses: Sequence[Verifier] = (),
    min_cosignatures: int = 0,
) -> Verified:
    """Check a bundle for ``leaf_data`` (the entry's data; for the ledger, the event's 32-byte chain hash) against
    the log's key and a witness policy. Raises :class:`NoteError` or :class:`merkle.ProofError` saying why not."""
    bundle = parse(text)
    signed = open_checkpoint(bundle.checkpoint, log, witnesses)
    have = len(signed.cosignatures)
    if have < min_cosignatures:
        named = ", ".join(v.name for v, _ in signed.cosignatures) or "none"
        raise NoteError(
            f"the checkpoint carries {have} valid cosignature(s) from the given witnesses ({named}); "
            f"the policy asks for {min_cosignatures}"
        )
    size = signed.checkpoint.size
    if bundle.index >= size:
        raise merkle.ProofError(f"index {bundle.index} is not in the checkpoint's tree of {size} leaves")
    merkle.verify_inclusion(bundle.index, size, merkle.leaf_hash(leaf_data), bundle.proof, signed.checkpoint.root)
    return Verified(bundle, signed)
