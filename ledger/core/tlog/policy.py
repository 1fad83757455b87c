"""Which witnesses a ledger asks to cosign its checkpoints, and how many must: ``LEDGER_WITNESSES`` and
``LEDGER_CHECKPOINT_MIN_COSIGNATURES``.

A witness is given as ``URL=VKEY``: the URL its ``add-checkpoint`` is under (``http://host:port``, or with a path
prefix) and its cosignature verifier key (type 0x04, as ``compliance-ledger tlog witness init`` prints it). Several
are separated by commas, spaces or newlines. A vkey holds no ``=`` (its base64 encodes 33 bytes, no padding), so the
last ``=`` of an entry separates the two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ledger.core.tlog.note import COSIGNATURE_V1, NoteError, Verifier, parse_vkey

_URL = re.compile(r"^https?://[^\s/?#]+(/[^\s?#]*)?$")
HINT = (
    "give each witness as URL=VKEY (e.g. http://127.0.0.1:7380=witness.example/w1+1a2b3c4d+BA…), separated by commas "
    "or spaces; the vkey is what `compliance-ledger tlog witness init` printed"
)


@dataclass(frozen=True)
class Witness:
    url: str
    verifier: Verifier

    @property
    def name(self) -> str:
        return self.verifier.name


def parse_witnesses(text: str) -> tuple[Witness, ...]:
    """Read ``LEDGER_WITNESSES``; a malformed entry raises ``ValueError`` saying which and why."""
    witnesses: list[Witness] = []
    for entry in re.split(r"[\s,]+", text.strip()):
        if not entry:
            continue
        url, sep, vkey = entry.rpartition("=")
        if not sep or not url:
            raise ValueError(f"witness {entry[:80]!r} is not URL=VKEY; {HINT}")
        if not _URL.match(url):
            raise ValueError(f"witness URL {url[:80]!r} is not http(s)://host[:port][/prefix]; {HINT}")
        try:
            verifier = parse_vkey(vkey)
        except NoteError as exc:
            raise ValueError(f"witness {url}: {exc}; {HINT}") from exc
        if verifier.kind != COSIGNATURE_V1:
            raise ValueError(f"witness {url}: its vkey is not a cosignature key (type 0x04); {HINT}")
        if any(w.verifier == verifier for w in witnesses):
            raise ValueError(f"witness {verifier.name} is listed twice")
        witnesses.append(Witness(url.rstrip("/"), verifier))
    return tuple(witnesses)


def required_cosignatures(witnesses: tuple[Witness, ...], minimum: int | None) -> int:
    """How many cosignatures a checkpoint needs: ``minimum`` when set, else every configured witness."""
    if minimum is None:
        return len(witnesses)
    if minimum > len(witnesses):
        raise ValueError(
            f"LEDGER_CHECKPOINT_MIN_COSIGNATURES is {minimum}, but only {len(witnesses)} witness(es) are configured"
        )
    return minimum
