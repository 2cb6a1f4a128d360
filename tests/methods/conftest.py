"""Method tests' own fixtures: an LLM runner on a poisoning test server, and the
embeddings server (the LLM test servers and the clients pointed at them come from
``tests/conftest.py``)."""

from collections.abc import Callable, Iterator

import pytest

from hopindex.backends.llm.client import LlmClient, LlmSettings
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimits
from hopindex.backends.llm.runner import LlmRunner
from hopindex.testing.llm_server import LlmTestServer
from tests.plugin_method.fixtures import server  # noqa: F401  # the embeddings server

# A prompt holding this text gets invalid JSON from the poisoned runner's server.
LLM_POISON = "POISONED-PASSAGE"


@pytest.fixture
def poisoned_runner(start_server: Callable[..., LlmTestServer]
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
