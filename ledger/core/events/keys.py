"""Events of the ledger's keys: its initialisation, the signing key it is bound to, and API keys issued and
revoked."""

from typing import ClassVar, Literal

from ledger.core.events.base import DomainEvent, Texts


class LedgerInitialised(DomainEvent):
    """The ledger was initialised and bound to the receipt key with this fingerprint."""

    type_name: ClassVar[str] = "LedgerInitialised"
    texts: ClassVar[Texts] = Texts(ledger=("receipt_key_id",))
    receipt_key_id: str


class SigningKeyBound(DomainEvent):
    """The ledger was bound to the Ed25519 key that signs its receipts and checkpoints (public half recorded)."""

    type_name: ClassVar[str] = "SigningKeyBound"
    texts: ClassVar[Texts] = Texts(ledger=("key_id", "public_key"))
    key_id: str
    public_key: str  # raw public key, base64url (the JWK's "x")


class RowKeyBound(DomainEvent):
    """The ledger was bound to the key of its row authenticators (``key_id``, its fingerprint): from here on every
    event carries an authenticator by it. ``vouched_through`` > 0: the ledger predates authenticators, and its
    events 1..vouched_through were authenticated at the upgrade, after their chain verified, on the operator's word
    that the log was the ledger's; 0: every event had its authenticator from the start. Once recorded, the ledger
    never vouches for unauthenticated events again (authenticators dropped behind its back do not make it an old
    ledger)."""

    type_name: ClassVar[str] = "RowKeyBound"
    texts: ClassVar[Texts] = Texts(ledger=("key_id",))
    key_id: str
    vouched_through: int


class LedgerCarried(DomainEvent):
    """The live memory blocks of an older ledger (``origin``) were carried into this one, encrypted under this
    ledger's data keys (``compliance-ledger carry``). ``checkpoint`` is a C2SP checkpoint note of the old log's
    head (``head_position`` events, the last hashing to ``head_hash``), signed by the old ledger's key, whose note
    verifier key is ``vkey``: what proves the old history, which stays in the old database. ``left_out`` names
    the old blocks not carried, by why (``without``: the operator named them; ``erased``, ``forgotten``: gone in
    the old ledger; ``present``: this ledger already held the same text, e.g. the constitution ``init`` wrote).
    The event holds no block text."""

    type_name: ClassVar[str] = "LedgerCarried"
    texts: ClassVar[Texts] = Texts(ledger=("origin", "checkpoint", "vkey", "head_hash", "left_out"))
    origin: str
    checkpoint: str
    vkey: str
    head_position: int
    head_hash: str
    blocks_carried: int
    blocks_archived: int  # of those carried, archived (or superseded) in the old ledger: archived here too
    blocks_left_out: int
    left_out: dict[str, list[str]]


KeyRole = Literal["agent", "auditor", "admin"]


class ApiKeyIssued(DomainEvent):
    """An API key was issued to an agent with a role; only the key's SHA-256 is recorded.

    v2 replaced the ``admin`` flag of v1 with ``role``: ``agent`` (reads only its own), ``auditor`` (reads
    everything, changes nothing) or ``admin``.
    """

    type_name: ClassVar[str] = "ApiKeyIssued"
    schema_version: ClassVar[int] = 2
    texts: ClassVar[Texts] = Texts(labels=("agent",), ledger=("key_id", "key_sha256", "role"))
    key_id: str
    agent: str
    key_sha256: str
    role: KeyRole = "agent"


class ApiKeyRevoked(DomainEvent):
    """An API key was revoked: from now on it identifies nobody. ``replaced_by`` names the key that a rotation
    issued in the same append."""

    type_name: ClassVar[str] = "ApiKeyRevoked"
    texts: ClassVar[Texts] = Texts(free=("reason",), ledger=("key_id", "replaced_by"))
    key_id: str
    reason: str | None = None
    replaced_by: str | None = None
