"""Scheduler tests that build LLM-mode indexes start test servers like the method tests."""

# Fixtures: imported so these tests start LLM test servers, and clients of services
# pointed at them, the same way.
from tests.methods.indexrag.conftest import (  # noqa: F401
    make_client,
    make_llm_client,
    start_server,
)
from tests.plugin_method.fixtures import server  # noqa: F401  # the embeddings server
