"""What the memory commands return: blocks with their score breakdown, recall frames, curation, outcomes, history
and statistics."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Literal

from pydantic import BaseModel, Field

# The constants of the interface, which adapters publish (limits in schemas, texts in answers).
from ledger.memory.decisions import CATEGORY_PATTERN as CATEGORY_PATTERN
from ledger.memory.decisions import DEFAULT_CATEGORY as DEFAULT_CATEGORY
from ledger.memory.decisions import MAX_CATEGORY_CHARS as MAX_CATEGORY_CHARS
from ledger.memory.decisions import MAX_CONTENT_CHARS as MAX_CONTENT_CHARS
from ledger.memory.decisions import MAX_OUTCOME_BLOCKS as MAX_OUTCOME_BLOCKS
from ledger.memory.decisions import MAX_REASON_CHARS as MAX_REASON_CHARS
from ledger.memory.decisions import MAX_TAG_CHARS as MAX_TAG_CHARS
from ledger.memory.decisions import MAX_TAGS as MAX_TAGS
from ledger.memory.decisions import TAG_PATTERN as TAG_PATTERN
from ledger.memory.recall import FRAMES as FRAMES
from ledger.memory.recall import MAX_TOP_K as MAX_TOP_K
from ledger.memory.scoring import Scored
from ledger.sessions.report import Provenance, SearchHit
from projections.provenance import Origin


class RememberResult(BaseModel):
    """What remember did. ``linked``: the text repeats an existing block (near-duplicate), which ``block_id``
    names; nothing new was stored. ``contradicts``: the new block reads as the negation of that existing block;
    both are kept and a ``ContradictionFlagged`` event asks a person to resolve it."""

    block_id: str
    status: Literal["created", "duplicate_rejected", "linked"]
    similarity: float | None = Field(
        default=None, description="cosine (or word overlap without embeddings) with the linked or contradicted block"
    )
    contradicts: str | None = Field(default=None, description="the existing block this new one negates, if any")
    consolidation: str = Field(
        default="", description="how near-duplicates were looked for: 'cosine', 'words' (no [semantic] extra)"
    )


class MemorySetupResult(BaseModel):
    """What ``memory_setup`` / ``init`` seeding stored; blocks that already existed are left untouched."""

    created: list[str]
    already_present: list[str]
    constitutional_blocks: int


class ScoreParts(BaseModel):
    """A block's composite score and every component, with the weights that combined them."""

    total: float
    similarity: float
    confidence: float
    recency: float
    centrality: float
    reinforcement: float
    weights: dict[str, float]
    active_hours_since_reinforced: float
    weighted_degree: float
    bm25: float | None = Field(
        default=None, description="the query's full-text score for this block (null: no query, or not a full-text hit)"
    )
    cosine: float | None = Field(
        default=None, description="the embedding cosine with the query (null: no query, or search is BM25 alone)"
    )

    @classmethod
    def of(cls, s: Scored, bm25: float | None = None, cosine: float | None = None) -> ScoreParts:
        b = s.breakdown
        w = b.weights
        return cls(
            total=round(b.total, 6),
            similarity=round(b.similarity, 6),
            confidence=round(b.confidence, 6),
            recency=round(b.recency, 6),
            centrality=round(b.centrality, 6),
            reinforcement=round(b.reinforcement, 6),
            weights={
                "similarity": round(w.similarity, 6),
                "confidence": round(w.confidence, 6),
                "recency": round(w.recency, 6),
                "centrality": round(w.centrality, 6),
                "reinforcement": round(w.reinforcement, 6),
            },
            active_hours_since_reinforced=round(s.active_hours_since, 6),
            weighted_degree=round(s.degree, 6),
            bm25=None if bm25 is None else round(bm25, 6),
            cosine=None if cosine is None else round(cosine, 6),
        )


class BlockOut(BaseModel):
    """A memory block with its decay state and score breakdown."""

    block_id: str
    content: str
    tags: list[str]
    category: str
    tier: str
    decay_rate: float
    confidence: float
    outcomes: int
    reinforcements: int
    last_reinforced_at: _dt.datetime
    created_at: _dt.datetime
    archived_at: _dt.datetime | None
    superseded_by: str | None = None
    score: ScoreParts
    provenance: Provenance

    @classmethod
    def of(
        cls, s: Scored, content: str, origin: Origin, bm25: float | None = None, cosine: float | None = None
    ) -> BlockOut:
        b = s.block
        return cls(
            block_id=b.block_id,
            content=content,
            tags=list(b.tags),
            category=b.category,
            tier=b.tier.value,
            decay_rate=b.lam,
            confidence=round(b.confidence, 6),
            outcomes=b.outcomes,
            reinforcements=b.reinforcements,
            last_reinforced_at=b.last_reinforced_at,
            created_at=b.created_at,
            archived_at=b.archived_at,
            superseded_by=b.superseded_by,
            score=ScoreParts.of(s, bm25, cosine),
            provenance=Provenance.of(origin),
        )


