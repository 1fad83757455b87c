"""The memory embedding index: a derived, rebuildable projection of one vector per live memory block.

Its table (``memory_vectors``) holds each block's vector int8-quantised (384 bytes and a float scale per block),
its tags, whether it is live, and the position of the last event that changed the row; a checkpoint
(``memory_embeddings`` in ``projection_checkpoints``) says how far in the log it is, and ``projection_versions``
the model and encoding it was built with (another model: dropped and rebuilt). ``replay --rebuild`` drops and
rebuilds it like the search index. Vectors are computed in the catch-up, outside the write lock (events are
immutable, so a vector computed before the lock is still right after it); a block just remembered hands its
vector over (:meth:`EmbeddingIndex.offer`) so it is not embedded twice.

Each process keeps the live vectors in one contiguous int8 matrix in memory, loaded lazily on the first search and
kept current by reading only the rows changed since it last looked. A search asks one question of the database
(is there a memory event after the position the matrix reflects? an index range probe, like the search index's),
then cosine is a chunked matrix-vector product over the int8 rows (converted to float32 a few hundred rows at a
time into one reused buffer), so no per-search scan of the table and no float32 copy of the matrix.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ledger.core.events import MemoryCurated, MemoryForgotten, MemoryRemembered, MemorySuperseded
from ledger.core.mapper import decode
from ledger.core.storage import INDEX_LOCK, SqlEventStore, translate_errors
from projections import embedder as _embedder
from projections.embedder import DIMENSIONS, MODEL_ID, Embedder, SemanticUnavailable

log = logging.getLogger(__name__)

CHECKPOINT = "memory_embeddings"
ENCODING = "int8 per-row scale"
BATCH_EVENTS = 1000
"""Events applied per catch-up transaction (a rebuild of 100k blocks is a hundred of them)."""
CHUNK_ROWS = 512
"""Rows converted to float32 at a time for the product: a 768 kB buffer, reused."""
_TYPES = [t.type_name for t in (MemoryRemembered, MemoryCurated, MemorySuperseded, MemoryForgotten)]
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


def quantise(vectors: Any) -> tuple[Any, Any]:
    """float32 rows to int8 rows and per-row scales (``row ≈ int8 × scale``; cosine keeps 3 decimals)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(vectors).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    return np.round(vectors / scales[:, None]).astype(np.int8), scales


class _Matrix:
    """The in-memory vectors of one process: int8 rows, scales, block ids, live flags, tag-prefix masks."""

    def __init__(self) -> None:
        self.rows = np.zeros((0, DIMENSIONS), dtype=np.int8)
        self.scales = np.zeros(0, dtype=np.float32)
        self.ids = np.zeros(0, dtype="S40")
        self.origins = np.zeros(0, dtype=np.int64)  # the position of each block's MemoryRemembered (its text)
        self.live = np.zeros(0, dtype=bool)
        self.tags: list[str] = []  # tags_json per row, only while a tag mask must be built from it
        self.masks: dict[str, Any] = {}
        self.count = 0
        self.position = 0  # every event up to here is reflected

    def add(self, block_id: str, origin: int, tags_json: str, scale: float, vec: bytes) -> None:
        if self.count == len(self.rows):
            grow = max(1024, self.count)
            self.rows = np.concatenate([self.rows, np.zeros((grow, DIMENSIONS), dtype=np.int8)])
            self.scales = np.concatenate([self.scales, np.zeros(grow, dtype=np.float32)])
            self.ids = np.concatenate([self.ids, np.zeros(grow, dtype="S40")])
            self.origins = np.concatenate([self.origins, np.zeros(grow, dtype=np.int64)])
            self.live = np.concatenate([self.live, np.zeros(grow, dtype=bool)])
            for prefix, mask in self.masks.items():
                self.masks[prefix] = np.concatenate([mask, np.zeros(grow, dtype=bool)])
        i = self.count
        self.rows[i] = np.frombuffer(vec, dtype=np.int8)
        self.scales[i] = scale
        self.ids[i] = block_id.encode()
        self.origins[i] = origin
        self.live[i] = True
        for prefix, mask in self.masks.items():
            mask[i] = _has_prefix(tags_json, prefix)
        self.count += 1

    def remove(self, block_ids: list[bytes]) -> None:
        """Mark rows dead (one vectorised pass however many); when fewer than half the rows live, drop the dead
        ones so the product is not paid for them (after a curate that archived most blocks, say)."""
        n = self.count
        self.live[:n] &= ~np.isin(self.ids[:n], np.array(block_ids, dtype="S40"))
        alive = int(self.live[:n].sum())
        if n > 1024 and alive < n // 2:
            keep = np.flatnonzero(self.live[:n])
            self.rows, self.scales, self.ids = self.rows[keep], self.scales[keep], self.ids[keep]
            self.origins, self.live = self.origins[keep], self.live[keep]
            self.masks = {prefix: mask[keep] for prefix, mask in self.masks.items()}
            self.count = alive


def _has_prefix(tags_json: str, prefix: str) -> bool:
    return any(t.startswith(prefix) for t in json.loads(tags_json))


class EmbeddingIndex:
    """Vectors of the live memory blocks, caught up from the log, searched by cosine."""

    def __init__(self, store: SqlEventStore, embedder: Embedder | None = None) -> None:
        self.store = store
        self.dialect = store.dialect
        self._embedder = embedder
        self.version = f"{MODEL_ID} {ENCODING}"
        self._schema_checked = False
        self._matrix: _Matrix | None = None
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
                elif isinstance(event, MemorySuperseded | MemoryForgotten):
                    self._remove(cur, rec.position, [event.block_id])
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

    # --- the in-memory matrix ---------------------------------------------------------------------------------

    def sync(self, cur: Any | None = None) -> _Matrix:
        """The matrix, current with the log: one probe for a memory event after the position it reflects; only
        when there is one, the table catches up and the rows changed since are read."""
        with self._lock:
            matrix = self._matrix
            if matrix is not None and not self._changed_since(matrix.position, cur):
                return matrix
            self.ensure_schema()
            self.catch_up()
            if matrix is None:
                matrix = _Matrix()
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

    def _read_changes(self, matrix: _Matrix) -> None:
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

    def _mask(self, matrix: _Matrix, prefix: str) -> Any:
        mask = matrix.masks.get(prefix)
        if mask is None:
            with self.store.read_cursor() as cur:
                cur.execute("SELECT block_id, tags_json FROM memory_vectors")
                having = {str(b) for b, tags in cur if _has_prefix(tags, prefix)}
            mask = np.array([i.decode() in having for i in matrix.ids], dtype=bool)
            matrix.masks[prefix] = mask
        return mask

    def _cosines(self, matrix: _Matrix, query: Any) -> Any:
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
