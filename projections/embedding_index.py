"""The memory embedding index: a derived, rebuildable projection of one vector per live memory block.

Its table (``memory_vectors``) holds each block's vector int8-quantised (384 bytes and a float scale), its tags,
whether it is live, and the position of the last event that changed the row; a checkpoint (``memory_embeddings``)
says how far in the log it is, and ``projection_versions`` the model and encoding it was built with (another:
dropped and rebuilt, as ``replay --rebuild`` does). Vectors are computed outside the write lock (events are
immutable); a block just remembered hands its vector over (:meth:`EmbeddingIndex.offer`), embedded once.

Each process keeps the live vectors in one int8 matrix (:mod:`projections.embedding_matrix`), loaded on the first
search and kept current by reading only the rows changed since. A search asks the database one question (a memory
event after the position the matrix reflects?), then cosine is a chunked matrix-vector product: no per-search scan.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ledger.core.events import (
    MemoryArchived,
    MemoryCurated,
    MemoryForgotten,
    MemoryRemembered,
    MemoryRestored,
    MemorySuperseded,
)
from ledger.core.mapper import decode
from ledger.core.storage import INDEX_LOCK, LedgerStore, translate_errors
from projections import embedder as _embedder
from projections.embedder import DIMENSIONS, MODEL_ID, Embedder, SemanticUnavailable
from projections.embedding_matrix import Matrix, has_prefix, quantise

log = logging.getLogger(__name__)

CHECKPOINT = "memory_embeddings"
ENCODING = "int8 per-row scale; archive and restore"
BATCH_EVENTS = 1000
"""Events applied per catch-up transaction (a rebuild of 100k blocks is a hundred of them)."""
INLINE_BLOCKS = 64
"""At most this many blocks to embed and a search embeds them itself before it answers (a block remembered by
another process since, say: tens of milliseconds each). More — a ledger whose memory predates the ``[semantic]``
extra, or a rebuild — and a background thread embeds them, batch by batch, while searches go on with the vectors
already there (blocks not embedded yet are still found by their words); ``replay --rebuild`` embeds them ahead."""
CHUNK_ROWS = 512
"""Rows converted to float32 at a time for the product: a 768 kB buffer, reused."""
_TYPES = [
    t.type_name
    for t in (MemoryRemembered, MemoryCurated, MemorySuperseded, MemoryForgotten, MemoryArchived, MemoryRestored)
]
_IN_TYPES = ", ".join("?" for _ in _TYPES)
_DDL = {
    "sqlite": [
        """CREATE TABLE IF NOT EXISTS memory_vectors (block_id TEXT PRIMARY KEY, origin INTEGER NOT NULL,
               tags_json TEXT NOT NULL, live INTEGER NOT NULL, changed INTEGER NOT NULL, scale REAL NOT NULL,
               vec BLOB NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS memory_vectors_changed ON memory_vectors (changed)",
    ],
    "postgresql": [
        """CREATE TABLE IF NOT EXISTS memory_vectors (block_id TEXT PRIMARY KEY, origin BIGINT NOT NULL,
               tags_json TEXT NOT NULL, live SMALLINT NOT NULL, changed BIGINT NOT NULL, scale REAL NOT NULL,
               vec BYTEA NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS memory_vectors_changed ON memory_vectors (changed)",
    ],
}


class EmbeddingIndex:
    """Vectors of the live memory blocks, caught up from the log, searched by cosine."""

    def __init__(
        self, store: LedgerStore, embedder: Embedder | None = None, *, inline_blocks: int = INLINE_BLOCKS
    ) -> None:
        self.store = store
        self.inline_blocks = inline_blocks
        self._background: threading.Thread | None = None
        self.dialect = store.dialect
        self._embedder = embedder
        self.version = f"{MODEL_ID} {ENCODING}"
        self._schema_checked = False
        self._matrix: Matrix | None = None
        self._lock = threading.Lock()
        self._offered: dict[str, Any] = {}
        self._buffer = np.empty((CHUNK_ROWS, DIMENSIONS), dtype=np.float32)

    @property
    def embedder(self) -> Embedder:
        """The model, loaded on first use (:class:`SemanticUnavailable` if it cannot be)."""
        if self._embedder is None:
            loaded, why = _embedder.load()
            if loaded is None:
                raise SemanticUnavailable(why)
            self._embedder = loaded
        return self._embedder

    # --- schema ----------------------------------------------------------------------------------------------

    def ensure_schema(self) -> None:
        """Create the table on first use in this process if it is missing or was built another way (a ledger
        initialised before the extra was installed gets it here); a read when all is in place."""
        if self._schema_checked:
            return
        try:
            with self.store.read_cursor() as cur:
                cur.execute(self.store.sql("SELECT version FROM projection_versions WHERE name = ?"), (CHECKPOINT,))
                row = cur.fetchone()
        except Exception:  # no projection_versions table yet: create_schema makes it
            row = None
        if row is None or row[0] != self.version:
            self.create_schema()
        self._schema_checked = True

    def create_schema(self) -> None:
        """Create the table; one built with another model or encoding is dropped (rebuilt by the catch-up)."""
        with self.store.write_transaction(INDEX_LOCK) as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS projection_versions (name TEXT PRIMARY KEY, version TEXT NOT NULL)")
            for ddl in _DDL[self.dialect]:
                cur.execute(ddl)
            cur.execute(self.store.sql("SELECT version FROM projection_versions WHERE name = ?"), (CHECKPOINT,))
            row = cur.fetchone()
            if row is not None and row[0] == self.version:
                return
            if row is not None:
                log.info("embedding index: built with %s, now %s: rebuilding", row[0], self.version)
            self._drop(cur)
            for ddl in _DDL[self.dialect]:
                cur.execute(ddl)
            cur.execute(
                self.store.sql("INSERT INTO projection_versions (name, version) VALUES (?, ?)"),
                (CHECKPOINT, self.version),
            )
        self._matrix = None

    def drop(self) -> None:
        """Drop the table and forget its checkpoint and version (the log is untouched)."""
        with self.store.write_transaction(INDEX_LOCK) as cur:
            self._drop(cur)
        self._matrix = None
        self._schema_checked = False

    def _drop(self, cur: Any) -> None:
        cur.execute("DROP TABLE IF EXISTS memory_vectors")
        for table in ("projection_checkpoints", "projection_versions"):
            cur.execute(self.store.sql(f"DELETE FROM {table} WHERE name = ?"), (CHECKPOINT,))

    def rebuild(self) -> int:
        """Drop the index and rebuild it from the whole log; how many blocks were embedded."""
        self.drop()
        self.create_schema()
        return self.catch_up()

    def checkpoint(self) -> int:
        with translate_errors(self.dialect), self.store.read_cursor() as cur:
            return self._checkpoint(cur)

    def _checkpoint(self, cur: Any) -> int:
        cur.execute(self.store.sql("SELECT position FROM projection_checkpoints WHERE name = ?"), (CHECKPOINT,))
        row = cur.fetchone()
        return int(row[0]) if row else 0

    # --- catching up -----------------------------------------------------------------------------------------

    def offer(self, block_id: str, vector: Any) -> None:
        """A vector already computed for a block about to be remembered (used once by the catch-up)."""
        if len(self._offered) < 1000:
            self._offered[block_id] = vector

    def catch_up(self) -> int:
        """Embed the blocks remembered after the checkpoint and apply removals, in batches of
        :data:`BATCH_EVENTS` events (each its own transaction); how many blocks were embedded."""
        with self.store.read_cursor() as cur:
            start = self._checkpoint(cur)
            cur.execute("SELECT MAX(position) FROM events WHERE position >= 1")
            head = int(cur.fetchone()[0] or 0)
        embedded = 0
        while start < head:
            batch = [
                decode(r) for r in itertools.islice(self.store.iter_records(start, head, types=_TYPES), BATCH_EVENTS)
            ]
            if not batch:
                break  # nothing for the index: the checkpoint is left behind rather than a write paid for it
            until = batch[-1].position if len(batch) == BATCH_EVENTS else head
            done, count = self._apply_batch(batch, until)
            embedded += count
            start = max(until, done)
        return embedded

    def _apply_batch(self, records: list[Any], until: int) -> tuple[int, int]:
        """Embed (outside the lock) and apply ``records``, then move the checkpoint to ``until``; returns the
        checkpoint found under the lock (another process may be further) and how many blocks were embedded."""
        fresh = [r.event for r in records if isinstance(r.event, MemoryRemembered)]
        todo = [e for e in fresh if e.block_id not in self._offered]
        vectors = dict(zip([e.block_id for e in todo], self.embedder.embed([e.content for e in todo]), strict=True))
        vectors.update({e.block_id: self._offered.pop(e.block_id) for e in fresh if e.block_id in self._offered})
        embedded = 0
        with self.store.write_transaction(INDEX_LOCK) as cur:
            done = self._checkpoint(cur)
            if done >= until:
                return done, 0  # another process applied them meanwhile
            for rec in records:
                if rec.position <= done:
                    continue
                event = rec.event
                if isinstance(event, MemoryRemembered):
                    embedded += self._insert(cur, rec.position, event, vectors[event.block_id])
                elif isinstance(event, MemoryCurated) and event.archived:
                    self._remove(cur, rec.position, event.archived)
                elif isinstance(event, MemorySuperseded | MemoryForgotten | MemoryArchived):
                    self._remove(cur, rec.position, [event.block_id])
                elif isinstance(event, MemoryRestored):
                    self._restore(cur, rec.position, event.block_id)
            upsert = "ON CONFLICT(name) DO UPDATE SET position = excluded.position"
            cur.execute(
                self.store.sql(f"INSERT INTO projection_checkpoints (name, position) VALUES (?, ?) {upsert}"),
                (CHECKPOINT, until),
            )
        return until, embedded

    def _insert(self, cur: Any, position: int, event: MemoryRemembered, vector: Any) -> int:
        rows, scales = quantise(np.asarray(vector)[None, :])
        cur.execute(
            self.store.sql(
                "INSERT INTO memory_vectors (block_id, origin, tags_json, live, changed, scale, vec)"
                " VALUES (?, ?, ?, 1, ?, ?, ?) ON CONFLICT (block_id) DO NOTHING"
            ),
            (event.block_id, position, json.dumps(event.tags), position, float(scales[0]), rows[0].tobytes()),
        )
        return 1

    def _remove(self, cur: Any, position: int, block_ids: Sequence[str]) -> None:
        for block_id in block_ids:
            cur.execute(
                self.store.sql("UPDATE memory_vectors SET live = 0, changed = ? WHERE block_id = ? AND live = 1"),
                (position, block_id),
            )

    def _restore(self, cur: Any, position: int, block_id: str) -> None:
        """A block brought back (``MemoryRestored``): its row, kept when it was removed, is live again."""
        cur.execute(
            self.store.sql("UPDATE memory_vectors SET live = 1, changed = ? WHERE block_id = ? AND live = 0"),
            (position, block_id),
        )

    def backlog(self, at_most: int) -> int:
        """How many blocks remembered after the checkpoint wait to be embedded (counted up to ``at_most`` + 1)."""
        with self.store.read_cursor() as cur:
            start = self._checkpoint(cur)
            cur.execute(
                self.store.sql(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE type = ? AND position > ? LIMIT ?) AS waiting"
                ),
                (MemoryRemembered.type_name, start, at_most + 1),
            )
            return int(cur.fetchone()[0])

    @property
    def catching_up(self) -> bool:
        """Whether a background catch-up of this process is embedding a backlog now."""
        return self._background is not None and self._background.is_alive()

    def wait_for_catch_up(self, timeout: float | None = None) -> bool:
        """Wait for the background catch-up, if one runs; whether it has ended."""
        thread = self._background
        if thread is not None:
            thread.join(timeout)
        return not self.catching_up

    def _catch_up_bounded(self) -> None:
        """Catch up now when little waits; else (once per process at a time) in a background thread."""
        if self.catching_up:
            return  # searches use the rows embedded so far; the thread moves the checkpoint batch by batch
        waiting = self.backlog(self.inline_blocks)
        if waiting <= self.inline_blocks:
            self.catch_up()
            return
        log.info(
            "embedding index: more than %d blocks to embed; embedding them in the background, searching the"
            " vectors already there meanwhile (replay --rebuild embeds them ahead of time)",
            self.inline_blocks,
        )
        self._background = threading.Thread(target=self._catch_up_logged, name="embedding-catch-up", daemon=True)
        self._background.start()

    def _catch_up_logged(self) -> None:
        try:
            embedded = self.catch_up()
            log.info("embedding index: background catch-up embedded %d blocks", embedded)
        except Exception:  # a thread has no caller to tell: log it; the next search starts another catch-up
            log.exception("embedding index: background catch-up failed")

    # --- the in-memory matrix ---------------------------------------------------------------------------------

    def sync(self, cur: Any | None = None) -> Matrix:
        """The matrix, current with the log: one probe for a memory event after the position it reflects; only
        when there is one, the table catches up and the rows changed since are read."""
        with self._lock:
            matrix = self._matrix
            if matrix is not None and not self._changed_since(matrix.position, cur):
                return matrix
            self.ensure_schema()
            self._catch_up_bounded()
            if matrix is None:
                matrix = Matrix()
            self._read_changes(matrix)
            self._matrix = matrix
            return matrix

    def _changed_since(self, position: int, cur: Any | None) -> bool:
        probe = self.store.sql(f"SELECT EXISTS (SELECT 1 FROM events WHERE type IN ({_IN_TYPES}) AND position > ?)")
        if cur is None:
            with self.store.read_cursor() as own:
                own.execute(probe, (*_TYPES, position))
                return bool(own.fetchone()[0])
        cur.execute(probe, (*_TYPES, position))
        return bool(cur.fetchone()[0])

    def _read_changes(self, matrix: Matrix) -> None:
        with self.store.read_cursor() as cur:
            reflected = self._checkpoint(cur)  # before the rows: a catch-up committed after it is read next time
            cur.execute(
                self.store.sql(
                    "SELECT block_id, origin, tags_json, live, changed, scale, vec FROM memory_vectors"
                    " WHERE changed > ? ORDER BY changed"
                ),
                (matrix.position,),
            )
            newest = matrix.position
            gone: list[bytes] = []
            for block_id, origin, tags_json, live, changed, scale, vec in cur:
                if live:
                    matrix.add(block_id, int(origin), tags_json, float(scale), bytes(vec))
                else:
                    gone.append(block_id.encode())
                newest = max(newest, int(changed))
            if gone:
                matrix.remove(gone)
            matrix.position = max(newest, reflected)

    def _mask(self, matrix: Matrix, prefix: str) -> Any:
        mask = matrix.masks.get(prefix)
        if mask is None:
            with self.store.read_cursor() as cur:
                cur.execute("SELECT block_id, tags_json FROM memory_vectors")
                having = {str(b) for b, tags in cur if has_prefix(tags, prefix)}
            mask = np.array([i.decode() in having for i in matrix.ids], dtype=bool)
            matrix.masks[prefix] = mask
        return mask

    def _cosines(self, matrix: Matrix, query: Any) -> Any:
        """The cosine of ``query`` (a unit vector) with every row of ``matrix`` (dead rows included; hold the
        lock: the buffer is shared and the matrix may not change meanwhile)."""
        n = matrix.count
        out = np.empty(n, dtype=np.float32)
        q = np.asarray(query, dtype=np.float32)
        for start in range(0, n, CHUNK_ROWS):
            stop = min(n, start + CHUNK_ROWS)
            block = self._buffer[: stop - start]
            np.copyto(block, matrix.rows[start:stop], casting="unsafe")
            np.matmul(block, q, out=out[start:stop])
        out *= matrix.scales[:n]
        return out

    def nearest(
        self, query: Any, k: int, tag_prefix: str | None = None, cur: Any | None = None
    ) -> list[tuple[str, float, int]]:
        """The ``k`` live blocks most similar to ``query`` (a unit vector), best first: ``(block_id, cosine,
        origin)`` (origin: the position of the block's ``MemoryRemembered``, which holds its text)."""
        self.sync(cur)
        with self._lock:  # one consistent matrix for the product and the selection
            matrix = self._matrix
            if matrix is None or matrix.count == 0:
                return []
            n = matrix.count
            scores = self._cosines(matrix, query)
            keep = matrix.live[:n]
            if tag_prefix is not None:
                keep = keep & self._mask(matrix, tag_prefix)[:n]
            scores = np.where(keep, scores, -np.inf)
            k = min(k, int(keep.sum()))
            if k <= 0:
                return []
            top = np.argpartition(-scores, k - 1)[:k]
            top = top[np.lexsort((matrix.ids[top], -scores[top]))]
            return [(matrix.ids[i].decode(), float(scores[i]), int(matrix.origins[i])) for i in top]

    def vectors_of(self, block_ids: Sequence[str], cur: Any) -> dict[str, Any]:
        """The stored (dequantised) vectors of some blocks, read by primary key."""
        if not block_ids:
            return {}
        marks = ", ".join("?" for _ in block_ids)
        cur.execute(
            self.store.sql(f"SELECT block_id, scale, vec FROM memory_vectors WHERE block_id IN ({marks})"),
            tuple(block_ids),
        )
        return {b: np.frombuffer(bytes(v), dtype=np.int8).astype(np.float32) * float(s) for b, s, v in cur.fetchall()}
