"""The ``Embedder`` contract: what every embedding backend must do.

Vectors are compared with a tolerance (``atol``): a model may batch texts by length
or pad them, which moves the last float bits, but never more than that.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from hopindex.backends.embedder.loading import timed_loads
from hopindex.backends.protocols import Embedder

# Short and long, ASCII and not: the rows must not depend on the batch around them.
TEXTS = (
    "Marie Curie was born in Warsaw.",
    "Short.",
    "Skłodowska — 居里夫人 won two Nobel Prizes 🧪",
    "Warsaw is the capital and largest city of Poland. " * 40,
    "Photosynthesis converts light into chemical energy in plants.",
)


class EmbedderContract:
    """Subclass with an ``embedder`` fixture; set ``expected_dimension`` and
    ``expected_model_name`` when the adapter's values are known in advance."""

    expected_dimension: ClassVar[int | None] = None
    expected_model_name: ClassVar[str | None] = None
    # How far two embeddings of the same text may differ, element by element.
    atol: ClassVar[float] = 1e-5

    @pytest.fixture
    def embedder(self) -> Embedder:
        raise NotImplementedError("the adapter's test class provides the embedder fixture")

    def test_satisfies_protocol(self, embedder: Embedder) -> None:
        """The adapter is a structural ``Embedder`` with a positive dimension and a model
        name (the expected ones, when the test class gives them)."""
        assert isinstance(embedder, Embedder)
        assert isinstance(embedder.dimension, int)
        assert embedder.dimension > 0
        assert isinstance(embedder.model_name, str)
        assert embedder.model_name
        if self.expected_dimension is not None:
            assert embedder.dimension == self.expected_dimension
        if self.expected_model_name is not None:
            assert embedder.model_name == self.expected_model_name

    def test_rows_are_unit_length_float32(self, embedder: Embedder) -> None:
        """Each text becomes one finite float32 row of ``dimension`` values and unit
        length, so a dot product is the cosine."""
        vectors = embedder.embed_texts(list(TEXTS))
        assert vectors.shape == (len(TEXTS), embedder.dimension)
        assert vectors.dtype == np.float32
        assert np.isfinite(vectors).all()
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=self.atol)

    def test_batch_equals_one_by_one(self, embedder: Embedder) -> None:
        """A batch's rows, in input order, are what each text gets alone."""
        together = embedder.embed_texts(list(TEXTS))
        alone = np.stack([embedder.embed_texts([text])[0] for text in TEXTS])
        np.testing.assert_allclose(together, alone, atol=self.atol)

    def test_empty_batch_has_the_right_shape(self, embedder: Embedder) -> None:
        """No texts give a (0, dimension) float32 array instead of an error."""
        vectors = embedder.embed_texts([])
        assert vectors.shape == (0, embedder.dimension)
        assert vectors.dtype == np.float32

    def test_query_is_the_row_of_the_same_text(self, embedder: Embedder) -> None:
        """``embed_query`` gives one (dimension,) float32 vector of unit length, the row
        the same text gets in a batch."""
        batch = embedder.embed_texts(list(TEXTS))
        for row, text in zip(batch, TEXTS, strict=True):
            query = embedder.embed_query(text)
            assert query.shape == (embedder.dimension,)
            assert query.dtype == np.float32
            np.testing.assert_allclose(query, row, atol=self.atol)

    def test_deterministic(self, embedder: Embedder) -> None:
        """The same texts embedded twice give the same vectors: an index re-built from
        the same documents holds the same points."""
        first = embedder.embed_texts(list(TEXTS))
        again = embedder.embed_texts(list(TEXTS))
        np.testing.assert_allclose(first, again, atol=self.atol)

    def test_different_texts_get_different_vectors(self, embedder: Embedder) -> None:
        """Unrelated texts are not mapped to one point: a constant embedder would pass
        every shape check and retrieve nothing."""
        vectors = embedder.embed_texts([TEXTS[0], TEXTS[4]])
        assert float(vectors[0] @ vectors[1]) < 1.0 - 100 * self.atol

    def test_a_used_embedder_reports_no_further_load(self, embedder: Embedder) -> None:
        """A model loads once: after a first call, no call reports a load on the query's
        clock (``backends/embedder/loading.py``), so no later query's latency loses
        time to one that did not happen."""
        embedder.embed_query(TEXTS[0])
        with timed_loads() as loads:
            embedder.embed_texts(list(TEXTS))
            embedder.embed_query(TEXTS[1])
        assert loads.read() == 0.0
