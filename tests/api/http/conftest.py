"""A real API server on a loopback port over embedded backends, and helpers to call it
and check every answer against the OpenAPI spec the server publishes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis

from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import BackgroundServer
from hopindex.api.service import Hopindex
from hopindex.core.settings import Settings
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.waiting import wait_until

# Roles of the keys every test server knows (HOPINDEX_API_KEYS syntax).
KEYS = {
    "write": "write-key-0123456789abcdef",
    "read": "read-key-0123456789abcdef",
    "scoped": "scoped-key-0123456789abcdef",
}
SCOPED_INDEX = "tenant-a"
KEY_SPEC = f"{KEYS['write']},{KEYS['read']}:read,{KEYS['scoped']}:write:{SCOPED_INDEX}"
JOB_TIMEOUT_S = 120.0


def sample_documents(limit: int = 10, question: int = 0) -> tuple[str, list[dict[str, Any]]]:
    """One HotpotQA-100 question and its ten context paragraphs as API records."""
    questions = json.loads((files("hopindex") / "sample" / "hotpotqa-100" / "questions.json")
                           .read_text())
    item = questions[question]
    docs = [{"id": f"q{question}-{i}", "title": title, "text": "".join(sentences)}
            for i, (title, sentences) in enumerate(item["context"][:limit])]
    return item["question"], docs


@dataclass
class Api:
    url: str
    service: Hopindex
    spec: Any
    server: BackgroundServer

    def call(self, method: str, path: str, *, key: str | None = "write", check: bool = True,
             **kwargs: Any) -> requests.Response:
        """One request with the role's key; the answer is checked against the spec."""
        headers = dict(kwargs.pop("headers", {}))
        if key is not None:
            headers["Authorization"] = f"Bearer {KEYS.get(key, key)}"
        response = requests.request(method, self.url + path, headers=headers, timeout=60,
                                    **kwargs)
        if check:
            self.conforms(response)
        return response

    def conforms(self, response: requests.Response) -> None:
        request = response.request
        path = requests.utils.urlparse(request.url).path
        operation = self.spec.find_operation_by_path(request.method, path)
        assert operation is not None, f"{request.method} {path} is not in the spec"
        operation.validate_response(response)

    def wait_job(self, job_id: str, key: str = "write") -> dict[str, Any]:
        """The job as GET /v1/jobs/{id} shows it once it is no longer queued or running."""

        def finished() -> dict[str, Any] | None:
            job: dict[str, Any] = self.call("GET", f"/v1/jobs/{job_id}", key=key).json()
            return job if job["state"] not in ("queued", "running") else None

        job = wait_until(finished, what=f"job {job_id} to finish", timeout_s=JOB_TIMEOUT_S,
                         interval_s=0.1)
        assert job is not None  # wait_until returns a truthy value
        return job


ApiFactory = Callable[..., Api]


def llm_settings_of(llm: LlmTestServer) -> dict[str, Any]:
    """A server's settings for ``llm``: its chat model and its embeddings."""
    return {"llm_model": llm.config.model, "llm_base_url": llm.base_url,
            "llm_api_key": "test-key", "embedder_url": f"openai://{llm.config.embedding_model}"}


@pytest.fixture(scope="module")
def llm() -> Iterator[LlmTestServer]:
    """The local OpenAI-compatible test server (chat and embeddings), for servers that
    need an LLM."""
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def make_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiFactory]:
    """Start servers over fresh data dirs (models load once per process); all stop at
    the end of the module."""
    opened: list[tuple[Hopindex, BackgroundServer]] = []

    def factory(keys: str | None = KEY_SPEC, **overrides: Any) -> Api:
        data = tmp_path_factory.mktemp("api")
        settings = Settings(data_dir=Path(data), **overrides).resolved()
        service = Hopindex(settings)
        ring = KeyRing(parse_env_keys(keys)) if keys is not None else KeyRing()
        server = BackgroundServer(service, ring).__enter__()
        opened.append((service, server))
        spec = schemathesis.openapi.from_dict(requests.get(server.url + "/v1/openapi.json",
                                                           timeout=10).json())
        return Api(server.url, service, spec, server)

    yield factory
    for service, server in reversed(opened):
        server.__exit__(None, None, None)
        service.close()


@pytest.fixture(scope="module")
def api(make_api: ApiFactory) -> Api:
    return make_api()
