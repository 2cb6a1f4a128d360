"""The client fixtures live in ``tests/conftest.py``; their names stay importable from
here for the modules that import them from this file."""

from tests.conftest import (  # noqa: F401
    ClientFactory,
    LlmClientFactory,
    llm_settings,
    local_client,
    make_client,
    make_llm_client,
    start_server,
)
