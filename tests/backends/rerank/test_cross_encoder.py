"""``CrossEncoderReranker`` over a tiny BERT cross-encoder built here, in a temporary
folder: nothing is downloaded. Its weights are random, so the scores mean nothing and
ranking quality cannot be measured here; what is checked is the behaviour: it passes
the reranker contract (one finite score per text, in order, the same twice, nothing
run for no texts), loads once and lazily, shares the score cache, and names the
setting and the folder when there is no model to load."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.backends.llm.cache import SqliteResponseCache
from hopindex.backends.protocols import Reranker
from hopindex.backends.registry import open_reranker
from hopindex.backends.rerank.cross_encoder import CrossEncoderReranker
from hopindex.backends.rerank.observer import RerankOutcome
from hopindex.core.errors import ConfigError
from hopindex.core.settings import CacheMode, Settings
from hopindex.testing.contracts.reranker import (
    QUERY,
    TEXTS,
    RecordingRerankObserver,
    RerankerContract,
)

MODEL_FOLDER = "tiny-cross-encoder"
_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_WORDS = ("where was marie curie born in warsaw the capital of poland photosynthesis "
          "converts light into chemical energy plants won two nobel prizes and largest city")


def build_tiny_cross_encoder(folder: Path) -> Path:
    """A one-layer BERT with a one-label head (one ``id2label`` entry) and a word-level
    vocabulary, saved as a transformers model folder (config, weights, tokenizer)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir(parents=True)
    vocab = [*_SPECIAL, *sorted(set(_WORDS.split()))]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizer(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32,
                        max_position_embeddings=512, id2label={0: "relevance"})
    BertForSequenceClassification(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("rerank") / MODEL_FOLDER)


class TestCrossEncoder(RerankerContract):
    expected_model_name = MODEL_FOLDER

    @pytest.fixture
    def reranker(self, model_folder: Path,
                 observer: RecordingRerankObserver) -> Iterator[Reranker]:
        reranker = CrossEncoderReranker(model_folder, observer=observer)
        yield reranker
        reranker.close()


def test_the_model_loads_on_first_use_once_for_every_thread(model_folder: Path) -> None:
    """Opening reads nothing; the first call loads the model, and calls from several
    threads at once all get the scores one call alone gets."""
    observer = RecordingRerankObserver()
    reranker = CrossEncoderReranker(model_folder, observer=observer)
    try:
        assert not reranker.loaded
        alone = reranker.rerank_texts(QUERY, list(TEXTS))
        assert reranker.loaded
        results: list[list[float]] = []
        lock = threading.Lock()

        def score() -> None:
            scores = reranker.rerank_texts(QUERY, list(TEXTS))
            with lock:
                results.append(scores)

        threads = [threading.Thread(target=score) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)  # "it did not hang": a tiny model scores in ms
        assert len(results) == 4
        assert all(scores == pytest.approx(alone, abs=1e-5) for scores in results)
        assert observer.outcomes() == [RerankOutcome.OK] * 5
    finally:
        reranker.close()


def test_scores_are_cached_like_a_services(model_folder: Path, tmp_path: Path) -> None:
    """With the response cache, the same query over the same texts runs the model once."""
    observer = RecordingRerankObserver()
    reranker = CrossEncoderReranker(
        model_folder, observer=observer,
        cache=lambda: SqliteResponseCache(tmp_path / "cache.sqlite3"))
    try:
        first = reranker.rerank_texts(QUERY, list(TEXTS))
        assert reranker.rerank_texts(QUERY, list(TEXTS)) == first
    finally:
        reranker.close()
    assert observer.cache == [False, True]
    assert observer.outcomes() == [RerankOutcome.OK]


def test_a_missing_folder_names_the_setting_and_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match=f"HOPINDEX_RERANK_MODEL_PATH: '{missing}'"):
        CrossEncoderReranker(missing)
    settings = Settings(data_dir=tmp_path, rerank_model_path=str(missing)).resolved()
    with pytest.raises(ConfigError, match="HOPINDEX_RERANK_MODEL_PATH"):
        open_reranker(settings)


def test_a_folder_without_a_model_fails_on_first_use_naming_it(tmp_path: Path) -> None:
    """A folder that holds no model is found when the model loads (first use, or
    ``load()``): a ``ConfigError`` naming the setting and the folder, not a download."""
    empty = tmp_path / "empty-model"
    empty.mkdir()
    (empty / "config.json").write_text("{not json", encoding="utf-8")
    reranker = CrossEncoderReranker(empty)
    try:
        with pytest.raises(ConfigError, match=f"HOPINDEX_RERANK_MODEL_PATH: cannot load a "
                                              f"cross-encoder from {empty}"):
            reranker.rerank_texts(QUERY, list(TEXTS))
        with pytest.raises(ConfigError, match="HOPINDEX_RERANK_MODEL_PATH"):
            reranker.load()
    finally:
        reranker.close()


def test_the_settings_open_the_local_model(model_folder: Path, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, rerank_model_path=str(model_folder),
                        llm_cache=CacheMode.OFF).resolved()
    reranker = open_reranker(settings)
    try:
        assert isinstance(reranker, CrossEncoderReranker)
        assert reranker.model_name == MODEL_FOLDER
        assert len(reranker.rerank_texts(QUERY, list(TEXTS))) == len(TEXTS)
    finally:
        assert reranker is not None
        reranker.close()