class RecalledBlock(BlockOut):
    guaranteed: bool
    truncated: bool


class DroppedBlock(BaseModel):
    """A block of the recall's candidate pool left out: it lost its slot (``top_k``) or did not fit the frame's
    token budget (``token_budget``)."""

    block_id: str
    reason: Literal["top_k", "token_budget"]


class RecallResult(BaseModel):
    """What a recall brought to the agent: the rendered text and the blocks in it, best first."""

    frame: str
    query: str | None
    text: str
    tokens: int
    token_budget: int
    blocks: list[RecalledBlock]
    dropped: list[DroppedBlock] = Field(
        description="the blocks of the candidate pool (the top_k × 4 best-ranked candidates) that are not shown, "
        "with the reason; candidates ranked below the pool are only counted in dropped_beyond_pool"
    )
    dropped_beyond_pool: int = Field(
        description="how many more candidates ranked below the pool and never competed for a slot (without a "
        "query: every other live block of the frame); counted, not listed, so the answer does not grow with the "
        "ledger"
    )
    relevant: int | None = Field(
        None,
        description="with a query: how many blocks shown are relevant to it (a match of every content word, or "
        "close enough in meaning: the search's similarity floor); the compliance token counts only these",
    )
    active_hours: float
    session_id: str | None
    token_expires_at: _dt.datetime | None
    position: int


class CurateResult(BaseModel):
    """What curate did (the ids are in the ``MemoryCurated`` event at ``position``)."""

    trigger: Literal["manual", "auto"]
    archived: int
    edges_pruned: int
    constitutional_reinforced: int
    reinforced: int
    archived_ids: list[str]
    reinforced_ids: list[str]
    active_hours: float
    position: int


class SupersedeResult(BaseModel):
    """A block replaced by a new one: search and recall now find ``new_block_id``; the old block keeps its
    history (``MemorySuperseded`` at ``position``)."""

    block_id: str
    new_block_id: str
    tags: list[str]
    position: int


class ForgetResult(BaseModel):
    """A block forgotten: gone from search, recall and the read models; ``MemoryForgotten`` at ``position``
    records who forgot it and why."""

    block_id: str
    reason: str
    position: int


class ArchiveResult(BaseModel):
    """A block archived by a person: out of search and recall, restorable; ``MemoryArchived`` at ``position``."""

    block_id: str
    reason: str
    position: int


class RestoreResult(BaseModel):
    """A block brought back by a person: search and recall find it again; ``MemoryRestored`` at ``position``."""

    block_id: str
    reason: str
    position: int


class ConstitutionResult(BaseModel):
    """``init --force``: the live constitution made the shipped ten blocks again, every change an event."""

    created: list[str] = Field(description="shipped blocks that were never stored, now remembered")
    restored: list[str] = Field(description="shipped blocks that were superseded or archived, now live again")
    archived: list[str] = Field(description="live self/constitutional blocks that are not shipped (amendments)")
    unchanged: list[str] = Field(description="shipped blocks that were live already")
    forgotten: list[str] = Field(description="shipped blocks an administrator forgot (erased): not brought back")
    constitutional_blocks: int = Field(description="live self/constitutional blocks now")


class OutcomeChange(BaseModel):
    block_id: str
    confidence_before: float
    confidence_after: float
    decay_rate_before: float
    decay_rate_after: float


class OutcomeResult(BaseModel):
    signal: float
    blocks: list[OutcomeChange]
    position: int


class BlockList(BaseModel):
    """Blocks as of a moment, best score first; scores are normalised within the listed set."""

    as_of: _dt.datetime
    position: int = Field(description="the log position the list stands at: the head, or the position asked for")
    active_hours: float
    count: int
    blocks: list[BlockOut]


class BlockEvent(BaseModel):
    position: int
    recorded_at: _dt.datetime
    type: str
    agent: str | None
    detail: dict[str, Any]


class LookupResult(BaseModel):
    """What a search for ``query`` finds now, recorded nowhere (no event, no token)."""

    query: str
    results: list[SearchHit]
    count: int


class Neighbour(BaseModel):
    """A block recalled together with this one (a co-retrieval edge of the memory graph)."""

    block_id: str
    count: int = Field(description="how many recalls returned both blocks")
    last_co_retrieved_at: _dt.datetime


class BlockDetail(BaseModel):
    """One block as of a moment, scored against every live block, with every event that touched it and its
    co-retrieval neighbours (most often together first)."""

    block: BlockOut
    history: list[BlockEvent]
    neighbours: list[Neighbour] = Field(default_factory=list)
    as_of: _dt.datetime
    position: int = Field(description="the log position the block is read at: the head, or the position asked for")


class MemoryStats(BaseModel):
    blocks: int
    archived: int
    constitutional: int
    edges: int
    curates: int
    active_hours: float
    last_curate_active_hours: float | None
    next_auto_curate_at_active_hours: float
