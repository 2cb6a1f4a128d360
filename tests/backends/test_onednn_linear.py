"""oneDNN linear layers for the local embedding model: used only when a probe gives the
stock layers' rows, and the stock layers are back whenever it does not."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hopindex.backends.embedder import onednn_linear
from hopindex.backends.embedder.onednn_linear import LinearKernels, use_onednn_linears
from hopindex.backends.embedder.sentence_transformer import (
    SentenceTransformerEmbedder,
    _model_location,
)

pytestmark = pytest.mark.integration

TEXTS = [
    "Kiss and Tell is a 1945 American comedy film starring Shirley Temple.",
    "Who was born first, the director of the film or its star?",
    "A short one.",
    " ".join(["The river runs through the valley past the old mill."] * 40),  # > 256 tokens
]


def _fresh_model() -> Any:
    """A model of its own: the embedder's cached one must not be changed by these tests."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(_model_location("all-MiniLM-L6-v2"), device="cpu")


def _rows(model: Any) -> Any:
    return model.encode(TEXTS, batch_size=2, normalize_embeddings=True,
                        convert_to_numpy=True, show_progress_bar=False)


def _linear_forwards(model: Any) -> list[Any]:
    import torch

    return [m.__dict__.get("forward") for m in model.modules()
            if isinstance(m, torch.nn.Linear)]


@pytest.fixture(scope="module")
def stock_rows() -> Any:
    return _rows(_fresh_model())


def test_the_bundled_model_runs_on_onednn_with_the_stock_rows(stock_rows: Any) -> None:
    """On x86 with oneDNN (this machine) the model moves to oneDNN, and its rows, long
    texts and padded batches included, equal the stock layers' to float noise."""
    model = _fresh_model()
    assert use_onednn_linears(model) is LinearKernels.ONEDNN
    assert all(forward is not None for forward in _linear_forwards(model))
    assert np.abs(_rows(model) - stock_rows).max() <= onednn_linear.PROBE_TOLERANCE


def test_the_embedder_rows_equal_the_stock_models(stock_rows: Any) -> None:
    """The embedder (token-count batches over the oneDNN layers) gives the stock rows."""
    rows = SentenceTransformerEmbedder().embed_texts(TEXTS)
    assert np.abs(rows - stock_rows).max() <= onednn_linear.PROBE_TOLERANCE


def test_a_probe_that_differs_keeps_the_stock_layers(monkeypatch: pytest.MonkeyPatch,
                                                      stock_rows: Any) -> None:
    """Kernels whose rows differ from the stock ones are taken out again."""
    packed_call = onednn_linear._PackedLinear.__call__
    monkeypatch.setattr(onednn_linear._PackedLinear, "__call__",
                        lambda self, x: packed_call(self, x) * 1.01)
    model = _fresh_model()
    assert use_onednn_linears(model) is LinearKernels.STOCK
    assert all(forward is None for forward in _linear_forwards(model))
    assert np.abs(_rows(model) - stock_rows).max() == 0.0


def test_kernels_that_raise_keep_the_stock_layers(monkeypatch: pytest.MonkeyPatch,
                                                  stock_rows: Any) -> None:
    """An op that exists but refuses the shapes leaves the model as it was."""
    def refuse(self: Any, x: Any) -> Any:
        raise RuntimeError("mkldnn: unsupported shape")

    monkeypatch.setattr(onednn_linear._PackedLinear, "__call__", refuse)
    model = _fresh_model()
    assert use_onednn_linears(model) is LinearKernels.STOCK
    assert np.abs(_rows(model) - stock_rows).max() == 0.0


def test_without_onednn_the_model_is_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    """A build without oneDNN, or another architecture, keeps the stock layers."""
    import torch

    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    model = _fresh_model()
    assert use_onednn_linears(model) is LinearKernels.STOCK
    assert all(forward is None for forward in _linear_forwards(model))
    monkeypatch.undo()
    monkeypatch.setattr(onednn_linear.platform, "machine", lambda: "aarch64")
    assert use_onednn_linears(model) is LinearKernels.STOCK
