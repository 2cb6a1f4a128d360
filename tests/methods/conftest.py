"""Method tests start LLM test servers, and services pointed at them, the same way
wherever they sit."""

# Fixtures: imported so every method test can start LLM test servers and services.
from collections.abc import Callable, Iterator

import pytest

from hopindex.backends.llm.client import LlmClient, LlmSettings
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimits
from hopindex.backends.llm.runner import LlmRunner
from hopindex.testing.llm_server import LlmTestServer
from tests.methods.indexrag.conftest import (  # noqa: F401
    make_client,
    make_llm_client,
    make_llm_service,
    start_server,
)
from tests.plugin_method.fixtures import server  # noqa: F401  # the embeddings server

# A prompt holding this text gets invalid JSON from the poisoned runner's server.
LLM_POISON = "POISONED-PASSAGE"


@pytest.fixture
def poisoned_runner(start_server: Callable[..., LlmTestServer]  # noqa: F811  # the fixture above
                    ) -> Iterator[tuple[LlmRunner, LlmTestServer]]:
    """An LLM runner on a test server that corrupts every JSON reply to a prompt
    holding ``LLM_POISON``, repairs included."""
    started = start_server(invalid_json_marker=LLM_POISON)
    settings = LlmSettings(base_url=started.base_url, model=started.config.model, api_key="k")
    built = LlmRunner(lambda: LlmClient(settings, InProcessRateLimiter(
        RateLimits(requests_per_minute=6000))), concurrency=4)
    try:
        yield built, started
    finally:
        built.close()
