"""LLM-mode services: a real test server on loopback and a service configured for it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hopindex.api.service import Hopindex
from hopindex.core.settings import Settings
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer

LlmServiceFactory = Callable[..., Hopindex]


def llm_settings(data_dir: Path, server: LlmTestServer, **overrides: object) -> Settings:
    """Settings an operator would set for a provider, pointed at the test server; retries
    back off in milliseconds so fault tests stay fast."""
    values: dict[str, object] = {
        "llm_model": server.config.model, "llm_base_url": server.base_url,
        "llm_api_key": "test-key", "llm_backoff_base_s": 0.01, "llm_backoff_max_s": 0.05,
        "llm_timeout_s": 10.0}
    values.update(overrides)
    return Settings(data_dir=data_dir, **values).resolved()  # type: ignore[arg-type]


@pytest.fixture
def start_server() -> Iterator[Callable[..., LlmTestServer]]:
    """Start test servers with the given config; all are stopped at the end."""
    started: list[LlmTestServer] = []

    def start(**config: object) -> LlmTestServer:
        server = LlmTestServer(LlmServerConfig(**config))  # type: ignore[arg-type]
        server.start_in_thread()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def make_llm_service(tmp_path: Path) -> Iterator[LlmServiceFactory]:
    opened: list[Hopindex] = []

    def factory(server: LlmTestServer, name: str = "data", **overrides: object) -> Hopindex:
        service = Hopindex(llm_settings(tmp_path / name, server, **overrides))
        opened.append(service)
        return service

    yield factory
    for service in opened:
        service.close()
