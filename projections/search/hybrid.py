"""Hybrid search: the full-text hits of a query fused with the blocks nearest to it by embedding.

The query is embedded once; the embedding index gives the nearest live blocks (under the tag prefix, if any) and
the stored vectors of the full-text hits it did not return, so every candidate has its cosine; :func:`fusion.fuse`
ranks them. Texts of blocks found only by their embedding are read from the log (each block's
``MemoryRemembered``, by position) with their provenance, and only for the blocks returned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from ledger.core.events import MemoryRemembered
from ledger.core.mapper import decode
from projections.provenance import Origin, origin_of
from projections.search import fusion
from projections.search.ranking import Hit

if TYPE_CHECKING:  # numpy is only there with the [semantic] extra: imported where an embedding index is built
    from projections.embedding_index import EmbeddingIndex

Mode = Literal["hybrid", "bm25", "embeddings"]
"""How search ranks: fused (default when the ``[semantic]`` extra is installed), full text alone, or embeddings
alone (the evaluation compares the three)."""


def search(
    index: EmbeddingIndex,
    query: str,
    lexical: list[Hit],
    limit: int,
    tag_prefix: str | None,
    mode: Mode,
    cur: Any,
    floor: float = fusion.NO_FLOOR,
) -> list[Hit]:
    """The best ``limit`` blocks for ``query``: ``lexical`` (the full-text hits) fused with the nearest blocks
    (``mode`` ``embeddings``: the nearest blocks alone, by cosine), less those under the similarity ``floor`` that
    do not match every content word of the query (in ``embeddings`` mode, every hit under it)."""
    vector = index.embedder.embed_one(query)
    near = index.nearest(vector, max(limit, fusion.SEMANTIC_CANDIDATES), tag_prefix, cur)
    cosine = {block_id: cos for block_id, cos, _ in near}
    origins = {block_id: origin for block_id, _, origin in near}
    if mode == "embeddings":
        lexical = []
    missing = [h.block_id for h in lexical if h.block_id not in cosine]
    for block_id, v in index.vectors_of(missing, cur).items():
        cosine[block_id] = float(v @ vector)
    semantic = [Hit(block_id, "", [], cos, strong=False) for block_id, cos, _ in near]
    weight = 0.0 if mode == "embeddings" else fusion.LEXICAL_WEIGHT
    ranked = fusion.fuse(lexical, semantic, cosine, limit, weight=weight, floor=floor)
    return _with_texts(index, ranked, origins)


def _with_texts(index: EmbeddingIndex, hits: list[Hit], origins: dict[str, int]) -> list[Hit]:
    """Fill in the text, tags and provenance of the hits only the embeddings found (read from their
    ``MemoryRemembered`` and its metadata)."""
    wanted = [origins[h.block_id] for h in hits if h.bm25 is None]
    if not wanted:
        return hits
    records = index.store.records_at(wanted)
    texts: dict[str, tuple[str, list[str], Origin]] = {}
    for record in records.values():
        recorded = decode(record, index.store.cipher)
        event = recorded.event
        if isinstance(event, MemoryRemembered):
            texts[event.block_id] = (event.content, list(event.tags), origin_of(record.position, recorded.meta, event))
    out = []
    for h in hits:
        if h.bm25 is None and h.block_id not in texts:
            continue  # not in the log at its position: left out rather than shown without its text
        if h.bm25 is None:
            content, tags, origin = texts[h.block_id]
            h = Hit(h.block_id, content, tags, h.score, strong=False, bm25=None, cosine=h.cosine, origin=origin)
        out.append(h)
    return out
