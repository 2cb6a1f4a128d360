"""LLM-mode services: a real test server on loopback and a client of the service
configured for it; ``make_client`` opens clients over the embedded backends without an LLM."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hopindex import Client
from hopindex.api.client.local import LocalClient
from hopindex.api.service import Hopindex
from hopindex.core.settings import Settings
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer

LlmServiceFactory = Callable[..., Hopindex]
LlmClientFactory = Callable[..., LocalClient]
ClientFactory = Callable[..., LocalClient]


def local_client(settings: Settings) -> LocalClient:
    """``Client.local`` over ``settings``: the service in this process, its internals
    at ``client.service`` for the tests that inspect them."""
    client = Client.local(settings=settings, through_server=False)
    assert isinstance(client, LocalClient)
    return client


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


@pytest.fixture
def make_llm_client(tmp_path: Path) -> Iterator[LlmClientFactory]:
    """Clients of services in LLM mode against ``server``, each over data dir ``name``."""
    opened: list[LocalClient] = []

    def factory(server: LlmTestServer, name: str = "data", **overrides: object) -> LocalClient:
        client = local_client(llm_settings(tmp_path / name, server, **overrides))
        opened.append(client)
        return client

    yield factory
    for client in opened:
        client.close()


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[ClientFactory]:
    """Clients over fresh embedded backends, each over data dir ``name``, settings
    overridden by keyword (``make_service`` with the client in front)."""
    opened: list[LocalClient] = []

    def factory(name: str = "data", **overrides: object) -> LocalClient:
        settings = Settings(data_dir=tmp_path / name, **overrides).resolved()  # type: ignore[arg-type]
        client = local_client(settings)
        opened.append(client)
        return client

    yield factory
    for client in opened:
        client.close()
