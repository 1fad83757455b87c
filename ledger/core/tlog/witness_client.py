"""The log's side of c2sp.org/tlog-witness: ask one witness to cosign a checkpoint, and check what it answers.

:func:`request_cosignatures` POSTs ``add-checkpoint`` with a consistency proof from the size the log believes the
witness holds; on a 409 it reads the witness's size (``text/x.tlog.size``) and tries once more with a proof from
there. A 200's signature lines are checked with the witness's verifier key (type 0x04): lines of other keys are
ignored, a line of the witness's key that does not verify fails the call. Every other answer is a
:class:`WitnessRefused` quoting the witness's status and body.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx

from ledger.core.tlog.note import Checkpoint, NoteError, Signature, Verifier, parse, parse_checkpoint
from ledger.core.tlog.note import parse_signature_lines as _signature_lines
from ledger.core.tlog.witness import SIZE_CONTENT_TYPE, render_request

_SIZE_BODY = re.compile(r"(0|[1-9][0-9]{0,18})\n")
QUOTED_BYTES = 500


class WitnessError(Exception):
    """No cosignature from this witness; the message says which witness and why."""


class WitnessUnreachable(WitnessError):
    """The witness did not answer (connection refused, timeout, ...)."""


class WitnessRefused(WitnessError):
    """The witness answered with a refusal (or an answer that is not the protocol's); ``status`` and ``body`` are
    its own."""

    def __init__(self, message: str, status: int, body: str) -> None:
        super().__init__(f"{message}: HTTP {status}, {body[:QUOTED_BYTES]!r}")
        self.status = status
        self.body = body


class BadCosignature(WitnessError):
    """The witness answered 200, but a line of its key does not verify, or no line is of its key."""


def _endpoint(url: str) -> str:
    """``<submission prefix>/add-checkpoint``."""
    return url.rstrip("/") + "/add-checkpoint"


def _conflict_size(response: httpx.Response, who: str) -> int:
    """The witness's last cosigned size from a 409 (``text/x.tlog.size``, the size and a newline)."""
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    match = _SIZE_BODY.fullmatch(response.text)
    if media != SIZE_CONTENT_TYPE or match is None:
        raise WitnessRefused(
            f"{who} answered 409 without its size ({SIZE_CONTENT_TYPE}, a decimal and a newline)",
            response.status_code,
            response.text,
        )
    return int(match.group(1))


def _check_lines(response: httpx.Response, witness: Verifier, text: bytes, who: str) -> list[Signature]:
    try:
        lines = _signature_lines(response.text)
    except NoteError as exc:
        raise WitnessRefused(
            f"{who} answered 200 with something other than signature lines ({exc})", 200, response.text
        ) from None
    mine = [s for s in lines if (s.name, s.id) == (witness.name, witness.id)]  # the spec: ignore unknown keys
    for signature in mine:
        if not witness.verify(text, signature.body):
            raise BadCosignature(f"{who} returned a cosignature that does not verify with its key: {signature.line!r}")
        if signature.timestamp == 0:  # tlog-witness: "the timestamp MUST NOT be zero"
            raise BadCosignature(f"{who} returned a cosignature with timestamp 0: {signature.line!r}")
    if not mine:
        raise BadCosignature(f"{who} answered 200 with no cosignature by its key {witness.vkey}: {response.text!r}")
    return mine


def request_cosignatures(
    url: str,
    witness: Verifier,
    note: str,
    old_size: int,
    prove: Callable[[int], list[bytes]],
    timeout: float = 10.0,
    *,
    client: httpx.Client | None = None,
) -> tuple[list[Signature], int]:
    """Ask the witness at ``url`` (its submission prefix) to cosign the checkpoint ``note`` (signed by the log).

    ``old_size`` is the size the log believes the witness last cosigned (0 when it does not know); ``prove(old)``
    returns the RFC 6962 consistency proof from ``old`` to the checkpoint's size (called only for 0 < old < size).
    Returns the witness's cosignatures that verified and the old size the witness accepted (after a 409, the size
    it said it holds). Raises :class:`WitnessError`: :class:`WitnessRefused` (with the witness's status and body),
    :class:`WitnessUnreachable` or :class:`BadCosignature`."""
    try:
        text = parse(note).text
        checkpoint = parse_checkpoint(text)
    except NoteError as exc:
        raise WitnessError(f"the note to cosign is not a checkpoint: {exc}") from None
    endpoint = _endpoint(url)
    who = f"witness {witness.name} at {endpoint}"
    http = client if client is not None else httpx.Client(timeout=timeout)
    try:
        response = _post(http, endpoint, who, checkpoint, note, old_size, prove, timeout)
        used = old_size
        if response.status_code == 409:
            held = _conflict_size(response, who)
            if held > checkpoint.size:
                raise WitnessRefused(
                    f"{who} has cosigned size {held}, more than this checkpoint's {checkpoint.size}: the log went "
                    "backwards (or was rewritten) since",
                    response.status_code,
                    response.text,
                )
            used = held
            response = _post(http, endpoint, who, checkpoint, note, held, prove, timeout)
        if response.status_code != 200:
            raise WitnessRefused(
                f"{who} refused the checkpoint of size {checkpoint.size}", response.status_code, response.text
            )
        return _check_lines(response, witness, text, who), used
    finally:
        if client is None:
            http.close()


def _post(
    http: httpx.Client,
    endpoint: str,
    who: str,
    checkpoint: Checkpoint,
    note: str,
    old: int,
    prove: Callable[[int], list[bytes]],
    timeout: float,
) -> httpx.Response:
    proof = prove(old) if 0 < old < checkpoint.size else []
    try:
        return http.post(endpoint, content=render_request(old, proof, note), timeout=timeout)
    except httpx.HTTPError as exc:
        raise WitnessUnreachable(f"{who} did not answer: {exc.__class__.__name__}: {exc}") from exc
