"""``compliance-ledger tlog follow``: watch a ledger from outside with client-held state.

Fetch ``GET /checkpoint``, open it with the ledger's verifier key, and compare it with the checkpoint kept in the
state file: a smaller tree is a rollback, the same size with another root or a consistency proof
(``GET /tlog/consistency``) that does not verify is a fork; either raises :class:`Fork` naming both trees, and the
state file keeps the old checkpoint. Otherwise the new checkpoint replaces it (written to a temporary file, synced,
renamed). The first run keeps the first checkpoint it sees (trust on first use: compare its root with one you got
another way, or run follow from two places).
"""

from __future__ import annotations

import base64
import os
import tempfile
from pathlib import Path

import httpx

from ledger.core.errors import InvalidInput, StoreUnavailable
from ledger.core.tlog import merkle, note

TIMEOUT_SECONDS = 30.0


class Fork(Exception):
    """The log the URL serves is not an extension of the one kept: rewritten, forked or rolled back."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _get(client: httpx.Client, url: str) -> httpx.Response:
    try:
        response = client.get(url)
    except httpx.HTTPError as exc:
        raise StoreUnavailable(f"cannot reach {url}: {exc}", "check the URL and that the ledger is serving") from exc
    if response.status_code != 200:
        raise StoreUnavailable(
            f"{url} answered {response.status_code}: {response.text[:300]}",
            "check the URL and the API key (LEDGER_API_KEY or --api-key)",
        )
    return response


def follow_once(base_url: str, state: Path, log: note.Verifier, *, api_key: str | None = None) -> str:
    """One check; returns what happened in a sentence, raises :class:`Fork` on a rewrite or rollback."""
    base = base_url.rstrip("/")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(headers=headers, timeout=TIMEOUT_SECONDS) as client:
        text = _get(client, f"{base}/checkpoint").text
        try:
            new = note.open_checkpoint(text, log).checkpoint
        except note.NoteError as exc:
            raise Fork(f"{base}/checkpoint is not a checkpoint signed by {log.name}: {exc}") from exc
        kept_text = _read_state(state)
        if kept_text is None:
            _write_state(state, text)
            return f"first checkpoint kept in {state}: {new.origin}, tree size {new.size}, root {_b64(new.root)}"
        try:
            old = note.open_checkpoint(kept_text, log).checkpoint
        except note.NoteError as exc:
            raise InvalidInput(
                f"the state file {state} does not hold a checkpoint of {log.name}: {exc}",
                "give the state file this ledger's follow wrote, or a new path to start afresh",
            ) from exc
        where = f"{base} now serves tree size {new.size} root {_b64(new.root)}; {state} holds size {old.size} root " + (
            _b64(old.root)
        )
        if new.size < old.size:
            raise Fork(f"the log was rolled back: {where}")
        if new.size == old.size:
            if new.root != old.root:
                raise Fork(f"two trees of the same size: {where}")
            return f"unchanged: tree size {new.size}"
        answer = _get(client, f"{base}/tlog/consistency?old={old.size}&size={new.size}").json()
        try:
            proof = [base64.b64decode(h, validate=True) for h in answer["proof"]]
            merkle.verify_consistency(old.size, new.size, proof, old.root, new.root)
        except (KeyError, TypeError, ValueError) as exc:  # ProofError is a ValueError
            raise Fork(f"the new tree does not extend the kept one ({exc}): {where}") from exc
    _write_state(state, text)
    return f"consistent: tree grew from {old.size} to {new.size}; {state} updated"


def _read_state(state: Path) -> str | None:
    try:
        return state.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read the state file {state}: {exc}", "give a readable file") from exc


def _write_state(state: Path, text: str) -> None:
    state.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=state.parent, prefix=state.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, state)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
