"""Method tests start LLM test servers the same way wherever they sit."""

# start_server is a fixture: imported so every method test can start LLM test servers.
from tests.methods.indexrag.conftest import start_server  # noqa: F401
