"""Export a local sentence-transformers model to ONNX (and int8), once, into a cache.

The whole model (transformer, pooling, normalisation) is traced by torch's exporter
into one graph whose output is the sentence embedding, so serving needs no torch.
Each model and precision gets its own folder, named for a fingerprint of the source
files: changed weights export anew instead of reusing stale files. A process exports
into a temporary folder beside it and renames it into place, so several processes
exporting at once cannot leave a half-written folder; the last file written is the
manifest, which a folder is read by.
"""

from __future__ import annotations

import enum
import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hopindex.core.errors import BackendError, ConfigError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

# Bumped when the export changes what lands in a folder, so old folders are not reused.
EXPORT_RECIPE = 1
_MANIFEST = "manifest.json"
_SUPPORTED_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Texts the export checks itself on: the graph must give the torch model's rows.
_CHECK_TEXTS = ("Marie Curie was born in Warsaw.",
                "Photosynthesis converts light into chemical energy in plants, " * 3)
_CHECK_MIN_COSINE = 0.9999
# The packages of hopindex's ``onnx`` extra: the runtime, and for the export the
# ONNX library and the script translator torch's exporter writes the graph with.
_EXTRA_MODULES = ("onnxruntime", "onnx", "onnxscript")

_EXPORT_LOCK = threading.Lock()


class OnnxPrecision(enum.StrEnum):
    FP32 = "fp32"
    INT8 = "int8"  # dynamic quantisation: int8 weights per channel, activations per batch


class ExportOutcome(enum.StrEnum):
    EXPORTED = "exported"
    REUSED = "reused"  # a folder this or another process wrote before


@dataclass(frozen=True)
class Manifest:
    model_name: str
    precision: OnnxPrecision
    inputs: tuple[str, ...]
    max_seq_length: int
    dimension: int
    pad_id: int
    recipe: int = EXPORT_RECIPE


def require_onnx_extra() -> None:
    """A ``ConfigError`` naming the extra to install when a package of it is missing."""
    missing = []
    for name in _EXTRA_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ValueError:  # the module was removed from sys.modules
            found = False
        if not found:
            missing.append(name)
    if missing:
        raise ConfigError(f"HOPINDEX_EMBEDDER_URL: onnx:// needs {', '.join(missing)}: "
                          "install the onnx extra (pip install 'hopindex[onnx]')")


