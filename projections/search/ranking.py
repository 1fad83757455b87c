"""Ranking a query against the memory search index: the words of the query that matter, then BM25 on SQLite
(FTS5) or ``ts_rank_cd`` on PostgreSQL, better matches first and ties by block id.

AND first, OR after: the blocks that match every word that matters (strong matches) rank first; when they are
fewer than the limit, the rest is filled from blocks matching any of the words (weak matches), ranked by the same
score among themselves and always after the strong ones (their scores are scaled below the weakest strong one).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from projections.provenance import Origin, from_json
from projections.query_analysis import STOP_WORDS

RANK_AT_MOST = 2000
"""A query word matching more blocks than this is *common*: when the query has rarer words, only those are
ranked (they are the words that matter); a query of common words only ranks its newest this-many matches. So
no search ranks every match of a common word, whatever the size of the memory."""

WEAK_SCALE = 0.5
"""The best weak (OR-only) match scores this fraction of the weakest strong (AND) match, so that callers turning
scores into similarities (recall) keep the weak matches below the strong ones."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked search result."""

    block_id: str
    content: str
    tags: list[str]
    score: float
    strong: bool = True
    """Matches every word that matters (the AND stage); False for a weak, OR-only match."""
    bm25: float | None = None
    """The full-text score (BM25; PostgreSQL ``ts_rank_cd``) when full text found it; set by fusion."""
    cosine: float | None = None
    """The embedding cosine with the query when hybrid search is on; set by fusion."""
    all_words: bool = False
    """A strong match of a query none of whose content words was left out (each is in the memory, none too
    common to rank): hybrid search keeps it whatever its cosine (:data:`projections.search.fusion.MIN_SIMILARITY`)."""
    origin: Origin | None = None
    """Where the block came from (kept in the index beside its text); ``None`` only for a block the embeddings
    found, until its text and provenance are read from the log."""


def ranked(
    cur: Any,
    sql: Callable[[str], str],
    dialect: str,
    terms: list[str],
    limit: int,
    tag_prefix: str | None,
    rank_at_most: int = RANK_AT_MOST,
    and_first: bool = True,
) -> list[Hit]:
    """The best ``limit`` blocks for ``terms`` (read with ``cur``; ``sql`` adapts a statement to the driver's
    paramstyle), as :meth:`~projections.search.index.SearchIndex.search` describes. Without ``and_first`` every
    match ranks together, by score alone (how search ranked before query analysis; the evaluation compares)."""
    # tags_json is a JSON list, so a tag starting with the prefix appears as '"<prefix>'.
    tag_like = None if tag_prefix is None else '%"' + _escape_like(tag_prefix) + "%"
    sqlite = dialect == "sqlite"
    if not sqlite and all(t in STOP_WORDS for t in terms):
        return _stop_words_pg(cur, terms, limit, tag_like, rank_at_most)
    kept, capped = _words_that_matter(cur, dialect, terms, rank_at_most)
    if not kept:
        return []
    any_word = " OR ".join(f'"{t}"' for t in kept) if sqlite else " | ".join(kept)
    every_word = " AND ".join(f'"{t}"' for t in kept) if sqlite else " & ".join(kept)
    filters: list[Any] = []
    tag_sql = ""
    if tag_like is not None:
        tag_sql = " AND tags_json LIKE ? ESCAPE '\\'"
        filters.append(tag_like)
    cap_sql = ""
    if capped:
        # The newest rank_at_most matches: find the oldest of them (an ordered scan of the matches that
        # stops there), then rank only from it on (a range both engines apply while matching). The AND stage
        # ranks inside the same range, so it never scans further back than the OR stage would.
        order, table = (
            ("rowid", "memory_fts WHERE memory_fts MATCH ?")
            if sqlite
            else (
                "seq",
                "memory_index WHERE tsv @@ to_tsquery('english', ?)",
            )
        )
        cur.execute(
            sql(f"SELECT {order} FROM {table} ORDER BY {order} DESC LIMIT 1 OFFSET ?"),
            (any_word, rank_at_most - 1),
        )
        row = cur.fetchone()
        if row is not None:
            cap_sql = f" AND {order} >= ?"
            filters.append(row[0])

    def rank(match: str, at_most: int) -> list[Hit]:
        if sqlite:
            return _rank_sqlite(cur, f"memory_fts MATCH ?{tag_sql}{cap_sql}", [match, *filters], at_most)
        text = (
            "SELECT block_id, content, tags_json, ts_rank_cd(tsv, q) AS score, provenance_json "
            f"FROM memory_index, to_tsquery('english', ?) AS q WHERE tsv @@ q{tag_sql}{cap_sql} "
            "ORDER BY score DESC, block_id LIMIT ?"
        )
        cur.execute(sql(text), (match, *filters, at_most))
        rows: Sequence[Any] = cur.fetchall()
        return [_hit(r[0], r[1], r[2], float(r[3]), r[4]) for r in rows]

    # Every content word kept (a query of stop words only has none): its strong matches hold the whole query.
    whole = kept == terms and any(t not in STOP_WORDS for t in terms)
    if len(kept) == 1 or not and_first:
        found = rank(any_word, limit)
        return [replace(h, all_words=True) for h in found] if whole and len(kept) == 1 else found
    strong = rank(every_word, limit)
    if whole:
        strong = [replace(h, all_words=True) for h in strong]
    if len(strong) == limit:
        return strong
    # Every strong match is also an OR match: the best limit + len(strong) OR matches hold the best weak ones.
    seen = {h.block_id for h in strong}
    weak = [h for h in rank(any_word, limit + len(strong)) if h.block_id not in seen][: limit - len(strong)]
    weak = [replace(h, strong=False) for h in weak]
    return strong + _below(weak, strong)


