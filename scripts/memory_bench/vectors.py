"""The embedding index for the memory bench: vectors for the synthetic blocks without embedding each one.

Embedding 100,000 pseudo-word blocks with the real model takes about 40 ms each on this shared 2-core machine
(over an hour), so the bench fills the embedding table through the product's own catch-up with a stand-in model
that returns seeded random unit vectors, and times the real model on a sample of the blocks instead (the
catch-up cost per block it reports). Search latency does not depend on the vectors' values: the probe, the real
model embedding the query, the cosine over every int8 row, the fusion and the texts are all the product's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ledger.service import Ledger
from projections.embedder import DIMENSIONS
from projections.embedding_index import EmbeddingIndex

SAMPLE = 100


@dataclass
class RandomModel:
    """Stands in for the model while filling: seeded random unit vectors, one per text."""

    seed: int = 7
    model_id: str = "random"

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def embed(self, texts: Any) -> Any:
        v = self.rng.standard_normal((len(texts), DIMENSIONS)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def fill_vectors(ledger: Ledger, sample_texts: list[str]) -> tuple[float, float]:
    """Catch the embedding table up with random vectors; returns (seconds it took, the real model's ms per block
    on ``sample_texts``)."""
    semantic = ledger.index.semantic
    assert semantic is not None
    stand_in = EmbeddingIndex(ledger.store, RandomModel())  # type: ignore[arg-type]
    stand_in.ensure_schema()
    t0 = time.perf_counter()
    stand_in.catch_up()
    fill_s = time.perf_counter() - t0
    texts = sample_texts[:SAMPLE]
    semantic.embedder.embed(texts[:4])  # the first run allocates
    t0 = time.perf_counter()
    semantic.embedder.embed(texts)
    per_block_ms = (time.perf_counter() - t0) * 1000 / len(texts)
    return fill_s, per_block_ms
