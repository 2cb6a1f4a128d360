"""The sentence-transformers embedder, answering questions from its cached ONNX export:
a process that only queries then never loads torch.

Importing torch and sentence-transformers and loading the model took ~5 s of an 8 s
cold ``hopindex query`` (BENCHMARKS.md, "Cold CLI query"); ONNX Runtime opens the fp32
export of the same weights in ~0.2 s. The export's rows are the torch
model's to float noise (it is refused below a cosine of 0.9999 on its check texts; the
embedder contract holds both to 1e-5 per element), so a question embedded either way
ranks the stored vectors alike.

Which engine serves a call:

- the torch model once it is loaded in this process (an ingest loaded it): one model in
  memory, and exactly the rows the index was built with;
- else, for a call of at most ``SMALL_CALL_TEXTS`` texts (a question, a query method's
  few sub-queries), the fp32 export cached in the data dir, when there is one and the
  onnx extra is installed;
- else the torch model: bulk embedding (a job's embed step) stays on torch, whose
  batching and memory use are tuned for it.

Nothing here exports on its own: an export takes ~15 s of torch, which no query may
pay. ``prepare_queries`` does it, once per data dir and model (``hopindex
prepare-queries``, and ``hopindex quickstart`` after its ingest); ``onnx://`` URLs use
the same cache. A process looks for the export once, at its first small call: a server
started before the export was made uses it from its next start.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from hopindex.backends.embedder.onnx_embedder import OnnxEmbedder
from hopindex.backends.embedder.onnx_export import (
    OnnxPrecision,
    cached_folder,
    export_folder,
    require_onnx_extra,
)
from hopindex.backends.embedder.sentence_transformer import (
    BATCH_TEXTS,
    SentenceTransformerEmbedder,
)
from hopindex.backends.protocols import Embedder, Vector
from hopindex.core.errors import ConfigError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

# Calls this small go to the export when torch is not loaded: a question, or a query
# method's handful of sub-queries. A job's embed step sends whole batches.
SMALL_CALL_TEXTS = BATCH_TEXTS


@runtime_checkable
class PreparesQueries(Protocol):
    """An embedder whose queries start faster once something is prepared on disk."""

    @property
    def queries_prepared(self) -> bool: ...

    def prepare_queries(self) -> Path: ...


class FastStartEmbedder:
    """``Embedder`` over a ``SentenceTransformerEmbedder``, with small calls served by
    the model's cached fp32 ONNX export while torch is not loaded (module docstring)."""

    def __init__(self, torch_embedder: SentenceTransformerEmbedder, *, cache_dir: Path,
                 threads: int = 0) -> None:
        self._torch = torch_embedder
        self._cache_dir = cache_dir
        self._threads = threads
        self._onnx: OnnxEmbedder | None = None
        self._looked = False
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        # fp32 export rows are this model's rows: the same name, as onnx:// gives it.
        return self._torch.model_name

    @property
    def dimension(self) -> int:
        onnx = self._onnx
        if onnx is not None and onnx.is_loaded and not self._torch.is_loaded:
            return onnx.dimension  # a model folder of unknown size: no torch load for it
        return self._torch.dimension

    @property
    def queries_prepared(self) -> bool:
        """An fp32 export of the model is cached (or the extra to serve it is missing,
        when there is nothing to prepare)."""
        try:
            require_onnx_extra()
        except ConfigError:
            return True
        return self._cached_folder() is not None

    def prepare_queries(self) -> Path:
        """Export the model to ONNX fp32 into the cache unless it is there; its folder.
        Raises ``ConfigError`` naming the extra when it is not installed."""
        require_onnx_extra()
        folder, outcome = export_folder(self._location, self._torch.model_name,
                                        OnnxPrecision.FP32, self._cache_dir)
        log.info("query_embedder_prepared", model=self._torch.model_name,
                 folder=str(folder), outcome=outcome.value)
        with self._lock:
            self._looked = False  # found at the next small call
        return folder

    def embed_texts(self, texts: Sequence[str]) -> Vector:
        return self._engine(len(texts)).embed_texts(texts)

    def embed_query(self, text: str) -> Vector:
        return self._engine(1).embed_query(text)

    def _engine(self, count: int) -> Embedder:
        if count > SMALL_CALL_TEXTS or self._torch.is_loaded:
            return self._torch
        onnx = self._cached_onnx()
        return onnx if onnx is not None else self._torch

    def _cached_onnx(self) -> OnnxEmbedder | None:
        with self._lock:
            if not self._looked:
                self._looked = True
                self._onnx = self._open_export()
            return self._onnx

    def _open_export(self) -> OnnxEmbedder | None:
        try:
            require_onnx_extra()
        except ConfigError:
            return None  # the extra is optional: torch serves, as it always did
        if self._cached_folder() is None:
            return None
        return OnnxEmbedder(self._torch.model_name, precision=OnnxPrecision.FP32,
                            cache_dir=self._cache_dir, threads=self._threads)

    @property
    def _location(self) -> Path:
        return Path(self._torch.location)

    def _cached_folder(self) -> Path | None:
        return cached_folder(self._location, self._torch.model_name, OnnxPrecision.FP32,
                             self._cache_dir)
