"""oneDNN kernels for a local embedding model's linear layers, checked before use.

PyTorch's CPU build runs fp32 ``nn.Linear`` through MKL's sgemm, which on some AMD EPYC
(AVX-512) hosts this project is measured on is far from the hardware's rate: there the
same layers on oneDNN with prepacked weights embedded 400 2Wiki passages with 0.55x
the CPU time and wall time, rows equal to 2e-7 (float noise); on hosts where MKL runs
well, oneDNN is still ~10% faster. The linear layers are ~80% of the model's time.

The oneDNN ops are the ones PyTorch's own compiler emits for frozen CPU graphs; they
are not public API, so they are used only when present, and only after a probe batch
gives the stock layers' rows. Anything else keeps the stock layers.
"""

from __future__ import annotations

import enum
import platform
from typing import Any

import numpy as np

from hopindex.core.logging import get_logger

log = get_logger(__name__)

# Different lengths, so the probe covers padding and more than one token count.
PROBE_TEXTS = (
    "Paris is the capital of France.",
    "The Eiffel Tower, completed in 1889 for the World's Fair, stands on the Champ de "
    "Mars in Paris and was the tallest man-made structure for forty years.",
    "Who directed the film?",
)
# Unit rows; oneDNN and MKL sum in different orders, which moves rows by ~1e-7.
PROBE_TOLERANCE = 1e-5


class LinearKernels(enum.Enum):
    ONEDNN = "onednn"
    STOCK = "stock"


class _PackedLinear:
    """An ``nn.Linear`` forward on oneDNN, over weights reordered once at load."""

    def __init__(self, layer: Any) -> None:
        import torch

        self._weight = torch.ops.mkldnn._reorder_linear_weight(layer.weight.detach(), None)
        self._bias = None if layer.bias is None else layer.bias.detach()

    def __call__(self, x: Any) -> Any:
        import torch

        return torch.ops.mkldnn._linear_pointwise(x, self._weight, self._bias, "none", [], "")


def _available() -> bool:
    import torch

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False  # measured on x86 only; elsewhere the stock path is the known one
    if not torch.backends.mkldnn.is_available():  # type: ignore[no-untyped-call]  # unannotated in torch
        return False
    ops = torch.ops.mkldnn
    return hasattr(ops, "_reorder_linear_weight") and hasattr(ops, "_linear_pointwise")


def _probe(model: Any) -> Any:
    return model.encode(list(PROBE_TEXTS), batch_size=len(PROBE_TEXTS),
                        normalize_embeddings=True, convert_to_numpy=True,
                        show_progress_bar=False)


def use_onednn_linears(model: Any) -> LinearKernels:
    """Move ``model``'s fp32 linear layers to oneDNN when that gives the same rows.

    Returns the kernels the model runs on afterwards; on ``STOCK`` it is unchanged."""
    import torch

    if not _available():
        return LinearKernels.STOCK
    layers = [m for m in model.modules()
              if isinstance(m, torch.nn.Linear) and m.weight.dtype == torch.float32]
    if not layers:
        return LinearKernels.STOCK
    expected = _probe(model)
    try:
        for layer in layers:
            # An instance attribute: nn.Module.__call__ looks ``forward`` up on the object.
            layer.__dict__["forward"] = _PackedLinear(layer)
        gap = float(np.abs(_probe(model) - expected).max())
    except Exception as exc:  # an op that exists but refuses these shapes, whatever its type
        _restore(layers)
        log.warning("embedder_onednn_refused", error=str(exc))
        return LinearKernels.STOCK
    if not gap <= PROBE_TOLERANCE:  # also catches NaN
        _restore(layers)
        log.warning("embedder_onednn_refused", max_abs_difference=gap)
        return LinearKernels.STOCK
    return LinearKernels.ONEDNN


def _restore(layers: list[Any]) -> None:
    for layer in layers:
        layer.__dict__.pop("forward", None)
