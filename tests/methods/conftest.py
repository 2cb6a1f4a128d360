"""Method tests start LLM test servers, and services pointed at them, the same way
wherever they sit."""

# Fixtures: imported so every method test can start LLM test servers and services.
from tests.methods.indexrag.conftest import make_llm_service, start_server  # noqa: F401
from tests.plugin_method.fixtures import server  # noqa: F401  # the embeddings server
