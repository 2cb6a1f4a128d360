"""The reranker's settings: read with their types from HOPINDEX_RERANK_*, off by
default, checked when read (each error naming its variable), the key never shown."""

from __future__ import annotations

import pytest

from hopindex.core.errors import ConfigError
from hopindex.core.settings import RerankApi, Settings

SERVICE = {"HOPINDEX_RERANK_URL": "https://api.cohere.com/v2/rerank",
           "HOPINDEX_RERANK_MODEL": "rerank-v3.5"}


def test_no_reranker_by_default() -> None:
    settings = Settings.from_env({})
    assert not settings.rerank_enabled
    assert (settings.rerank_url, settings.rerank_model_path) == ("", "")
    assert settings.rerank_api is RerankApi.COHERE
    assert (settings.rerank_top_n, settings.rerank_timeout_s, settings.rerank_max_attempts,
            settings.rerank_requests_per_minute) == (20, 5.0, 3, 0)


def test_the_variables_are_read_with_their_types() -> None:
    settings = Settings.from_env({
        "HOPINDEX_RERANK_URL": "http://tei:8080/rerank", "HOPINDEX_RERANK_API": "TEI",
        "HOPINDEX_RERANK_API_KEY": "sk-rerank-secret", "HOPINDEX_RERANK_TOP_N": "50",
        "HOPINDEX_RERANK_TIMEOUT_S": "1.5", "HOPINDEX_RERANK_MAX_ATTEMPTS": "2",
        "HOPINDEX_RERANK_REQUESTS_PER_MINUTE": "600"})
    assert settings.rerank_enabled
    assert settings.rerank_api is RerankApi.TEI
    assert settings.rerank_model == ""  # TEI serves one model: no name needed
    assert (settings.rerank_top_n, settings.rerank_timeout_s, settings.rerank_max_attempts,
            settings.rerank_requests_per_minute) == (50, 1.5, 2, 600)
    local = Settings.from_env({"HOPINDEX_RERANK_MODEL_PATH": "/models/bge-reranker-base"})
    assert local.rerank_enabled and local.rerank_model_path == "/models/bge-reranker-base"


def test_the_key_is_never_shown_and_survives_a_child_process() -> None:
    settings = Settings.from_env({**SERVICE, "HOPINDEX_RERANK_API_KEY": "sk-rerank-secret"})
    assert "sk-rerank-secret" not in repr(settings)
    assert settings.shown()["HOPINDEX_RERANK_API_KEY"] == "***"
    assert Settings.from_env(settings.to_env()) == settings


@pytest.mark.parametrize(("environ", "message"), [
    ({**SERVICE, "HOPINDEX_RERANK_API": "openai"},
     "HOPINDEX_RERANK_API must be one of cohere, tei, got 'openai'"),
    ({**SERVICE, "HOPINDEX_RERANK_TOP_N": "0"}, "HOPINDEX_RERANK_TOP_N must be 1 or more"),
    ({**SERVICE, "HOPINDEX_RERANK_TOP_N": "many"}, "HOPINDEX_RERANK_TOP_N must be an integer"),
    ({**SERVICE, "HOPINDEX_RERANK_TIMEOUT_S": "0"},
     "HOPINDEX_RERANK_TIMEOUT_S must be a positive number of seconds"),
    ({**SERVICE, "HOPINDEX_RERANK_MAX_ATTEMPTS": "0"},
     "HOPINDEX_RERANK_MAX_ATTEMPTS must be 1 or more"),
    ({**SERVICE, "HOPINDEX_RERANK_REQUESTS_PER_MINUTE": "-5"},
     r"HOPINDEX_RERANK_REQUESTS_PER_MINUTE must be 0 \(unlimited\)"),
    ({"HOPINDEX_RERANK_URL": "api.cohere.com/v2/rerank", "HOPINDEX_RERANK_MODEL": "m"},
     "HOPINDEX_RERANK_URL must be the service's full http"),
    ({"HOPINDEX_RERANK_URL": "https://api.cohere.com/v2/rerank"},
     "HOPINDEX_RERANK_MODEL is required with HOPINDEX_RERANK_URL when HOPINDEX_RERANK_API "
     "is cohere"),
    ({**SERVICE, "HOPINDEX_RERANK_MODEL_PATH": "/models/x"},
     "set either HOPINDEX_RERANK_URL .* or HOPINDEX_RERANK_MODEL_PATH .*, not both"),
    ({"HOPINDEX_RERANK_MODLE": "x"}, "did you mean HOPINDEX_RERANK_MODEL"),
])
def test_bad_values_name_their_variable(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings.from_env(environ)
