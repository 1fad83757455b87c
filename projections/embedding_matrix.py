"""The in-memory side of the embedding index: one process's live vectors as a contiguous int8 matrix (rows, scales,
block ids, origins, live flags, tag-prefix masks), and the int8 quantisation the table and the matrix share."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from projections.embedder import DIMENSIONS


def quantise(vectors: Any) -> tuple[Any, Any]:
    """float32 rows to int8 rows and per-row scales (``row ≈ int8 × scale``; cosine keeps 3 decimals)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(vectors).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    return np.round(vectors / scales[:, None]).astype(np.int8), scales


class Matrix:
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
            mask[i] = has_prefix(tags_json, prefix)
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


def has_prefix(tags_json: str, prefix: str) -> bool:
    return any(t.startswith(prefix) for t in json.loads(tags_json))
