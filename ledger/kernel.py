"""The kernel every capability stands on: who acts (:class:`Actor`), its own settings, and the store with the one
door for appends and the retry on a lost race (:class:`Kernel`). The façade (``ledger.service``) hands it to each
capability's handlers.

The kernel imports no capability (``tests/unit/test_architecture.py`` holds it): what a capability is configured
with (its workflow table, its rules, its time limits) goes to that capability's constructor, not here.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ledger.core import access, credentials, signing
from ledger.core import clock as _clock
from ledger.core.errors import ConcurrencyError, InvalidInput, NotInitialised, StoreUnavailable
from ledger.core.events import DomainEvent, KeyRole, LedgerInitialised, RecordedEvent, SigningKeyBound
from ledger.core.receipt_key import ReceiptKey
from ledger.core.storage import LedgerStore
from projections import snapshots
from projections.search import SearchIndex

Source = Literal["mcp", "rest", "cli"]
T = TypeVar("T")
MAX_AGENT_CHARS = 64
LEDGER_STREAM = "ledger"  # the stream that binds the ledger to its receipt and signing keys


@dataclass(frozen=True)
class Actor:
    """Who is acting (from the credential), in which role, and through which front end.

    ``role`` is the API key's (``agent`` | ``auditor`` | ``admin``; see :mod:`ledger.core.access`); ``admin=True`` is
    shorthand for ``role="admin"`` and always equals ``role == "admin"``. ``by_key`` says the identity was
    proven by an API key, which is what limits an agent's reads to its own.
    """

    agent: str
    source: Source = "cli"
    correlation_id: str | None = None
    admin: bool = False
    role: KeyRole = "agent"
    by_key: bool = False

    def __post_init__(self) -> None:
        if self.admin and self.role == "auditor":
            raise ValueError("an actor cannot be both admin and auditor")
        role: KeyRole = "admin" if self.admin else self.role
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "admin", role == "admin")


@dataclass(frozen=True)
class LedgerConfig:
    """The kernel's own settings (the capabilities' are given to their constructors by the composition root)."""

    max_conflict_retries: int = 20  # load-decide-append attempts before a request gives up on a busy stream
    snapshot_every: int = snapshots.DEFAULT_EVERY  # events folded between projection snapshots; 0: never snapshot
    secret_scan: credentials.Mode = "refuse"  # credentials in caller text: refuse | redact | off (LEDGER_SECRET_SCAN)

    def __post_init__(self) -> None:
        credentials.check_mode(self.secret_scan)


@dataclass
class Kernel:
    """What every capability's handlers work with: the store, the search index, the receipt key, the signing key,
    the settings and the clock, plus the one door events go through (:meth:`append`) and the retry on a lost race.

    Capabilities are handed the kernel (composition); none inherits from it.
    """

    store: LedgerStore
    index: SearchIndex
    key: ReceiptKey
    config: LedgerConfig = field(default_factory=LedgerConfig)
    clock: _clock.Clock = _clock.now
    signer: signing.SigningKey | None = None  # Ed25519: new receipts and checkpoints
    _snapshot_store: snapshots.Snapshots | None = None

    def meta(self, actor: Actor) -> dict[str, Any]:
        """An event's metadata outside any session (``SessionGrants.meta`` adds a checked session)."""
        meta: dict[str, Any] = {"agent": actor.agent, "source": actor.source}
        if actor.admin:
            meta["admin"] = True
        if actor.correlation_id:
            meta["correlation_id"] = actor.correlation_id
        return meta

    def append(
        self, actor: Actor, stream: str, expected_version: int, events: Sequence[DomainEvent], meta: dict[str, Any]
    ) -> list[RecordedEvent]:
        """Append for ``actor``: the one door every command's events go through, so a role that only reads
        (an auditor key) is refused here, whatever the command, before anything is written; and so is text that
        holds a credential (or it is redacted: ``config.secret_scan``)."""
        access.require_writer(actor)
        events = credentials.screen_events(events, self.config.secret_scan)
        return self.store.append(stream, expected_version, events, meta)

    def screen(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """A command's caller text, by argument name, as the door would take it: a :class:`SecretInText` when it
        holds a credential, redacted, or as it is (``config.secret_scan``). Commands that append more than once
        or derive an id from their text call it before acting, so a refusal leaves nothing behind."""
        return credentials.screen_values(values, self.config.secret_scan)

    def retrying(self, attempt: Callable[[], T]) -> T:
        """Run load-decide-append again when another writer won the race for the stream."""
        for _ in range(self.config.max_conflict_retries):
            try:
                return attempt()
            except ConcurrencyError:
                continue
        raise StoreUnavailable("the stream kept changing under this request", "retry the request")

    @property
    def snapshots(self) -> snapshots.Snapshots:
        """The projection snapshots of this store, signed and checked with the ledger key."""
        if self._snapshot_store is None:
            self._snapshot_store = snapshots.Snapshots(
                self.store, self.signer, every=self.config.snapshot_every, clock=self.clock
            )
        return self._snapshot_store

    def require_signer(self) -> signing.SigningKey:
        """The Ed25519 signing key, or :class:`NotInitialised` saying how to make one."""
        if self.signer is None:
            raise NotInitialised(
                "this ledger has no Ed25519 signing key yet (it was initialised before signing keys existed)",
                "run `compliance-ledger init` once: it creates the key (LEDGER_SIGNING_KEY_FILE) and keeps the rest",
            )
        return self.signer

    def until(self, as_of: _dt.datetime | None, position: int | None) -> int | None:
        """The last position a read as of a time or position covers (``None``: the live head)."""
        if as_of is not None and position is not None:
            raise InvalidInput("as_of and position were both given", "send one of them, not both")
        if position is not None:
            if isinstance(position, bool) or position < 0:
                raise InvalidInput("position must be 0 or more", "send a log position, e.g. 120")
            return position
        if as_of is not None:
            if as_of.tzinfo is None:
                raise InvalidInput("as_of has no UTC offset", "send an ISO time such as 2026-01-31T12:00:00Z")
            return self.store.position_as_of(as_of)
        return None

    # --- the ledger's identity: the keys its ``ledger`` stream binds ------------------------------------------

    def bindings(self) -> tuple[str | None, SigningKeyBound | None]:
        """The receipt key id and the signing key recorded on the ``ledger`` stream (``None`` before ``init``)."""
        return bindings(self.store.load_stream(LEDGER_STREAM).events)

    def verifying_key(self) -> signing.PublicKey | None:
        """The key that checks Ed25519 signatures: the signing key's public half, else the one the ledger
        recorded."""
        if self.signer is not None:
            return self.signer.public
        bound = self.bindings()[1]
        return signing.PublicKey.from_raw(signing.unb64url(bound.public_key)) if bound else None


def bindings(events: Sequence[RecordedEvent]) -> tuple[str | None, SigningKeyBound | None]:
    """The receipt key id and the signing key recorded on the ``ledger`` stream."""
    receipt_key: str | None = None
    signing_key: SigningKeyBound | None = None
    for rec in events:
        if isinstance(rec.event, LedgerInitialised) and receipt_key is None:
            receipt_key = rec.event.receipt_key_id
        elif isinstance(rec.event, SigningKeyBound) and signing_key is None:
            signing_key = rec.event
    return receipt_key, signing_key


def check_agent(agent: str) -> str:
    if not isinstance(agent, str) or not agent.strip() or len(agent) > MAX_AGENT_CHARS:
        raise InvalidInput(f"agent name {agent!r} is not valid", f"use a non-empty name of at most {MAX_AGENT_CHARS}")
    return agent
