"""Which LLM providers need an API key, and what the SDK is given when none is set.

Local OpenAI-compatible servers (vLLM, llama.cpp, Ollama, the test server) take no
key, but the ``openai`` SDK refuses to build a client without one. OpenAI's own API
always needs one: a process that would call it without a key is stopped when it
starts, naming the variable, rather than at its first call.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from hopindex.core.errors import ConfigError
from hopindex.core.settings import Settings

# Providers that refuse every request without a key.
KEYED_HOSTS = frozenset({"api.openai.com"})
# The bearer token sent when no key is configured: a server that takes no key ignores
# it, and one that wants a key answers 401, which the client reports naming the setting.
NO_KEY = "no-key"
# The worker queues whose tasks call the LLM (stage 1 and 2 of IndexRAG, bridgerag's
# judge); a worker of the other queues never opens it.
LLM_QUEUES = frozenset({"stage1", "stage2", "judge"})


def needs_api_key(base_url: str) -> bool:
    return urlsplit(base_url).hostname in KEYED_HOSTS


def sdk_api_key(api_key: str) -> str:
    """What to hand ``openai.OpenAI(api_key=…)``: the key, or ``NO_KEY`` when it is empty."""
    return api_key or NO_KEY


def check_llm_key(settings: Settings, *, queues: Iterable[str] | None = None) -> None:
    """Raise ``ConfigError`` when ``settings`` name an LLM whose provider needs a key and
    none is set. ``queues``: a worker's queues; only the LLM queues need the check."""
    if not settings.llm_enabled or settings.llm_api_key:
        return
    if queues is not None and not LLM_QUEUES.intersection(queues):
        return
    if needs_api_key(settings.llm_base_url):
        host = urlsplit(settings.llm_base_url).hostname
        raise ConfigError(f"HOPINDEX_LLM_MODEL is set and HOPINDEX_LLM_BASE_URL points at "
                          f"{host}, which needs an API key: set OPENAI_API_KEY (or "
                          "HOPINDEX_LLM_API_KEY)")
