"""HTTP side of signed checkpoints: ``GET /checkpoints/latest``, ``GET /keys/public``, and the background writers.

``serve`` writes, whenever ``LEDGER_CHECKPOINT_EVERY_EVENTS`` events or ``LEDGER_CHECKPOINT_EVERY_MINUTES`` have
passed since the last one (and at shutdown), a JSON checkpoint of the chain head to the checkpoint file, and a C2SP
checkpoint of the Merkle tree, cosigned by the witnesses and kept in the database (``GET /checkpoint``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
from fastapi import APIRouter
from pydantic import BaseModel

from api.rest.context import Caller
from api.rest.deps import LedgerDep, SettingsDep
from api.settings import Settings
from ledger.core import signing
from ledger.core.canonical import parse_ts
from ledger.core.errors import LedgerError, NotFound
from ledger.service import Actor, Checkpointer, Ledger, Signed

log = logging.getLogger(__name__)
POLL_SECONDS = 1.0


class CheckpointClaims(BaseModel):
    type: str
    v: int
    position: int
    head_hash: str
    recorded_at: str
    key_id: str


class CheckpointDocument(BaseModel):
    """A checkpoint exactly as written to the checkpoint file; check it with the public key."""

    alg: str
    checkpoint: CheckpointClaims
    signature: str


class Jwk(BaseModel):
    kty: str
    crv: str
    x: str
    kid: str
    use: str
    alg: str


class PublicKeyDocument(BaseModel):
    """The ledger's Ed25519 public key, as PEM and as a JSON Web Key."""

    key_id: str
    alg: str
    pem: str
    jwk: Jwk


def router() -> APIRouter:
    routes = APIRouter(tags=["audit"])

    @routes.get("/checkpoints/latest", response_model=CheckpointDocument)
    async def latest_checkpoint(ledger: LedgerDep, settings: SettingsDep, who: Caller) -> Any:
        """The newest checkpoint the server wrote (keep copies elsewhere; `verify --checkpoint` checks them)."""

        def latest(_actor: Actor) -> Any:
            found = ledger.latest_checkpoint_in(settings.checkpoint_path)
            if found is None:
                raise NotFound(
                    "no checkpoint has been written yet",
                    "serve writes one at start when the log has events; or run `compliance-ledger checkpoint`",
                )
            return found.document()

        return await who.run(latest)

    @routes.get("/keys/public", response_model=PublicKeyDocument)
    async def public_key(ledger: LedgerDep, who: Caller) -> Any:
        """The public key that checks receipts and checkpoints offline."""
        return await who.run(lambda _actor: signing.public_key_document(ledger.public_key()))

    return routes


@dataclass
class NoteSigner:
    """Signs a C2SP checkpoint of the tree when one is due, with its witnesses' cosignatures; remembers the last
    failure (a witness that refuses or cannot be reached) so that it is logged once per change, loudly.

    Several nodes on one database sign between them at the configured rate: one signs at a time (a lease; a node
    that finds another signing skips its turn), and "due" is measured from the newest checkpoint kept by any node
    (its size and ``signed_at``), read under the lease; before the first one, from this node's start."""

    ledger: Ledger
    every_events: int
    every: _dt.timedelta | None
    last_size: int | None = None  # the newest kept checkpoint's size, as last seen (a poll skips while the tree is)
    started: _dt.datetime | None = None
    problem: str | None = field(default=None)

    def run_once(self, *, force: bool = False) -> None:
        clock = self.ledger.clock
        if self.started is None:
            self.started = clock()
        size = self.ledger.store.tree_size()
        if self.last_size is not None and size <= self.last_size:
            return
        try:
            signed = self.ledger.sign_tlog_checkpoint_if(lambda kept, size: self._due(kept, size, force))
        except LedgerError as exc:
            if exc.message != self.problem:
                log.error("could not sign a transparency-log checkpoint: %s (%s)", exc.message, exc.hint)
            self.problem = exc.message
            return
        self.problem = None
        if signed is not None:
            self.last_size = signed.size
            log.info(
                "transparency-log checkpoint of tree size %d signed (%s)", signed.size, ", ".join(signed.cosigned_by)
            )

    def _due(self, kept: Signed | None, size: int, force: bool) -> bool:
        """Whether to sign now, given the newest checkpoint any node kept and the tree's size."""
        self.last_size = kept.size if kept is not None else 0
        if size <= self.last_size:
            return False
        if force or (self.every_events and size - self.last_size >= self.every_events):
            return True
        since = parse_ts(kept.signed_at) if kept is not None and kept.signed_at else self.started
        return self.every is not None and since is not None and self.ledger.clock() - since >= self.every


def note_signer(ledger: Ledger, settings: Settings) -> NoteSigner | None:
    """The background signer of C2SP checkpoints, or None without a signing key or with checkpoints off."""
    if ledger.signer is None or not (settings.checkpoint_every_events or settings.checkpoint_every_minutes):
        return None
    return NoteSigner(ledger, settings.checkpoint_every_events, settings.checkpoint_every)


def checkpointer(ledger: Ledger, settings: Settings) -> Checkpointer | None:
    """The background writer, or None when automatic checkpoints are off or there is no signing key."""
    if ledger.signer is None or not (settings.checkpoint_every_events or settings.checkpoint_every_minutes):
        return None
    return ledger.checkpointer(
        settings.checkpoint_path, every_events=settings.checkpoint_every_events, every=settings.checkpoint_every
    )


@contextlib.asynccontextmanager
async def running(writer: Checkpointer | None, signer: NoteSigner | None = None) -> AsyncIterator[None]:
    """Run ``writer`` and ``signer`` in the background for the life of the app; a last checkpoint of each at
    shutdown."""
    if writer is None and signer is None:
        yield
        return
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_loop, writer, signer)
        try:
            yield
        finally:
            tasks.cancel_scope.cancel()
    if writer is not None:
        await anyio.to_thread.run_sync(_write, writer, True)
    if signer is not None:
        await anyio.to_thread.run_sync(lambda: _sign(signer, True))


async def _loop(writer: Checkpointer | None, signer: NoteSigner | None) -> None:
    while True:
        if writer is not None:
            await anyio.to_thread.run_sync(_write, writer, False)
        if signer is not None:
            await anyio.to_thread.run_sync(lambda: _sign(signer, False))
        await anyio.sleep(POLL_SECONDS)


def _sign(signer: NoteSigner, force: bool) -> None:
    try:
        signer.run_once(force=force)
    except (LedgerError, OSError) as exc:  # the store is down: try again at the next poll
        log.warning("could not sign a transparency-log checkpoint: %s", exc)


def _write(writer: Checkpointer, force: bool) -> None:
    try:
        written = writer.run_once(force=force)
    except (LedgerError, OSError) as exc:  # the store or the disk is down: try again at the next poll
        log.warning("could not write a checkpoint: %s", exc)
        return
    if written is not None:
        log.info("checkpoint of position %d written to %s", written.position, writer.log.path)
