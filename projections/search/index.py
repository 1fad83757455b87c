"""The memory search index: a derived, rebuildable projection of ``MemoryRemembered`` events, less the blocks
archived (``MemoryCurated``, ``MemoryArchived``), replaced (``MemorySuperseded``) or forgotten (``MemoryForgotten``),
plus those ``MemoryRestored`` brought back. Removed blocks leave search and recall; their events stay in the ledger.

SQLite ranks with FTS5's BM25; PostgreSQL with full-text search (``ts_rank_cd`` over a GIN-indexed
``tsvector``). The index keeps a checkpoint (the last position it has applied) and catches up from it in the
same transaction as its updates, so two processes never apply an event twice. Dropping the tables and
calling :meth:`SearchIndex.rebuild` restores it from the log. Ranking is in :mod:`projections.search.ranking`.

An event the index cannot hold (text PostgreSQL refuses, a payload that no longer decodes: only someone writing
to the database directly can put one there) must not stop search for every caller. Events are applied in
batches, each under a savepoint; a failing batch is rolled back and applied one event at a time, and each event
that still fails is skipped: logged, and recorded in ``projection_skips`` (position and reason), which
``doctor``, ``/health`` and ``replay`` report.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from ledger.core.chain import StoredRecord
from ledger.core.errors import InvalidInput
from ledger.core.events import (
    MemoryArchived,
    MemoryCurated,
    MemoryErased,
    MemoryForgotten,
    MemoryRemembered,
    MemoryRestored,
    MemorySuperseded,
)
from ledger.core.mapper import decode
from ledger.core.storage import INDEX_LOCK, LedgerStore, translate_errors
from ledger.core.text import printable
from projections import provenance
from projections.embedder import SemanticUnavailable
from projections.provenance import Origin, origin_of
from projections.query_analysis import query_terms, words
from projections.search import fusion, hybrid
from projections.search.fusion import MIN_SIMILARITY, NO_FLOOR
from projections.search.ranking import RANK_AT_MOST, Hit, ranked
from projections.search.schema import CHECKPOINT, TS_CONFIG, Skip
from projections.search.schema import COMMON_DDL as _COMMON_DDL
from projections.search.schema import DDL as _DDL
from projections.search.schema import DROP as _DROP
from projections.search.schema import VERSION as _VERSION
from projections.search.schema import fatal as _fatal

if TYPE_CHECKING:  # numpy is only there with the [semantic] extra
    from projections.embedding_index import EmbeddingIndex

log = logging.getLogger(__name__)

OPTIMIZE_AFTER_REMOVALS = 1000
BY_ROWID_AT_MOST = 50  # removals of at most this many blocks delete FTS5 rows by rowid; more, by a scan
_INDEXED = [t.type_name for t in (MemoryRemembered, MemoryCurated, MemorySuperseded, MemoryForgotten, MemoryArchived)]
_INDEXED += [MemoryErased.type_name, MemoryRestored.type_name]
_PENDING = (
    "SELECT h.head, EXISTS (SELECT 1 FROM events WHERE position > COALESCE(c.position, 0) AND position <= h.head"
    f" AND type IN ({', '.join('?' for _ in _INDEXED)})) FROM (SELECT MAX(position) AS head FROM events"
    " WHERE position >= 1) AS h LEFT JOIN projection_checkpoints AS c ON c.name = ?"
)
BATCH_SIZE = 500
MAX_REASON_CHARS = 500


class SearchIndex:
    """Full-text index over memory blocks, maintained by catching up on the event log."""

    def __init__(
        self,
        store: LedgerStore,
        rank_at_most: int = RANK_AT_MOST,
        semantic: EmbeddingIndex | Callable[[], EmbeddingIndex] | None = None,
        min_similarity: float = MIN_SIMILARITY,
    ) -> None:
        self.store = store
        self._semantic = semantic
        self.mode: hybrid.Mode = "hybrid"
        self.min_similarity = min_similarity
        """Hybrid search's similarity floor (:mod:`projections.search.fusion`, ``LEDGER_SEARCH_MIN_SIMILARITY``)."""
        self.retrieval = "hybrid: BM25 + embeddings" if semantic is not None else "BM25 alone"  # doctor, /health
        self.dialect = store.dialect
        self.rank_at_most = rank_at_most
        self.analyse = True
        """Query analysis on (stop words dropped, AND first): off, every word is OR-ed, as before it existed."""
        self._catching_up = threading.Lock()

    def create_schema(self) -> None:
        """Create the index; an index built another way (another tokenizer, or before versions were recorded)
        is dropped and rebuilt from the log here, in the open, not by the first search. A new index is left
        empty: the first search (or :meth:`catch_up`) fills it."""
        with translate_errors(self.dialect), self.store.engine.begin() as conn:
            for ddl in (*_COMMON_DDL[self.dialect], *_DDL[self.dialect]):
                conn.exec_driver_sql(ddl)
            row = conn.exec_driver_sql(
                self.store.sql("SELECT version FROM projection_versions WHERE name = ?"), (CHECKPOINT,)
            ).fetchone()
        if row is not None and row[0] == _VERSION[self.dialect]:
            return
        with self.store.write_transaction(INDEX_LOCK) as cur:
            cur.execute(self.store.sql("SELECT version FROM projection_versions WHERE name = ?"), (CHECKPOINT,))
            found = cur.fetchone()
            if found is not None and found[0] == _VERSION[self.dialect]:
                return  # another process rebuilt it meanwhile
            cur.execute(self.store.sql("SELECT position FROM projection_checkpoints WHERE name = ?"), (CHECKPOINT,))
            built = cur.fetchone() is not None  # else a new index: recording its version is all there is to do
            if built:
                log.info("search index: built with %s, now %s: rebuilding", found and found[0], _VERSION[self.dialect])
            self._drop(cur)
            for ddl in _DDL[self.dialect]:
                cur.execute(ddl)
            cur.execute(self.store.sql("DELETE FROM projection_versions WHERE name = ?"), (CHECKPOINT,))
            cur.execute(
                self.store.sql("INSERT INTO projection_versions (name, version) VALUES (?, ?)"),
                (CHECKPOINT, _VERSION[self.dialect]),
            )
        if built:
            self.catch_up()

    def drop(self) -> None:
        """Drop the index (and the embedding index) and forget its checkpoint (the log is untouched)."""
        with self.store.write_transaction(INDEX_LOCK) as cur:
            self._drop(cur)
        if self.semantic is not None:
            self.semantic.drop()

    def _drop(self, cur: Any) -> None:
        for ddl in _DROP[self.dialect]:
            cur.execute(ddl)
        cur.execute(self.store.sql("DELETE FROM projection_checkpoints WHERE name = ?"), (CHECKPOINT,))
        cur.execute(self.store.sql("DELETE FROM projection_skips WHERE name = ?"), (CHECKPOINT,))

    def checkpoint(self) -> int:
        with translate_errors(self.dialect), self.store.engine.connect() as conn:
            row = conn.exec_driver_sql(
                self.store.sql("SELECT position FROM projection_checkpoints WHERE name = ?"), (CHECKPOINT,)
            ).fetchone()
        return int(row[0]) if row else 0

    def skips(self, engine: Engine | None = None) -> list[Skip]:
        """The events the index skipped, in position order (read through ``engine``, default the store's)."""
        with translate_errors(self.dialect), (engine or self.store.engine).connect() as conn:
            rows = conn.exec_driver_sql(
                self.store.sql("SELECT position, reason FROM projection_skips WHERE name = ? ORDER BY position"),
                (CHECKPOINT,),
            ).fetchall()
        return [Skip(int(r[0]), str(r[1])) for r in rows]

    def _pending(self, cur: Any | None = None) -> tuple[int, bool]:
        """The head of the log and whether an event for the index lies between the checkpoint and it (read with
        ``cur``, else on a pooled connection of its own)."""
        if cur is None:
            with self.store.read_cursor() as own:
                return self._read_pending(own)
        return self._read_pending(cur)

    def _read_pending(self, cur: Any) -> tuple[int, bool]:
        cur.execute(self.store.sql(_PENDING), (*_INDEXED, CHECKPOINT))
        head, pending = cur.fetchone()
        return int(head or 0), bool(pending)

    def catch_up(self, progress: Callable[[int], None] | None = None) -> int:
        """Apply every event after the checkpoint; return how many blocks were indexed."""
        # One round trip for the head, the checkpoint and whether anything between them is for the index (an
        # index range scan on (type, position)): searches and recalls append events the index ignores, and then
        # the checkpoint is left behind rather than the write lock taken and an fsync paid on a read path.
        head, pending = self._pending()
        if not pending:
            return 0
        return self._apply_up_to(head, progress)

    def _apply_up_to(self, head: int, progress: Callable[[int], None] | None = None) -> int:
        """Apply the events after the checkpoint up to ``head`` under the index's write lock.

        One thread of a process at a time: when many requests find the index behind at once (the first searches
        after a start, say) one catches up while the others wait here, not in a crowd at the database's write lock
        that the appends need too, and then find the work done."""
        if not self._catching_up.acquire(blocking=False):
            with self._catching_up:
                head, pending = self._pending()
                return self._apply_locked(head, progress) if pending else 0
        try:
            return self._apply_locked(head, progress)
        finally:
            self._catching_up.release()

    def _apply_locked(self, head: int, progress: Callable[[int], None] | None) -> int:
        applied = 0
        with self.store.write_transaction(INDEX_LOCK) as cur:
            cur.execute(self.store.sql("SELECT position FROM projection_checkpoints WHERE name = ?"), (CHECKPOINT,))
            row = cur.fetchone()
            start = int(row[0]) if row else 0
            if start >= head:
                # Another process caught up past the head read above while this one waited for the lock;
                # writing ``head`` now would move the checkpoint backwards and re-apply events later.
                return 0
            for batch in _batches(self.store.iter_records(start, head, types=_INDEXED), BATCH_SIZE):
                before = applied
                try:
                    with self._savepoint(cur):
                        applied += sum(self._apply(cur, rec) for rec in batch)
                except Exception as exc:
                    if _fatal(exc):
                        raise
                    # Some event of the batch cannot be indexed: apply them one by one and skip the failing ones.
                    applied = before + sum(self._apply_or_skip(cur, rec) for rec in batch)
                if progress and applied // 1000 > before // 1000:
                    progress(applied)
            self._set_checkpoint(cur, head)
        return applied

    def _apply(self, cur: Any, rec: StoredRecord) -> int:
        """Apply one stored event to the index; 1 when it indexed a block."""
        recorded = decode(rec, self.store.cipher)
        event = recorded.event
        if isinstance(event, MemoryRemembered):
            if recorded.meta.get("erased"):
                return 0  # its text can no longer be read (erased): nothing to index
            self._insert(cur, event, origin_of(rec.position, recorded.meta, event), rec.position)
            return 1
        if isinstance(event, MemoryCurated) and event.archived:
            self._remove(cur, event.archived)
        elif isinstance(event, MemorySuperseded | MemoryForgotten | MemoryErased | MemoryArchived):
            self._remove(cur, [event.block_id], erased=isinstance(event, MemoryErased))
        elif isinstance(event, MemoryRestored):
            self._remove(cur, [event.block_id])  # never twice in the index, whatever came before
            self._insert(cur, *self._remembered(event.block_id))
            return 1
        return 0

    def _remembered(self, block_id: str) -> tuple[MemoryRemembered, Origin, int]:
        """The ``MemoryRemembered`` of ``block_id`` (the first event of its stream), its authenticator checked, the
        block's provenance and that event's position."""
        record = self.store.record_of(f"block:{block_id}", 1)
        event = decode(record, self.store.cipher).event if record is not None else None
        if not isinstance(event, MemoryRemembered):
            raise ValueError(f"block {block_id} has no MemoryRemembered to restore its text from")
        assert record is not None
        return event, origin_of(record.position, json.loads(record.meta_json), event), record.position

    def _apply_or_skip(self, cur: Any, rec: StoredRecord) -> int:
        try:
            with self._savepoint(cur):
                return self._apply(cur, rec)
        except Exception as exc:
            if _fatal(exc):
                raise
            reason = printable(f"{type(exc).__name__}: {exc}".strip())[:MAX_REASON_CHARS]
            log.warning("search index: skipped event at position %d (%s): %s", rec.position, rec.type, reason)
            cur.execute(
                self.store.sql(
                    "INSERT INTO projection_skips (name, position, reason) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
                ),
                (CHECKPOINT, rec.position, reason),
            )
            return 0

    @staticmethod
    @contextlib.contextmanager
    def _savepoint(cur: Any) -> Iterator[None]:
        cur.execute("SAVEPOINT index_apply")
        try:
            yield
        except BaseException:
            cur.execute("ROLLBACK TO SAVEPOINT index_apply")
            cur.execute("RELEASE SAVEPOINT index_apply")
            raise
        cur.execute("RELEASE SAVEPOINT index_apply")

    def rebuild(self, progress: Callable[[int], None] | None = None, embeddings: bool = True) -> int:
        """Drop the index and rebuild it from the whole log; with ``embeddings`` the embedding index too (every
        block embedded again: minutes on a large ledger)."""
        with self.store.write_transaction(INDEX_LOCK) as cur:
            self._drop(cur)
        self.create_schema()
        indexed = self.catch_up(progress)
        if embeddings and self.semantic is not None:
            self.semantic.rebuild()
        return indexed

    def _set_checkpoint(self, cur: Any, position: int) -> None:
        if self.dialect == "sqlite":
            cur.execute(
                "INSERT INTO projection_checkpoints (name, position) VALUES (?, ?) "
                "ON CONFLICT(name) DO UPDATE SET position = excluded.position",
                (CHECKPOINT, position),
            )
        else:
            cur.execute(
                "INSERT INTO projection_checkpoints (name, position) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET position = excluded.position",
                (CHECKPOINT, position),
            )

    def _insert(self, cur: Any, event: MemoryRemembered, origin: Origin, position: int) -> None:
        """Index a block's text and tags, and keep its provenance beside them (not searchable: a context never
        changes what a query finds). On SQLite the row's rowid is ``position``, that of the block's
        ``MemoryRemembered``: FTS5 cannot index ``block_id``, and the rowid finds one block's row by key."""
        tags_text = " ".join(t.replace("/", " ") for t in event.tags)
        tags_json = json.dumps(event.tags)
        if self.dialect == "sqlite":
            cur.execute(
                "INSERT INTO memory_fts (rowid, block_id, content, tags, tags_json, provenance_json) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (position, event.block_id, event.content, tags_text, tags_json, provenance.to_json(origin)),
            )
        else:
            cur.execute(
                "INSERT INTO memory_index (block_id, content, tags_json, tsv, provenance_json) "
                f"VALUES (%s, %s, %s, to_tsvector('{TS_CONFIG}', %s), %s) ON CONFLICT (block_id) DO NOTHING",
                (event.block_id, event.content, tags_json, f"{event.content} {tags_text}", provenance.to_json(origin)),
            )

    def _remove(self, cur: Any, block_ids: Sequence[str], erased: bool = False) -> None:
        """Delete blocks from the index. On SQLite a few are deleted by rowid (the position of each block's
        ``MemoryRemembered``, one key lookup each), many in one statement (FTS5 cannot index ``block_id``: one scan,
        not one per id); an erased block's words must leave FTS5's segments too, so they are merged at once (with
        ``secure_delete`` on, the pages the merge frees are zeroed)."""
        if self.dialect == "sqlite":
            if len(block_ids) <= BY_ROWID_AT_MOST:
                rowids = [r.position for b in block_ids if (r := self.store.record_of(f"block:{b}", 1)) is not None]
                column, keys = "rowid", json.dumps(rowids)
            else:
                column, keys = "block_id", json.dumps(list(block_ids))
            cur.execute(f"DELETE FROM memory_fts WHERE {column} IN (SELECT value FROM json_each(?))", (keys,))
            if erased or len(block_ids) >= OPTIMIZE_AFTER_REMOVALS:
                # FTS5 keeps deleted rows' postings until segments merge; after a large archive, queries would
                # keep paying for them (p99 12 ms on 546 live rows at 100k before, 0.4 ms after).
                cur.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
        else:
            cur.execute("DELETE FROM memory_index WHERE block_id = ANY(%s)", (list(block_ids),))

    def relevant(self, hits: Sequence[Hit]) -> set[str]:
        """The hits that count as relevant to their query: with hybrid search, those the similarity floor keeps;
        with full text alone, all of them (each matched a word of the query)."""
        if self._semantic is None or self.mode == "bm25":
            return {h.block_id for h in hits}
        return {h.block_id for h in hits if fusion.relevant(h, self.min_similarity)}

    def search(self, query: str, limit: int, tag_prefix: str | None = None, floor: bool = True) -> list[Hit]:
        """Rank blocks against ``query`` by BM25 (PostgreSQL: ``ts_rank_cd``), better matches first.

        Stop words are dropped unless the query has nothing else (:mod:`projections.query_analysis`); blocks
        matching every remaining word rank first, then blocks matching any (:mod:`projections.search.ranking`).
        A word matching nothing is left out, and so is a word matching more than :attr:`rank_at_most` blocks
        while the query has rarer words that match; a query of common words only ranks the newest
        :attr:`rank_at_most` blocks that match. ``tag_prefix`` (e.g. ``self/``) keeps only blocks with a tag under it.
        Hybrid search drops the hits under :attr:`min_similarity` unless ``floor`` is false (recall ranks its
        frame's candidates itself).
        """
        terms = query_terms(query) if self.analyse else words(query)
        if not terms:
            raise InvalidInput("the query has no searchable words", "send at least one word, e.g. 'database schema'")
        # One pooled connection for the catch-up probe, the word probes and the ranking; a catch-up in between (a
        # block was remembered or archived since the index last looked) writes on a connection of its own.
        with self.store.read_cursor() as cur:
            head, pending = self._pending(cur)
            if not pending:
                return self._ranked(cur, query, terms, limit, tag_prefix, floor)
        self._apply_up_to(head)
        with self.store.read_cursor() as cur:
            return self._ranked(cur, query, terms, limit, tag_prefix, floor)

    @property
    def semantic(self) -> EmbeddingIndex | None:
        """The embedding index (the ``[semantic]`` extra; a factory is built on first use, numpy imported then)."""
        if callable(self._semantic):
            self._semantic = self._semantic()
        return self._semantic

    def _ranked(
        self, cur: Any, query: str, terms: list[str], limit: int, tag_prefix: str | None, floor: bool
    ) -> list[Hit]:
        """Full-text ranking, fused with the embeddings (:mod:`projections.search.hybrid`) unless :attr:`mode` is
        ``bm25`` or there are none; every hit carries its ``bm25`` and ``cosine``."""
        lexical = ranked(cur, self.store.sql, self.dialect, terms, limit, tag_prefix, self.rank_at_most, self.analyse)
        if self.semantic is not None and self.mode != "bm25":
            try:
                least = self.min_similarity if floor else NO_FLOOR
                return hybrid.search(self.semantic, query, lexical, limit, tag_prefix, self.mode, cur, least)
            except SemanticUnavailable as exc:  # the extra is there but its model will not load: say so, go on
                log.warning("hybrid search off: %s", exc)
                self._semantic, self.retrieval = None, f"BM25 alone: {exc}"
        return [replace(h, bm25=h.score) for h in lexical]


def _batches(records: Iterator[StoredRecord], size: int) -> Iterator[list[StoredRecord]]:
    while batch := list(itertools.islice(records, size)):
        yield batch