def _stop_words_pg(cur: Any, terms: list[str], limit: int, tag_like: str | None, rank_at_most: int) -> list[Hit]:
    """A query of stop words only on PostgreSQL: its ``english`` index holds no stop words, so the newest
    ``rank_at_most`` blocks are matched with the ``simple`` configuration (no stop list) and ranked, as a query of
    common words ranks its newest matches (FTS5 keeps stop words in its index and needs no such step)."""
    tag_sql, params = ("", []) if tag_like is None else (" AND tags_json LIKE %s ESCAPE '\\'", [tag_like])
    cur.execute(
        "SELECT block_id, content, tags_json, ts_rank_cd(v, q) AS score, provenance_json FROM (SELECT block_id,"
        " content, tags_json, provenance_json, to_tsvector('simple', content) AS v FROM memory_index"
        " ORDER BY seq DESC LIMIT %s) AS recent,"
        f" to_tsquery('simple', %s) AS q WHERE v @@ q{tag_sql} ORDER BY score DESC, block_id LIMIT %s",
        (rank_at_most, " | ".join(terms), *params, limit),
    )
    return [_hit(r[0], r[1], r[2], float(r[3]), r[4]) for r in cur.fetchall()]


def _below(weak: list[Hit], strong: list[Hit]) -> list[Hit]:
    """``weak`` with scores scaled so the best is :data:`WEAK_SCALE` of the weakest in ``strong`` (order kept)."""
    if not strong or not weak:
        return weak
    floor, top = min(h.score for h in strong), max(h.score for h in weak)
    if top <= 0 or floor <= 0:
        return weak
    factor = min(1.0, WEAK_SCALE * floor / top)
    return [replace(h, score=h.score * factor, strong=False) for h in weak]


def _words_that_matter(cur: Any, dialect: str, terms: list[str], rank_at_most: int) -> tuple[list[str], bool]:
    """The words to rank by and whether to rank only the newest matches: each word's block count is probed
    up to ``rank_at_most`` + 1 (so a probe costs at most that many postings, however common the word)."""
    cap = rank_at_most
    if dialect == "sqlite":
        probe = "SELECT count(*) FROM (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?) AS matches"
    else:
        probe = (
            "SELECT count(*) FROM (SELECT 1 FROM memory_index WHERE tsv @@ to_tsquery('english', %s) LIMIT %s)"
            " AS matches"
        )
    counts = {}
    for t in terms:
        cur.execute(probe, (f'"{t}"' if dialect == "sqlite" else t, cap + 1))
        counts[t] = int(cur.fetchone()[0])
    rare = [t for t in terms if 0 < counts[t] <= cap]
    if rare:
        return rare, False
    common = [t for t in terms if counts[t] > cap]
    return common, bool(common)


def _rank_sqlite(cur: Any, where: str, params: Sequence[Any], limit: int) -> list[Hit]:
    """The best ``limit`` matches by BM25 (ties by block id), as ``ORDER BY score DESC, block_id LIMIT limit``
    would give them, without reading the stored text of every match: the matches are scored and sorted from the
    index alone (FTS5 keeps ``block_id`` with the text), the block ids are read only for the matches tied at the
    cut, and the text only for the rows returned. At a few hundred matches that saves a third of a search."""
    cur.execute(f"SELECT rowid, -bm25(memory_fts) AS score FROM memory_fts WHERE {where} ORDER BY score DESC", params)
    chosen: list[tuple[int, float]] = cur.fetchmany(limit)
    if len(chosen) == limit:
        cut = chosen[-1][1]
        above = [r for r in chosen if r[1] > cut]
        tied = [r for r in chosen if r[1] == cut]
        while (row := cur.fetchone()) is not None and row[1] == cut:  # the rest of the tie at the cut
            tied.append(row)
        if len(above) + len(tied) > limit:
            block_ids = dict(_rows_by_rowid(cur, "block_id", [rowid for rowid, _ in tied]))
            tied.sort(key=lambda r: block_ids[r[0]])
        chosen = above + tied[: limit - len(above)]
    scores = dict(chosen)
    columns = "block_id, content, tags_json, provenance_json"
    hits = [
        _hit(block_id, content, tags_json, float(scores[rowid]), provenance_json)
        for rowid, block_id, content, tags_json, provenance_json in _rows_by_rowid(cur, columns, list(scores))
    ]
    hits.sort(key=lambda h: (-h.score, h.block_id))
    return hits


def _hit(block_id: str, content: str, tags_json: str, score: float, provenance_json: str) -> Hit:
    return Hit(block_id, content, json.loads(tags_json), score, origin=from_json(provenance_json))


def _rows_by_rowid(cur: Any, columns: str, rowids: list[int]) -> list[Any]:
    if not rowids:
        return []
    cur.execute(
        f"SELECT rowid, {columns} FROM memory_fts WHERE rowid IN (SELECT value FROM json_each(?))",
        (json.dumps(rowids),),
    )
    return list(cur.fetchall())


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
