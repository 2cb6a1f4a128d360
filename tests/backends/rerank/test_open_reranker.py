"""The registry opens the reranker the settings name: none without one, a service's
client for HOPINDEX_RERANK_URL, never two sources; ``Backends.reranker`` opens it on
first use and ``Backends.close`` closes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopindex.backends.registry import Backends, open_reranker
from hopindex.backends.rerank.http_reranker import HttpReranker
from hopindex.core.errors import ConfigError
from hopindex.core.settings import CacheMode, RerankApi, Settings
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import running_llm_server
from hopindex.testing.rerank_api import relevance

URL = "http://127.0.0.1:1/v1/rerank"


def test_no_source_means_no_reranker(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path).resolved()
    assert not settings.rerank_enabled
    assert open_reranker(settings) is None
    assert Backends(settings).reranker is None


def test_a_url_opens_the_services_client(tmp_path: Path) -> None:
    """The client takes its URL, wire, model, key and policy from the settings."""
    settings = Settings(data_dir=tmp_path, rerank_url=URL, rerank_api=RerankApi.TEI,
                        rerank_model="bge-reranker-base", rerank_api_key="sk-r",
                        rerank_timeout_s=2.5, rerank_max_attempts=4).resolved()
    reranker = open_reranker(settings)
    try:
        assert isinstance(reranker, HttpReranker)
        assert reranker.model_name == "bge-reranker-base"
        config = reranker.config
        assert (config.url, config.api, config.api_key) == (URL, RerankApi.TEI, "sk-r")
        assert (config.timeout_s, config.max_attempts) == (2.5, 4)
        assert "sk-r" not in repr(config)
    finally:
        assert reranker is not None
        reranker.close()


@pytest.mark.parametrize(("overrides", "message"), [
    ({"rerank_url": URL, "rerank_model": "m", "rerank_model_path": "/models/x"},
     "set either HOPINDEX_RERANK_URL .* or HOPINDEX_RERANK_MODEL_PATH .*, not both"),
    ({"rerank_url": URL}, "HOPINDEX_RERANK_MODEL is required with HOPINDEX_RERANK_URL"),
])
def test_settings_built_by_a_program_are_checked_when_opened(
        tmp_path: Path, overrides: dict[str, str], message: str) -> None:
    """Settings made without ``resolved()`` skip validation: the factory checks the
    reranker's source itself."""
    with pytest.raises(ConfigError, match=message):
        open_reranker(Settings(data_dir=tmp_path, **overrides))  # type: ignore[arg-type]


def test_backends_open_the_reranker_once_and_close_it(tmp_path: Path) -> None:
    """Opened on first use, the same object after, closed with the backends (the next
    call reconnects, as the other server adapters do)."""
    with running_llm_server() as server:
        settings = Settings(data_dir=tmp_path, rerank_url=server.root_url + "/v1/rerank",
                            rerank_model="m", llm_cache=CacheMode.OFF).resolved()
        backends = Backends(settings)
        assert not backends.is_open("reranker")
        reranker = backends.reranker
        assert reranker is not None and backends.reranker is reranker
        assert reranker.rerank_texts("marie curie", ["Marie Curie"]) == [
            relevance("marie curie", "Marie Curie")]
        backends.close()
        assert not backends.is_open("reranker")
        assert server.stats.count(Endpoint.RERANK) == 1
