"""The sentence-transformers model run by ONNX Runtime instead of torch: exported once,
on this machine, from the same local weights, optionally int8-quantised.

The export (``onnx_export.py``) needs torch; every later load reads the cached files
with ONNX Runtime and the ``tokenizers`` library alone, so a process that only embeds
never imports torch. Rows match the torch embedder's to float noise (fp32) or to a
cosine of ~0.99 (int8).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hopindex.backends.embedder.loading import loading
from hopindex.backends.embedder.onnx_export import (
    OnnxPrecision,
    export_folder,
    read_manifest,
    require_onnx_extra,
)
from hopindex.backends.embedder.sentence_transformer import (
    _KNOWN_DIMENSIONS,
    BATCH_TEXTS,
    DEFAULT_MODEL,
    WARM_UP_TEXT,
    _model_location,
)
from hopindex.backends.protocols import Vector
from hopindex.core.errors import BackendError, ConfigError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

__all__ = ["OnnxEmbedder", "OnnxPrecision", "precision_from_query"]

_QUANTIZE_VALUES = {"int8": OnnxPrecision.INT8}


def precision_from_query(query: str, url: str) -> OnnxPrecision:
    """The precision an ``onnx://MODEL[?quantize=int8]`` URL's query asks for; any
    other parameter or value is a ``ConfigError`` naming the setting."""
    from urllib.parse import parse_qs

    # Blank values kept: "?quantize=" is a mistake to report, not the default.
    params = parse_qs(query, keep_blank_values=True)
    unknown = sorted(set(params) - {"quantize"})
    if unknown:
        raise ConfigError(f"HOPINDEX_EMBEDDER_URL: unknown parameter {unknown[0]!r} in "
                          f"{url!r} (onnx:// takes only quantize=int8)")
    values = params.get("quantize", [])
    if not values:
        return OnnxPrecision.FP32
    if len(values) > 1 or values[0] not in _QUANTIZE_VALUES:
        raise ConfigError(f"HOPINDEX_EMBEDDER_URL: quantize={','.join(values)!r} in {url!r} "
                          f"is not one of {sorted(_QUANTIZE_VALUES)}")
    return _QUANTIZE_VALUES[values[0]]


@dataclass(frozen=True)
class _Runtime:
    """One exported model opened: the session, its tokenizer and what feeding it needs."""

    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer, truncating, never padding
    inputs: tuple[str, ...]
    pad_id: int
    dimension: int


# One opened model per (folder, threads) in the process, as the torch embedder shares
# its weights: the API, the scheduler and several stores then hold one session.
_RUNTIMES: dict[tuple[str, int], _Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def _open_runtime(folder: Path, threads: int) -> _Runtime:
    key = (str(folder), threads)
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get(key)
        if runtime is not None:
            return runtime
        import onnxruntime
        from tokenizers import Tokenizer

        manifest = read_manifest(folder)
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        # Idle pool threads otherwise spin between operators: with a core's worth of
        # other work (workers, the NLP model) that spinning is CPU taken from it. int8
        # on 300 2Wiki passages, 2 busy cores: 6.3 CPU s spinning, 3.8 s not.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # Its own warnings (unused initialisers and the like) would go to stderr as
        # unstructured lines; errors still raise.
        options.log_severity_level = 3
        try:
            session = onnxruntime.InferenceSession(str(folder / "model.onnx"), options,
                                                   providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # ORT and tokenizers raise their own untyped errors
            raise BackendError(f"cannot open the ONNX model in {folder}: {exc}") from exc
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=manifest.max_seq_length)
        runtime = _Runtime(session=session, tokenizer=tokenizer, inputs=manifest.inputs,
                           pad_id=manifest.pad_id, dimension=manifest.dimension)
        # The first run sets up what later ones reuse (as for the torch model): part
        # of the load, not of the first question.
        warm_up = tokenizer.encode_batch([WARM_UP_TEXT])
        try:
            session.run(None, _feed(runtime, warm_up, len(warm_up[0].ids)))
        except Exception as exc:  # ORT raises its own untyped errors
            raise BackendError(f"the ONNX model in {folder} opened but cannot run: "
                               f"{exc}") from exc
        _RUNTIMES[key] = runtime
        log.info("embedder_loaded", model=manifest.model_name, location=str(folder),
                 precision=manifest.precision.value)
        return runtime


class OnnxEmbedder:
    """``Embedder`` over ONNX Runtime; exported (once) and loaded on first use.

    ``cache_dir`` holds one folder per model and precision (under the data dir:
    ``models/onnx``). ``threads`` sets ONNX Runtime's intra-op threads (0: its default,
    one per core). ``batch_size`` defaults to the torch embedder's for fp32 and to one
    text per run for int8: int8 scales activations by the range of the whole run, so a
    text batched beside others got a row up to 0.02 in cosine from its row alone. One
    text per run also cost less (1,500 2Wiki passages: 18 CPU s against 22 batched 16
    at a time, peak RSS ~200 MB against ~670).
    """

    def __init__(self, model_name: str = DEFAULT_MODEL, *,
                 precision: OnnxPrecision = OnnxPrecision.FP32, cache_dir: Path,
                 batch_size: int | None = None, threads: int = 0) -> None:
        if batch_size is None:
            batch_size = BATCH_TEXTS if precision is OnnxPrecision.FP32 else 1
        if batch_size < 1:
            raise ConfigError(f"embedder batch size must be positive, got {batch_size}")
        if threads < 0:
            raise ConfigError(f"embedder threads must be 0 (ONNX Runtime's default) or "
                              f"more, got {threads}")
        require_onnx_extra()
        self._model_name = model_name
        # Resolved now, exported and loaded later: a wrong path fails at startup.
        self._location = Path(_model_location(model_name))
        self._precision = precision
        self._cache_dir = cache_dir
        self._batch_size = batch_size
        self._threads = threads
        self._runtime: _Runtime | None = None
        self._dimension: int | None = _KNOWN_DIMENSIONS.get(model_name)

    @property
    def model_name(self) -> str:
        # int8 rows are not the torch model's rows; fp32 ones are, to float noise.
        if self._precision is OnnxPrecision.FP32:
            return self._model_name
        return f"{self._model_name}-{self._precision.value}"

    @property
    def precision(self) -> OnnxPrecision:
        return self._precision

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = self._loaded().dimension
        return self._dimension

    def model_folder(self) -> Path:
        """The exported model's folder, exporting it first if no process has yet."""
        folder, _ = export_folder(self._location, self._model_name, self._precision,
                                  self._cache_dir)
        return folder

    @property
    def is_loaded(self) -> bool:
        return self._runtime is not None

    def _loaded(self) -> _Runtime:
        if self._runtime is None:
            # An export made here (the first use of a new cache) is part of the load.
            with loading():
                self._runtime = _open_runtime(self.model_folder(), self._threads)
        return self._runtime

    def embed_texts(self, texts: Sequence[str]) -> Vector:
        """Unit-length float32 rows, one per text, in input order."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        runtime = self._loaded()
        try:
            encodings = runtime.tokenizer.encode_batch(list(texts))
            lengths = np.array([len(encoding.ids) for encoding in encodings])
            # Longest first, as sentence-transformers does, so each batch pads little.
            order = np.argsort(-lengths, kind="stable")
            rows = np.empty((len(texts), runtime.dimension), dtype=np.float32)
            for start in range(0, len(texts), self._batch_size):
                batch = order[start:start + self._batch_size]
                feed = _feed(runtime, [encodings[i] for i in batch], int(lengths[batch[0]]))
                rows[batch] = runtime.session.run(None, feed)[0]
        except Exception as exc:  # a tokenizer or ONNX Runtime failure, whatever its type
            raise BackendError(f"embedding {len(texts)} texts with {self.model_name!r} "
                               f"(ONNX) failed: {exc}") from exc
        # The graph ends in the model's own normalisation, but int8 arithmetic leaves
        # rows a little off unit length; float64 for the division keeps float32 exact.
        norms = np.linalg.norm(rows.astype(np.float64), axis=1, keepdims=True)
        unit: Vector = (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return unit

    def embed_query(self, text: str) -> Vector:
        """One text as a 1-D vector, embedded exactly as ``embed_texts`` would."""
        row: Vector = self.embed_texts([text])[0]
        return row


def _feed(runtime: _Runtime, encodings: Sequence[Any], width: int) -> dict[str, Any]:
    """The graph's inputs for one batch, right-padded to ``width`` tokens."""
    arrays = {
        "input_ids": np.full((len(encodings), width), runtime.pad_id, dtype=np.int64),
        "attention_mask": np.zeros((len(encodings), width), dtype=np.int64),
        "token_type_ids": np.zeros((len(encodings), width), dtype=np.int64),
    }
    for row, encoding in enumerate(encodings):
        size = len(encoding.ids)
        arrays["input_ids"][row, :size] = encoding.ids
        arrays["attention_mask"][row, :size] = encoding.attention_mask
        arrays["token_type_ids"][row, :size] = encoding.type_ids
    return {name: arrays[name] for name in runtime.inputs}
