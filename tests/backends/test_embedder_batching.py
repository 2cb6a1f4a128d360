"""The sentence-transformers embedder batches texts by token count, tokenising each
once, and gives the vectors sentence-transformers' own ``encode()`` gives."""

from __future__ import annotations

import numpy as np
import pytest

from hopindex.backends.embedder import SentenceTransformerEmbedder
from hopindex.backends.embedder.sentence_transformer import WIDTH_STEP_TOKENS, batch_width

pytestmark = pytest.mark.integration

# Lengths in characters and in tokens disagree: digits, accents and non-Latin
# scripts cost more tokens per character than plain words, and the last two texts
# are longer than the model's 256-token window.
TEXTS = [
    "Short.",
    "Zürich-Genève: 1,234,567 km² (Ø 89.1%) — Łódź, Kraków, Škoda, Ærøskøbing.",
    "The quick brown fox jumps over the lazy dog near the river bank at dawn.",
    "東京都は日本の首都であり、世界最大級の都市圏を形成している。",
    "Marie Curie was a physicist and chemist who conducted pioneering research.",
    "Short.",
    "word " * 400,
    "Ab12-Cd34/Ef56 " * 120,
    "A",
]


def test_vectors_match_encode_in_input_order() -> None:
    """Batches of three cut by token count give, row for row, the unit vectors
    ``encode()`` computes, duplicates and over-long texts included."""
    embedder = SentenceTransformerEmbedder(batch_size=3)
    found = embedder.embed_texts(TEXTS)
    expected = embedder._loaded().encode(TEXTS, batch_size=3, normalize_embeddings=True,
                                         convert_to_numpy=True)
    assert found.shape == (len(TEXTS), 384) and found.dtype == np.float32
    assert np.abs(found - expected).max() < 1e-5
    assert np.allclose(np.linalg.norm(found, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(found[0], found[5])


def test_one_text_alone_as_in_a_batch() -> None:
    """A text embedded alone and among others of other lengths gets the same vector:
    a batch's padding changes nothing."""
    embedder = SentenceTransformerEmbedder(batch_size=4)
    together = embedder.embed_texts(TEXTS)
    for row, text in enumerate(TEXTS):
        assert np.abs(embedder.embed_query(text) - together[row]).max() < 1e-5


def test_batch_widths_come_in_steps() -> None:
    """Each forward pass gets a width that is a multiple of the step or the padded
    width of all the texts, so a long ingest builds few distinct shapes; the rows
    stay those of ``encode()``."""
    embedder = SentenceTransformerEmbedder(batch_size=2)
    model = embedder._loaded()
    widths: list[int] = []
    hook = model[0].register_forward_pre_hook(
        lambda _module, args: widths.append(int(args[0]["input_ids"].shape[1])))
    try:
        texts = [f"{'alpha ' * n}end." for n in (3, 17, 40, 41, 90, 5, 33)]
        found = embedder.embed_texts(texts)
    finally:
        hook.remove()
    mask = model.preprocess(texts)["attention_mask"]
    longest = sorted(mask.sum(dim=1).tolist(), reverse=True)[::2]  # each pair's first
    padded_to = int(mask.shape[1])
    assert len(widths) == len(longest)
    assert all(w % WIDTH_STEP_TOKENS == 0 or w == padded_to for w in widths)
    assert all(n <= w < n + WIDTH_STEP_TOKENS for n, w in zip(longest, widths, strict=True))
    assert widths != longest  # some batch carries masked padding
    expected = model.encode(texts, batch_size=2, normalize_embeddings=True,
                            convert_to_numpy=True)
    assert np.abs(found - expected).max() < 1e-5


@pytest.mark.parametrize(("longest", "padded_to", "width"),
                         [(1, 300, 16), (16, 300, 16), (17, 300, 32), (250, 256, 256),
                          (7, 7, 7)])
def test_batch_width_rounds_up_within_the_padding(longest: int, padded_to: int,
                                                  width: int) -> None:
    """A width is never short of the longest text and never past the padding."""
    assert batch_width(longest, padded_to) == width
