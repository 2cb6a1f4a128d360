"""The sentence-transformers embedder with the bundled all-MiniLM-L6-v2 weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hopindex.backends.embedder import SentenceTransformerEmbedder
from hopindex.backends.protocols import Embedder
from hopindex.core.errors import ConfigError

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def test_satisfies_protocol(embedder: SentenceTransformerEmbedder) -> None:
    """The adapter is a structural ``Embedder`` named after its model."""
    assert isinstance(embedder, Embedder)
    assert embedder.model_name == "all-MiniLM-L6-v2"


def test_vectors_are_384_dim_unit_float32(embedder: SentenceTransformerEmbedder) -> None:
    """Each text becomes one 384-dimensional float32 row of unit length."""
    vectors = embedder.embed_texts(["Paris is the capital of France.", "A short one.",
                                    "x " * 400])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert embedder.dimension == 384
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_similar_sentences_are_closer(embedder: SentenceTransformerEmbedder) -> None:
    """A paraphrase scores a higher cosine than an unrelated sentence."""
    base, para, other = embedder.embed_texts([
        "The Eiffel Tower is in Paris.",
        "Paris is home to the Eiffel Tower.",
        "Photosynthesis converts light into chemical energy in plants.",
    ])
    assert float(base @ para) > float(base @ other) + 0.3


def test_empty_input_has_the_right_shape(embedder: SentenceTransformerEmbedder) -> None:
    """No texts give a (0, 384) float32 array instead of an error."""
    vectors = embedder.embed_texts([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_query_equals_text_embedding(embedder: SentenceTransformerEmbedder) -> None:
    """A query is embedded exactly as the same text in a batch, whatever its neighbours."""
    question = "Which city hosted the 1900 Summer Olympics?"
    batch = embedder.embed_texts(["An unrelated, much longer sentence about rivers and hills.",
                                  question, "Short."])
    query = embedder.embed_query(question)
    assert query.shape == (384,)
    np.testing.assert_allclose(query, batch[1], atol=1e-5)


def test_order_follows_input(embedder: SentenceTransformerEmbedder) -> None:
    """Rows come back in input order even though encoding sorts texts by length."""
    texts = ["a much longer text than the others, with several clauses in it", "tiny", "mid size"]
    together = embedder.embed_texts(texts)
    one_by_one = np.stack([embedder.embed_query(t) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)


def test_instances_share_one_loaded_model(embedder: SentenceTransformerEmbedder) -> None:
    """A second embedder of the same model reuses the loaded weights."""
    embedder.embed_query("warm")
    second = SentenceTransformerEmbedder(batch_size=8)
    second.embed_query("warm")
    assert second._loaded() is embedder._loaded()


def test_missing_model_path_is_a_config_error(tmp_path: Path) -> None:
    """A model name that is neither bundled nor a folder fails at construction, naming it."""
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match="no-such-model"):
        SentenceTransformerEmbedder(str(missing))