def read_manifest(folder: Path) -> Manifest:
    try:
        raw = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
        return Manifest(model_name=raw["model_name"], precision=OnnxPrecision(raw["precision"]),
                        inputs=tuple(raw["inputs"]), max_seq_length=int(raw["max_seq_length"]),
                        dimension=int(raw["dimension"]), pad_id=int(raw["pad_id"]),
                        recipe=int(raw["recipe"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BackendError(f"the exported ONNX model in {folder} is unreadable ({exc}); "
                           "delete the folder to export it again") from exc


def cached_folder(location: Path, model_name: str, precision: OnnxPrecision,
                  cache_dir: Path) -> Path | None:
    """The folder of a finished export of ``model_name`` (its files in ``location``) at
    ``precision`` in ``cache_dir``; None when there is none. Exports nothing."""
    folder = _folder_of(location, model_name, precision, cache_dir)
    return folder if (folder / _MANIFEST).is_file() else None


def export_folder(location: Path, model_name: str, precision: OnnxPrecision,
                  cache_dir: Path) -> tuple[Path, ExportOutcome]:
    """The folder holding ``model_name`` (its files in ``location``) at ``precision``,
    exported into ``cache_dir`` first unless it is there already."""
    folder = _folder_of(location, model_name, precision, cache_dir)
    if (folder / _MANIFEST).is_file():
        return folder, ExportOutcome.REUSED
    # int8 is quantised from the fp32 export; found (or made) before the lock is taken,
    # which is not re-entrant.
    source = (None if precision is OnnxPrecision.FP32
              else export_folder(location, model_name, OnnxPrecision.FP32, cache_dir)[0])
    with _EXPORT_LOCK:  # threads of one process export once; processes race on rename
        if (folder / _MANIFEST).is_file():
            return folder, ExportOutcome.REUSED
        started = time.perf_counter()
        log.info("onnx_export_started", model=model_name, precision=precision.value,
                 folder=str(folder))
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            scratch = Path(tempfile.mkdtemp(prefix=f".tmp-{folder.name}-", dir=cache_dir))
            scratch.chmod(0o755)  # mkdtemp's 0700 would hide the cache from other accounts
        except OSError as exc:
            raise BackendError(f"cannot write the ONNX model cache {cache_dir}: {exc}") from exc
        try:
            if source is None:
                manifest = _export_fp32(location, model_name, scratch)
            else:
                manifest = _quantize_int8(source, scratch)
            # Written last: a folder with a manifest is complete.
            (scratch / _MANIFEST).write_text(json.dumps(asdict(manifest), indent=2),
                                             encoding="utf-8")
            try:
                scratch.rename(folder)
            except OSError as exc:
                if not (folder / _MANIFEST).is_file():
                    raise BackendError(f"cannot move the ONNX export into {folder}: "
                                       f"{exc}") from exc
                # Another process finished the same export first; its files are equal.
                log.info("onnx_export_raced", model=model_name, precision=precision.value)
                return folder, ExportOutcome.REUSED
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        log.info("onnx_export_finished", model=model_name, precision=precision.value,
                 folder=str(folder), duration_s=round(time.perf_counter() - started, 1))
        return folder, ExportOutcome.EXPORTED


def _folder_of(location: Path, model_name: str, precision: OnnxPrecision,
               cache_dir: Path) -> Path:
    return cache_dir / f"{_slug(model_name)}-{_fingerprint(location)}-{precision.value}"


def _slug(model_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(model_name.rstrip("/")).name) or "model"


def _fingerprint(location: Path) -> str:
    """Names the source files by path, size and modification time: cheap, and any
    reinstall or edit of the weights changes it."""
    digest = hashlib.sha256(f"recipe {EXPORT_RECIPE}\n".encode())
    for path in sorted(p for p in location.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(location)} {stat.st_size} {stat.st_mtime_ns}\n"
                      .encode())
    return digest.hexdigest()[:12]


def _export_fp32(location: Path, model_name: str, scratch: Path) -> Manifest:
    # Set before the import, as for the torch embedder: the export never goes online.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        # Its "Loading weights" bar would land in the output of the command exporting.
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # untyped API
        # Any: its stubs type sizes as optional, and the export checks them at run time.
        model: Any = SentenceTransformer(str(location), device="cpu").eval()
        features = model.preprocess(list(_CHECK_TEXTS))
    except Exception as exc:  # torch and transformers raise many unrelated types
        raise BackendError(f"cannot load {model_name!r} from {location} to export it: "
                           f"{exc}") from exc
    tensors = {name: value for name, value in features.items()
               if isinstance(value, torch.Tensor)}
    inputs = tuple(name for name in _SUPPORTED_INPUTS if name in tensors)
    if set(tensors) - set(inputs) or inputs[:2] != _SUPPORTED_INPUTS[:2]:
        raise ConfigError(f"HOPINDEX_EMBEDDER_URL: {model_name!r} takes inputs "
                          f"{sorted(tensors)}; onnx:// serves text models fed "
                          f"{', '.join(_SUPPORTED_INPUTS)}")
    if getattr(model[0], "do_lower_case", False):
        # Applied by sentence-transformers outside the tokenizer file the runtime reads.
        raise ConfigError(f"HOPINDEX_EMBEDDER_URL: {model_name!r} lower-cases outside its "
                          "tokenizer (do_lower_case), which onnx:// does not reproduce")
    constants = {name: value for name, value in features.items() if name not in tensors}
    graph = _sentence_graph(model, inputs, constants)
    batch, tokens = torch.export.Dim("batch"), torch.export.Dim("tokens")
    try:
        with _quiet("torch.onnx._internal.exporter._registration"), \
                warnings.catch_warnings():
            # It explains how it named the dynamic axes; nothing to act on.
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", FutureWarning)
            torch.onnx.export(graph, tuple(tensors[name] for name in inputs),
                              str(scratch / "model.onnx"), dynamo=True, input_names=inputs,
                              output_names=["sentence_embedding"], external_data=False,
                              dynamic_shapes={name: {0: batch, 1: tokens} for name in inputs},
                              verbose=False)
    except Exception as exc:  # the exporter raises its own and torch's errors
        raise BackendError(f"exporting {model_name!r} to ONNX failed: {exc}") from exc
    tokenizer = model.tokenizer
    tokenizer.backend_tokenizer.save(str(scratch / "tokenizer.json"))
    getter = getattr(model, "get_embedding_dimension", None)
    if getter is None:  # sentence-transformers 5 only has the old name
        getter = model.get_sentence_embedding_dimension
    manifest = Manifest(model_name=model_name, precision=OnnxPrecision.FP32, inputs=inputs,
                        max_seq_length=int(model.max_seq_length),
                        dimension=int(getter()), pad_id=int(tokenizer.pad_token_id or 0))
    expected = model.encode(list(_CHECK_TEXTS), normalize_embeddings=True,
                            convert_to_numpy=True)
    _check_export(scratch, manifest, {name: tensors[name].numpy() for name in inputs},
                  np.asarray(expected, dtype=np.float32))
    return manifest


def _sentence_graph(model: Any, inputs: tuple[str, ...], constants: dict[str, Any]) -> Any:
    """The model's forward from positional tensors to the sentence embedding: the shape
    torch's exporter traces. Defined here because torch is imported only to export."""
    import torch

    class SentenceGraph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
            given = {"input_ids": input_ids, "attention_mask": attention_mask,
                     "token_type_ids": token_type_ids}
            features = {**constants, **{name: given[name] for name in inputs}}
            embedding: torch.Tensor = self.model(features)["sentence_embedding"]
            return embedding

    return SentenceGraph().eval()


def _check_export(folder: Path, manifest: Manifest, feed: dict[str, Any],
                  expected: np.ndarray[Any, Any]) -> None:
    """The exported graph and tokenizer reproduce the torch model on the check texts;
    otherwise the export is refused rather than cached."""
    import onnxruntime
    from tokenizers import Tokenizer

    session = onnxruntime.InferenceSession(str(folder / "model.onnx"),
                                           providers=["CPUExecutionProvider"])
    rows = session.run(None, feed)[0]
    rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    cosines = np.sum(rows * expected, axis=1)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=manifest.max_seq_length)
    ids = [encoding.ids for encoding in tokenizer.encode_batch(list(_CHECK_TEXTS))]
    torch_ids = [[int(i) for i, keep in zip(row, mask, strict=True) if keep]
                 for row, mask in zip(feed["input_ids"], feed["attention_mask"], strict=True)]
    if ids != torch_ids or float(cosines.min()) < _CHECK_MIN_COSINE:
        raise BackendError(f"the ONNX export of {manifest.model_name!r} does not reproduce "
                           f"the torch model (cosine {float(cosines.min()):.5f}, tokens "
                           f"{'equal' if ids == torch_ids else 'differ'})")


def _quantize_int8(source: Path, scratch: Path) -> Manifest:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    try:
        with _quiet("root"):
            # Per channel: one scale per tensor cost MiniLM a mean cosine of 0.95 to
            # its fp32 rows on 2Wiki passages, per channel 0.993.
            quantize_dynamic(source / "model.onnx", scratch / "model.onnx",
                             weight_type=QuantType.QInt8, per_channel=True)
    except Exception as exc:  # ORT's quantiser raises its own and onnx's errors
        raise BackendError(f"int8 quantisation of {source} failed: {exc}") from exc
    shutil.copy2(source / "tokenizer.json", scratch / "tokenizer.json")
    fp32 = read_manifest(source)
    return Manifest(model_name=fp32.model_name, precision=OnnxPrecision.INT8,
                    inputs=fp32.inputs, max_seq_length=fp32.max_seq_length,
                    dimension=fp32.dimension, pad_id=fp32.pad_id)


@contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    """Holds back a library's advice-level warnings for the duration (ORT's quantiser
    suggests pre-processing on the root logger; torch's exporter lists the torchvision
    operators it skips), keeping errors."""
    logger = logging.getLogger() if logger_name == "root" else logging.getLogger(logger_name)

    def below_error(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR

    logger.addFilter(below_error)
    try:
        yield
    finally:
        logger.removeFilter(below_error)
