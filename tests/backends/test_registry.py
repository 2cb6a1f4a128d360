"""The registry turns settings into the LLM pieces a process uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopindex.backends.llm.cache import SqliteResponseCache
from hopindex.backends.llm.cache_redis import RedisResponseCache
from hopindex.backends.llm.client import ChatRequest
from hopindex.backends.llm.usage import UsageMeter
from hopindex.backends.registry import open_embedder, open_llm, open_response_cache
from hopindex.core.errors import ConfigError
from hopindex.core.settings import CacheMode, Settings
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer


def test_no_model_means_no_llm(tmp_path: Path) -> None:
    """Without HOPINDEX_LLM_MODEL a process opens no LLM (the extractive default)."""
    assert open_llm(Settings(data_dir=tmp_path).resolved()) is None


def test_openai_without_a_key_is_refused_before_any_call(tmp_path: Path) -> None:
    """The provider's own URL with no key is a configuration error naming the variable."""
    settings = Settings(data_dir=tmp_path, llm_model="gpt-4o-mini").resolved()
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        open_llm(settings)


def test_cache_follows_the_settings(tmp_path: Path) -> None:
    """SQLite beside the state when embedded, the broker's Redis when the broker is Redis,
    an explicit URL over both, and none when HOPINDEX_LLM_CACHE=off."""
    embedded = Settings(data_dir=tmp_path, llm_model="m").resolved()
    assert isinstance(open_response_cache(embedded), SqliteResponseCache)
    distributed = Settings(data_dir=tmp_path, llm_model="m",
                           broker_url="redis://127.0.0.1:6379/0").resolved()
    assert isinstance(open_response_cache(distributed), RedisResponseCache)
    off = Settings(data_dir=tmp_path, llm_model="m", llm_cache=CacheMode.OFF).resolved()
    assert open_response_cache(off) is None


def test_embedder_url_openai_uses_the_llm_provider(tmp_path: Path) -> None:
    """openai://MODEL embeds through the configured provider's /embeddings endpoint."""
    with LlmTestServer(LlmServerConfig(embedding_dimension=32)) as server:
        settings = Settings(data_dir=tmp_path, llm_base_url=server.base_url,
                            llm_api_key="k").resolved()
        embedder = open_embedder("openai://hopindex-test-embedding", settings)
        assert embedder.embed_texts(["Marie Curie", "Warsaw"]).shape == (2, 32)
    with pytest.raises(ConfigError, match="name the model"):
        open_embedder("openai://", settings)


@pytest.mark.integration
def test_runner_serves_callers_from_any_thread(tmp_path: Path) -> None:
    """The runner's loop thread answers synchronous callers, and closing it twice is safe."""
    import threading

    with LlmTestServer(LlmServerConfig()) as server:
        settings = Settings(data_dir=tmp_path, llm_model=server.config.model,
                            llm_base_url=server.base_url, llm_api_key="k").resolved()
        runner = open_llm(settings)
        assert runner is not None
        request = ChatRequest(stage="answer", max_tokens=20, messages=(
            ("user", "Context: Marie Curie was born in Warsaw.\nQuestion: Where was she born?"),))
        usage = UsageMeter()
        answers: list[str] = []
        threads = [threading.Thread(target=lambda: answers.append(
            runner.complete(request, usage).content)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        runner.close()
        runner.close()
    assert len(answers) == 4 and len(set(answers)) == 1
    total = usage.total()
    assert total.calls + total.cache_hits == 4 and total.calls >= 1
