"""Scheduler tests that build LLM-mode indexes start test servers like the method tests."""

# start_server is a fixture: imported so these tests start LLM test servers the same way.
from tests.methods.indexrag.conftest import start_server  # noqa: F401
from tests.plugin_method.fixtures import server  # noqa: F401  # the embeddings server
