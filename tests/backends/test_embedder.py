"""The sentence-transformers embedder with the bundled all-MiniLM-L6-v2 weights: the
``Embedder`` contract, and what this model adds to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopindex.backends.embedder import SentenceTransformerEmbedder
from hopindex.core.errors import ConfigError
from hopindex.testing.contracts.embedder import EmbedderContract

pytestmark = pytest.mark.integration


class TestSentenceTransformerEmbedder(EmbedderContract):
    expected_dimension = 384
    expected_model_name = "all-MiniLM-L6-v2"

    @pytest.fixture(scope="class")
    def embedder(self) -> SentenceTransformerEmbedder:
        return SentenceTransformerEmbedder()

    def test_similar_sentences_are_closer(self, embedder: SentenceTransformerEmbedder) -> None:
        """A paraphrase scores a higher cosine than an unrelated sentence."""
        base, para, other = embedder.embed_texts([
            "The Eiffel Tower is in Paris.",
            "Paris is home to the Eiffel Tower.",
            "Photosynthesis converts light into chemical energy in plants.",
        ])
        assert float(base @ para) > float(base @ other) + 0.3

    def test_instances_share_one_loaded_model(self,
                                              embedder: SentenceTransformerEmbedder) -> None:
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


def test_threads_set_torchs_intra_op_threads() -> None:
    """HOPINDEX_EMBEDDER_THREADS reaches torch when the model is used; the embedding
    does not depend on it."""
    import torch

    from hopindex.backends.registry import open_embedder
    from hopindex.core.settings import Settings

    before = torch.get_num_threads()
    default = SentenceTransformerEmbedder().embed_query("Teutberga was a queen of Lotharingia.")
    try:
        one = open_embedder(Settings().embedder_url, Settings(embedder_threads=1))
        vector = one.embed_query("Teutberga was a queen of Lotharingia.")
        assert torch.get_num_threads() == 1
        assert float(vector @ default) == pytest.approx(1.0, abs=1e-5)
    finally:
        torch.set_num_threads(before)


def test_negative_threads_are_refused() -> None:
    from hopindex.core.settings import Settings

    with pytest.raises(ConfigError, match="embedder threads"):
        SentenceTransformerEmbedder(threads=-1)
    with pytest.raises(ConfigError, match="HOPINDEX_EMBEDDER_THREADS"):
        Settings(embedder_threads=-1).validate()
