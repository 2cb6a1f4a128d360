"""Both clients of the SDK side by side: ``Client.local`` over a data dir of this
process, and ``Client.connect`` to a served instance over a data dir of its own, run
in a child process as ``hopindex serve`` runs it.

The server must be another process: the service binds its runtime (what the jobs it
runs eagerly use) once per process, so two services in one process would run each
other's jobs. Embeddings come from the LLM test server for both, so neither process
loads a model, and no LLM model is set, so a new index is ``extractive`` (LLM-free).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from hopindex import Client
from hopindex.core.errors import HopindexError
from hopindex.core.settings import Settings
from hopindex.testing.llm_server import LlmTestServer
from hopindex.testing.workers import stop_session

# The module's LLM test server (a fixture, imported to be used by name).
from tests.api.http.conftest import llm  # noqa: F401
from tests.waiting import wait_until

T = TypeVar("T")

# What the child prints once it listens: ``serve`` with the callback ``hopindex serve``
# gives it, minus the CLI around it (the CLI is not what this suite compares).
SERVING = "congruence server on "
SERVE = ("from hopindex.api.http.server import serve\n"
         "from hopindex.methods.registry import load_settings\n"
         f"serve(load_settings(), '127.0.0.1', 0, lambda url: print({SERVING!r} + url, "
         "flush=True))\n")
START_TIMEOUT_S = 90.0

# Fields whose values differ between two runs of the same scenario: ids made at
# random, clocks, durations, and the process that ran a job.
VOLATILE = frozenset({
    "job_id", "event_id", "webhook_id", "id", "lease",
    "created_at", "updated_at", "started_at", "finished_at", "paused_at", "events_at",
    "latency_s", "embedder_load_s", "load_s", "limiter_wait_s", "elapsed_s", "phases_s",
    "owner", "settled", "running_jobs", "secret",
})


def normal(value: Any) -> Any:
    """``value`` (a result, its ``as_dict()``, or any JSON-like value) without the
    fields of ``VOLATILE``, at any depth: what both clients must answer alike."""
    if hasattr(value, "as_dict"):
        value = value.as_dict()
    if isinstance(value, Mapping):
        return {k: normal(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list | tuple):
        return [normal(v) for v in value]
    return value


def client_settings(data_dir: Path, llm: LlmTestServer) -> Settings:  # noqa: F811
    """The settings of both sides: embeddings from the test server, no LLM model (so
    indexes are extractive), webhooks to loopback allowed (the suite registers some;
    none is ever delivered to, see test_webhooks)."""
    return Settings(data_dir=data_dir, llm_base_url=llm.base_url, llm_api_key="test-key",
                    embedder_url=f"openai://{llm.config.embedding_model}",
                    webhook_allow_private=True).resolved()


def differences(local: Any, remote: Any, path: str = "") -> list[str]:
    """Where two normalised values differ, one line per differing leaf (what a failed
    comparison prints, so the field at fault is named)."""
    if isinstance(local, dict) and isinstance(remote, dict):
        return [line for key in sorted(set(local) | set(remote), key=str)
                for line in differences(local.get(key, "<missing>"),
                                        remote.get(key, "<missing>"), f"{path}.{key}")]
    if isinstance(local, list) and isinstance(remote, list) and len(local) == len(remote):
        return [line for at, (a, b) in enumerate(zip(local, remote, strict=True))
                for line in differences(a, b, f"{path}[{at}]")]
    return [] if local == remote else [f"{path or '.'}: local {local!r} != remote {remote!r}"]


def assert_alike(local: Any, remote: Any) -> None:
    found = differences(normal(local), normal(remote))
    assert not found, "the clients answer differently:\n" + "\n".join(found)


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, llm: LlmTestServer  # noqa: F811
           ) -> Iterator[Served]:
    """A served instance over a data dir of its own, in a child process."""
    root = tmp_path_factory.mktemp("served")
    settings = client_settings(root / "data", llm)
    log_path = root / "serve.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, "-c", SERVE],
                                   env={**os.environ, **settings.to_env()}, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def listening() -> str | None:
            found = re.search(re.escape(SERVING) + r"(http://\S+)",
                              log_path.read_text(errors="replace"))
            if found is None and process.poll() is not None:
                pytest.fail(f"the server exited: {log_path.read_text(errors='replace')}")
            return found.group(1) if found else None

        url = wait_until(listening, what="the served instance to listen",
                         timeout_s=START_TIMEOUT_S)
        assert url is not None  # wait_until returns a truthy value
        yield Served(url, process, log_path)
    finally:
        stop_session(process, 30.0)


@dataclass
class Pair:
    """The local client and the remote one, driven alike."""

    local: Client
    remote: Client

    @property
    def clients(self) -> tuple[Client, Client]:
        return self.local, self.remote

    def both(self, call: Callable[[Client], T]) -> tuple[T, T]:
        """``call`` on each client, local first."""
        return call(self.local), call(self.remote)

    def same(self, call: Callable[[Client], Any]) -> Any:
        """``call`` on each client; asserts the normalised answers are equal and
        returns the local one as it came."""
        local, remote = self.both(call)
        assert_alike(local, remote)
        return local

    def raised(self, call: Callable[[Client], Any]) -> tuple[HopindexError, HopindexError]:
        """The error ``call`` raises on each client (it must raise one of hopindex's)."""
        errors: list[HopindexError] = []
        for client in self.clients:
            with pytest.raises(HopindexError) as caught:
                call(client)
            errors.append(caught.value)
        return errors[0], errors[1]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, llm: LlmTestServer,  # noqa: F811
         served: Served) -> Iterator[Pair]:
    local = Client.local(settings=client_settings(tmp_path_factory.mktemp("local") / "data",
                                                  llm))
    assert not local.is_remote
    remote = Client.connect(served.url)
    assert remote.is_remote
    with local, remote:
        yield Pair(local, remote)
