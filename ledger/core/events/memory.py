"""Events of memory: blocks remembered, rejected as duplicates, searched, recalled, curated and given outcomes."""

from typing import ClassVar, Literal

from pydantic import Field

from ledger.core.events.base import DomainEvent, Texts, Timestamp


class MemoryRemembered(DomainEvent):
    """A new memory block was stored.

    v4 added ``context`` (what the contributor was working on, kept as the block's provenance; the brain's
    thoughts carry it, earlier blocks have none); v3 added ``category`` (v2 blocks are ``knowledge``); v2 made
    ``tags`` a list (v1 stored one comma-separated string).
    """

    type_name: ClassVar[str] = "MemoryRemembered"
    schema_version: ClassVar[int] = 4
    texts: ClassVar[Texts] = Texts(
        free=("content", "context"),
        labels=("tags", "category"),
        ledger=("block_id", "session_id"),
    )
    block_id: str
    content: str
    tags: list[str]
    category: str = "knowledge"
    session_id: str | None = None
    context: str | None = None


class MemoryDuplicateRejected(DomainEvent):
    """A remember request was rejected because a block with the same normalised content exists."""

    type_name: ClassVar[str] = "MemoryDuplicateRejected"
    texts: ClassVar[Texts] = Texts(ledger=("block_id", "session_id"))
    block_id: str
    session_id: str | None = None


class MemorySearched(DomainEvent):
    """A session searched memory; this issues the session's one-time compliance token."""

    type_name: ClassVar[str] = "MemorySearched"
    texts: ClassVar[Texts] = Texts(free=("query",), ledger=("session_id", "result_ids"))
    session_id: str
    query: str
    limit: int
    result_ids: list[str]
    count: int
    token_expires_at: Timestamp | None = None


Frame = Literal["self", "attention", "task"]


class MemoryRecalled(DomainEvent):
    """Blocks were recalled into a frame and brought to the agent; the projection reinforces them and the
    co-retrieval edges between them. A recall with a query in a session issues the session's token, exactly
    as a search does."""

    type_name: ClassVar[str] = "MemoryRecalled"
    schema_version: ClassVar[int] = 2
    texts: ClassVar[Texts] = Texts(
        free=("query",),
        ledger=("session_id", "frame", "block_ids", "guaranteed_ids", "relevant_ids"),
    )
    session_id: str | None
    query: str | None
    frame: Frame
    top_k: int
    block_ids: list[str]
    guaranteed_ids: list[str]
    tokens: int
    active_hours: float
    token_expires_at: Timestamp | None = None
    # v2: the shown blocks relevant to the query (the search's similarity floor); the token counts only these.
    # None without a query, and for recalls recorded before v2 (their token counted every block shown).
    relevant_ids: list[str] | None = None


class MemoryCurated(DomainEvent):
    """Curate ran: blocks archived, co-retrieval edges pruned, blocks reinforced, at this many active hours."""

    type_name: ClassVar[str] = "MemoryCurated"
    texts: ClassVar[Texts] = Texts(
        ledger=("trigger", "archived", "edges_pruned", "constitutional_reinforced", "reinforced"),
    )
    trigger: Literal["manual", "auto"]
    active_hours: float
    archived: list[str]
    edges_pruned: list[tuple[str, str]]
    constitutional_reinforced: list[str]
    reinforced: list[str]


class MemoryOutcomeRecorded(DomainEvent):
    """An outcome signal in [0, 1] was recorded for blocks: their confidence moves by a Beta update, and a
    signal below 0.20 doubles their decay rate (capped)."""

    type_name: ClassVar[str] = "MemoryOutcomeRecorded"
    texts: ClassVar[Texts] = Texts(free=("note",), ledger=("block_ids", "session_id"))
    block_ids: list[str]
    signal: float
    session_id: str | None = None
    note: str | None = None


class MemorySuperseded(DomainEvent):
    """A block was replaced by a newer one (``by_block_id``, remembered just before): it keeps its history but
    leaves search and recall, which find the new block instead."""

    type_name: ClassVar[str] = "MemorySuperseded"
    texts: ClassVar[Texts] = Texts(ledger=("block_id", "by_block_id", "session_id"))
    block_id: str
    by_block_id: str
    session_id: str | None = None


class MemoryForgotten(DomainEvent):
    """An administrator forgot a block: it leaves search, recall and the read models; this event stays in the
    log and says why."""

    type_name: ClassVar[str] = "MemoryForgotten"
    texts: ClassVar[Texts] = Texts(free=("reason",), ledger=("block_id",))
    block_id: str
    reason: str


class MemoryErased(DomainEvent):
    """An administrator erased a block (a person's right to erasure, a leaked credential): it leaves every read
    model as a forgotten block does, and the data keys its text was encrypted under (``key_ids``) were destroyed,
    so the text in the log can no longer be read. ``plaintext_in_log``: the block was written before encryption,
    so its text stays in the log's bytes (derived copies were purged). The event holds no erased text: its
    ``reason`` stays readable (a label, scanned for credentials) and must name no personal data."""

    type_name: ClassVar[str] = "MemoryErased"
    texts: ClassVar[Texts] = Texts(labels=("reason",), ledger=("block_id", "key_ids"))
    block_id: str
    reason: str
    key_ids: list[str] = Field(default_factory=list)
    plaintext_in_log: bool = False


class MemoryArchived(DomainEvent):
    """A person archived a block (an administrator, e.g. amending the constitution): it leaves search and recall,
    keeps its history, and can be restored; this event says why."""

    type_name: ClassVar[str] = "MemoryArchived"
    texts: ClassVar[Texts] = Texts(free=("reason",), ledger=("block_id",))
    block_id: str
    reason: str


class MemoryRestored(DomainEvent):
    """A person brought an archived or superseded block back (an administrator, e.g. ``init --force``
    regenerating the constitution): search and recall find it again, reinforced at this moment."""

    type_name: ClassVar[str] = "MemoryRestored"
    texts: ClassVar[Texts] = Texts(free=("reason",), ledger=("block_id",))
    block_id: str
    reason: str


class MemoryLinked(DomainEvent):
    """A contribution was a near-duplicate of an existing block (cosine at or above the consolidation threshold,
    or the lexical fallback's word overlap): it was linked to that block instead of stored twice."""

    type_name: ClassVar[str] = "MemoryLinked"
    texts: ClassVar[Texts] = Texts(ledger=("block_id", "candidate_id", "method", "session_id"))
    block_id: str  # the existing block the contribution was linked to
    candidate_id: str  # the id the contribution would have had (its content hash)
    similarity: float
    method: Literal["cosine", "words"]
    session_id: str | None = None


class ContradictionFlagged(DomainEvent):
    """A new block reads as the negation of an existing near-duplicate ("never X" against "X"): both are kept and
    a person resolves it (supersede or forget one)."""

    type_name: ClassVar[str] = "ContradictionFlagged"
    texts: ClassVar[Texts] = Texts(ledger=("block_id", "contradicts", "method", "session_id"))
    block_id: str  # the new block
    contradicts: str  # the existing block
    similarity: float
    method: Literal["cosine", "words"]
    session_id: str | None = None
